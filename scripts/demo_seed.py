"""Seed moto's server with a small account for scripts/demo: buckets (one with a
lifecycle rule), a Lambda function with a published version, DynamoDB tables and KMS
keys. Usage: demo_seed.py ENDPOINT_URL REGION"""
import io
import json
import sys
import zipfile

import boto3

url, region = sys.argv[1], sys.argv[2]
kw = dict(endpoint_url=url, region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing")

s3 = boto3.client("s3", **kw)
for name in ["demo-logs", "demo-assets", "demo-backups"]:
    s3.create_bucket(Bucket=name)
s3.put_bucket_lifecycle_configuration(
    Bucket="demo-logs",
    LifecycleConfiguration={"Rules": [{"ID": "expire", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}]},
)

iam = boto3.client("iam", **kw)
role = iam.create_role(
    RoleName="demo-lambda",
    AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}),
)["Role"]["Arn"]
code = io.BytesIO()
with zipfile.ZipFile(code, "w") as z:
    z.writestr("index.py", "def handler(event, context):\n    return 'ok'\n")
lam = boto3.client("lambda", **kw)
lam.create_function(FunctionName="demo-report", Runtime="python3.12", Role=role, Handler="index.handler", Code={"ZipFile": code.getvalue()}, Publish=True)

ddb = boto3.client("dynamodb", **kw)
for name in ["demo-orders", "demo-sessions"]:
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

kms = boto3.client("kms", **kw)
for _ in range(2):
    kms.create_key(Description="demo key")
print("seeded 3 buckets, 1 Lambda function, 2 tables, 2 KMS keys")
