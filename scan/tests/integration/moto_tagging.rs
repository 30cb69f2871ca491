//! The tagging sweep against a moto server of this test's own (so `GetResources` lists
//! only what this test created): tagged S3 buckets, DynamoDB tables, KMS keys and
//! Lambda functions, which the native collectors produce, and a tagged SNS topic, which
//! none does (and moto has no Cloud Control to sweep it).
//!
//! The expected tags are moto's own answer to `GetResources`, asked with the plain SDK
//! after the scan, not the tags the test wrote: the sweep must report what the API says.
//! The SNS topic is created with a plain Query request rather than the SNS SDK, whose
//! crate nothing else compiles (build minutes, issue 33 item 8).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use tollgate_collectors::output::{CoverageStatus, TAGS_ONLY, TAGS_ONLY_DATASET};
use tollgate_collectors::tagging::SWEEP_TYPE;
use tollgate_collectors::DatasetStatus;
use tollgate_scan::DiscoveryRequest;
use tollgate_testkit::http::Call;
use tollgate_testkit::moto::{DedicatedMoto, Moto, KMS_ONE_RETRY, MOTO_ACCOUNT};

use crate::moto_discovery::{discover_once, empty_zip, sdk_config, REGION};

type Tags = BTreeMap<String, String>;

/// Create one tagged resource of each kind; returns the SNS topic's ARN.
async fn create_tagged(moto: &Moto) -> String {
    let sdk = sdk_config(moto).await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .build(),
    );
    for (name, tagged) in [("tagged-bucket", true), ("plain-bucket", false)] {
        s3.create_bucket().bucket(name).send().await.unwrap();
        if tagged {
            let tag = aws_sdk_s3::types::Tag::builder()
                .key("team")
                .value("storage")
                .build()
                .unwrap();
            s3.put_bucket_tagging()
                .bucket(name)
                .tagging(
                    aws_sdk_s3::types::Tagging::builder()
                        .tag_set(tag)
                        .build()
                        .unwrap(),
                )
                .send()
                .await
                .unwrap();
        }
    }
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    dynamodb
        .create_table()
        .table_name("tagged-table")
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .tags(
            aws_sdk_dynamodb::types::Tag::builder()
                .key("env")
                .value("prod")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let kms = aws_sdk_kms::Client::new(&sdk);
    kms.create_key()
        .description("tagged key")
        .tags(
            aws_sdk_kms::types::Tag::builder()
                .tag_key("cost-centre")
                .tag_value("42")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let role = moto.create_lambda_role("tagged-fn-role");
    aws_sdk_lambda::Client::new(&sdk)
        .create_function()
        .function_name("tagged-fn")
        .runtime(aws_sdk_lambda::types::Runtime::Python312)
        .role(&role)
        .handler("index.handler")
        .code(
            aws_sdk_lambda::types::FunctionCode::builder()
                .zip_file(aws_smithy_types::Blob::new(empty_zip(0)))
                .build(),
        )
        .tags("owner", "payments")
        .send()
        .await
        .unwrap();
    let answer = moto.call(
        "sns",
        Call::new("POST", "/")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(
                "Action=CreateTopic&Version=2010-03-31&Name=alerts\
                 &Tags.member.1.Key=owner&Tags.member.1.Value=ops\
                 &Tags.member.2.Key=env&Tags.member.2.Value=dev",
            ),
    );
    assert_eq!(answer.status, 200, "CreateTopic: {}", answer.text());
    format!("arn:aws:sns:{REGION}:{MOTO_ACCOUNT}:alerts")
}

/// moto's own answer: every ARN `GetResources` lists in [`REGION`], with its tags.
async fn moto_tags(moto: &Moto) -> BTreeMap<String, Tags> {
    let client = aws_sdk_resourcegroupstagging::Client::new(&sdk_config(moto).await);
    let mut all = BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .get_resources()
            .set_pagination_token(token.take())
            .send()
            .await
            .unwrap();
        for m in page.resource_tag_mapping_list() {
            let tags = m
                .tags()
                .iter()
                .map(|t| (t.key().to_string(), t.value().to_string()))
                .collect();
            all.insert(m.resource_arn().unwrap().to_string(), tags);
        }
        token = page
            .pagination_token()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            return all;
        }
    }
}

#[tokio::test]
async fn tags_match_get_resources_and_the_sns_topic_is_tags_only() {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    let topic = create_tagged(&moto).await;

    let (report, telemetry) = discover_once(
        Some(KMS_ONE_RETRY),
        DiscoveryRequest {
            regions: vec![REGION.into()],
            endpoint_url: Some(moto.url.clone()),
            timeout: Duration::from_secs(120),
            ..Default::default()
        },
    )
    .await;
    let want = moto_tags(&moto).await;
    assert!(want.contains_key(&topic), "moto lists the topic: {want:#?}");

    // Every native item carries exactly what GetResources says of its ARN ({} if nothing).
    let mut native: BTreeSet<String> = BTreeSet::new();
    let mut tagged_natives = 0;
    for (name, dataset) in report
        .datasets
        .iter()
        .filter(|(n, _)| *n != TAGS_ONLY_DATASET)
    {
        for item in &dataset.items {
            let r = item.resource();
            let arn = r
                .arn
                .clone()
                .unwrap_or_else(|| panic!("{name}: no ARN: {r:?}"));
            let expected = want.get(&arn).cloned().unwrap_or_default();
            assert_eq!(r.tags, expected, "{name} {arn}");
            assert!(r.coverage.is_none(), "{arn}");
            tagged_natives += usize::from(!expected.is_empty());
            native.insert(arn);
        }
    }
    assert_eq!(
        tagged_natives, 4,
        "bucket, table, key, function: {report:#?}"
    );

    // Tags-only: exactly the ARNs GetResources lists that no collector produced.
    let only = &report.datasets[TAGS_ONLY_DATASET];
    let got: BTreeSet<&str> = only
        .items
        .iter()
        .map(|i| i.resource().arn.as_deref().unwrap())
        .collect();
    let expected: BTreeSet<&str> = want
        .keys()
        .map(String::as_str)
        .filter(|a| !native.contains(*a))
        .collect();
    assert_eq!(got, expected);
    let sns = only
        .items
        .iter()
        .map(|i| i.resource())
        .find(|r| r.arn.as_deref() == Some(topic.as_str()))
        .unwrap();
    assert_eq!(sns.resource_type, "AWS::SNS::Topic");
    assert_eq!(sns.id, topic, "a topic's primary identifier is its ARN");
    assert_eq!(sns.region.as_deref(), Some(REGION));
    assert_eq!(sns.account.as_deref(), Some(MOTO_ACCOUNT));
    assert_eq!(sns.coverage.as_deref(), Some(TAGS_ONLY));
    assert_eq!(sns.tags, want[&topic]);
    assert_eq!(
        sns.tags,
        Tags::from([("env".into(), "dev".into()), ("owner".into(), "ops".into())])
    );

    // The sweep covered the region; the scan did not fail for it.
    let sweep: Vec<_> = only
        .coverage
        .iter()
        .filter(|c| c.resource_type == SWEEP_TYPE)
        .collect();
    assert_eq!(sweep.len(), 1, "{:#?}", only.coverage);
    assert_eq!(sweep[0].status, CoverageStatus::Complete);
    assert_eq!(sweep[0].count, want.len() as u64);
    assert!(only
        .coverage
        .iter()
        .any(|c| c.resource_type == "AWS::SNS::Topic" && c.status == CoverageStatus::TagsOnly));
    assert_eq!(only.status, DatasetStatus::Complete, "{:#?}", only.reasons);
    assert_ne!(report.overall_status(), DatasetStatus::Failed);
    // One page (moto holds fewer than 100 resources), through the gate on its own key.
    let calls: Vec<_> = telemetry
        .events()
        .into_iter()
        .filter(|e| e.operation == "GetResources" && e.dispatched)
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let key = calls[0].quota.as_deref().unwrap();
    assert!(key.contains("tag:GetResources"), "{key}");
    assert_eq!(calls[0].attribution.scan_id, report.scan_id);
}
