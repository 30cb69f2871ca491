//! An ARN's resource type, id and region, for the items only the tagging sweep saw.
//!
//! `GetResources` answers with ARNs and tags, nothing else, so a tags-only item's
//! `resource_type`, `id` and `region` are read from its ARN. [`KNOWN`] maps the ARNs of
//! common services onto their CloudFormation type and primary identifier (a prefix of the
//! ARN's resource part per type, first match wins, so the more specific prefix comes
//! first: `loadbalancer/app/` before `loadbalancer/`). Where the primary identifier is not
//! in the ARN at all, the closest thing that is stands in and the row says so
//! (`AWS::EC2::EIP`'s public IP, `AWS::EC2::KeyPair`'s name).
//!
//! Any other ARN gets a best-effort name in the same style, `AWS::<Service>::<Kind>`: the
//! service namespace as AWS capitalises it where [`SERVICE_NAMES`] knows it (else its
//! first letter upper-cased), the resource part's first segment in PascalCase
//! (`log-group` → `LogGroup`; `Resource` when the part has no segment), and the id is the
//! rest after that segment (or the whole part). Such a name may not be a CloudFormation
//! type: `tollgate types` says which are.
//!
//! Region: the ARN's own; [`GLOBAL`] for the global services (IAM, CloudFront, Route 53);
//! otherwise (an S3 bucket's ARN has none) the region whose sweep returned it.

use tollgate_quota::Arn;

use crate::resource::GLOBAL;

/// How a type's primary identifier is read from its ARN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdFrom {
    /// The whole ARN (types whose identifier is their ARN: SNS topics, ELBv2).
    Arn,
    /// The resource part after the row's prefix (`function:NAME`).
    Rest,
    /// The last `/`-separated segment of the resource part (IAM names under a path).
    LastSegment,
    /// An SQS queue's URL, `https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`.
    QueueUrl,
    /// An ECS service's `ServiceArn|Cluster` (the cluster by name).
    EcsService,
}

/// One row: the ARN's service, a prefix of its resource part, the type, the id rule.
pub type Row = (&'static str, &'static str, &'static str, IdFrom);

/// The known ARN shapes, first match wins.
#[rustfmt::skip]
pub const KNOWN: &[Row] = &[
    ("sns", "", "AWS::SNS::Topic", IdFrom::Arn),
    ("sqs", "", "AWS::SQS::Queue", IdFrom::QueueUrl),
    ("s3", "", "AWS::S3::Bucket", IdFrom::Rest),
    ("ec2", "instance/", "AWS::EC2::Instance", IdFrom::Rest),
    ("ec2", "volume/", "AWS::EC2::Volume", IdFrom::Rest),
    ("ec2", "snapshot/", "AWS::EC2::Snapshot", IdFrom::Rest),
    ("ec2", "image/", "AWS::EC2::Image", IdFrom::Rest),
    ("ec2", "vpc/", "AWS::EC2::VPC", IdFrom::Rest),
    ("ec2", "subnet/", "AWS::EC2::Subnet", IdFrom::Rest),
    ("ec2", "security-group/", "AWS::EC2::SecurityGroup", IdFrom::Rest),
    ("ec2", "network-interface/", "AWS::EC2::NetworkInterface", IdFrom::Rest),
    // The primary identifier is `PublicIp|AllocationId`; the ARN has the allocation only.
    ("ec2", "elastic-ip/", "AWS::EC2::EIP", IdFrom::Rest),
    ("ec2", "natgateway/", "AWS::EC2::NatGateway", IdFrom::Rest),
    ("ec2", "internet-gateway/", "AWS::EC2::InternetGateway", IdFrom::Rest),
    ("ec2", "route-table/", "AWS::EC2::RouteTable", IdFrom::Rest),
    ("ec2", "vpc-endpoint/", "AWS::EC2::VPCEndpoint", IdFrom::Rest),
    ("ec2", "launch-template/", "AWS::EC2::LaunchTemplate", IdFrom::Rest),
    // The primary identifier is the key's name; the ARN has its `key-...` id.
    ("ec2", "key-pair/", "AWS::EC2::KeyPair", IdFrom::Rest),
    ("ec2", "transit-gateway/", "AWS::EC2::TransitGateway", IdFrom::Rest),
    (
        "ec2",
        "transit-gateway-attachment/",
        "AWS::EC2::TransitGatewayAttachment",
        IdFrom::Rest,
    ),
    ("iam", "role/", "AWS::IAM::Role", IdFrom::LastSegment),
    ("iam", "user/", "AWS::IAM::User", IdFrom::LastSegment),
    ("iam", "group/", "AWS::IAM::Group", IdFrom::LastSegment),
    ("iam", "policy/", "AWS::IAM::ManagedPolicy", IdFrom::Arn),
    ("iam", "instance-profile/", "AWS::IAM::InstanceProfile", IdFrom::LastSegment),
    ("lambda", "function:", "AWS::Lambda::Function", IdFrom::Rest),
    ("dynamodb", "table/", "AWS::DynamoDB::Table", IdFrom::Rest),
    ("kms", "key/", "AWS::KMS::Key", IdFrom::Rest),
    ("kms", "alias/", "AWS::KMS::Alias", IdFrom::Rest),
    ("logs", "log-group:", "AWS::Logs::LogGroup", IdFrom::Rest),
    ("rds", "db:", "AWS::RDS::DBInstance", IdFrom::Rest),
    ("rds", "cluster:", "AWS::RDS::DBCluster", IdFrom::Rest),
    ("rds", "subgrp:", "AWS::RDS::DBSubnetGroup", IdFrom::Rest),
    ("ecs", "cluster/", "AWS::ECS::Cluster", IdFrom::Rest),
    ("ecs", "service/", "AWS::ECS::Service", IdFrom::EcsService),
    ("ecs", "task-definition/", "AWS::ECS::TaskDefinition", IdFrom::Arn),
    ("eks", "cluster/", "AWS::EKS::Cluster", IdFrom::Rest),
    ("elasticloadbalancing", "loadbalancer/app/", "AWS::ElasticLoadBalancingV2::LoadBalancer", IdFrom::Arn),
    ("elasticloadbalancing", "loadbalancer/net/", "AWS::ElasticLoadBalancingV2::LoadBalancer", IdFrom::Arn),
    ("elasticloadbalancing", "loadbalancer/gwy/", "AWS::ElasticLoadBalancingV2::LoadBalancer", IdFrom::Arn),
    ("elasticloadbalancing", "loadbalancer/", "AWS::ElasticLoadBalancing::LoadBalancer", IdFrom::Rest),
    ("elasticloadbalancing", "targetgroup/", "AWS::ElasticLoadBalancingV2::TargetGroup", IdFrom::Arn),
    ("secretsmanager", "secret:", "AWS::SecretsManager::Secret", IdFrom::Arn),
    ("ecr", "repository/", "AWS::ECR::Repository", IdFrom::Rest),
    ("elasticfilesystem", "file-system/", "AWS::EFS::FileSystem", IdFrom::Rest),
    ("elasticfilesystem", "access-point/", "AWS::EFS::AccessPoint", IdFrom::Rest),
    ("kinesis", "stream/", "AWS::Kinesis::Stream", IdFrom::Rest),
    ("states", "stateMachine:", "AWS::StepFunctions::StateMachine", IdFrom::Arn),
    ("events", "rule/", "AWS::Events::Rule", IdFrom::Arn),
    ("cloudfront", "distribution/", "AWS::CloudFront::Distribution", IdFrom::Rest),
    ("route53", "hostedzone/", "AWS::Route53::HostedZone", IdFrom::Rest),
    ("cloudtrail", "trail/", "AWS::CloudTrail::Trail", IdFrom::Rest),
    ("backup", "backup-vault:", "AWS::Backup::BackupVault", IdFrom::Rest),
    ("elasticache", "cluster:", "AWS::ElastiCache::CacheCluster", IdFrom::Rest),
    ("acm", "certificate/", "AWS::CertificateManager::Certificate", IdFrom::Arn),
    ("apigateway", "/restapis/", "AWS::ApiGateway::RestApi", IdFrom::Rest),
];

/// How AWS capitalises service namespaces in CloudFormation type names, for the
/// best-effort names of ARNs [`KNOWN`] does not cover.
#[rustfmt::skip]
pub const SERVICE_NAMES: &[(&str, &str)] = &[
    ("acm", "CertificateManager"), ("apigateway", "ApiGateway"), ("backup", "Backup"),
    ("cloudfront", "CloudFront"), ("cloudtrail", "CloudTrail"), ("cloudwatch", "CloudWatch"),
    ("dynamodb", "DynamoDB"), ("ec2", "EC2"), ("ecr", "ECR"), ("ecs", "ECS"), ("eks", "EKS"),
    ("elasticache", "ElastiCache"), ("elasticfilesystem", "EFS"),
    ("elasticloadbalancing", "ElasticLoadBalancingV2"), ("es", "Elasticsearch"),
    ("events", "Events"), ("firehose", "KinesisFirehose"), ("glue", "Glue"), ("iam", "IAM"),
    ("kinesis", "Kinesis"), ("kms", "KMS"), ("lambda", "Lambda"), ("logs", "Logs"),
    ("rds", "RDS"), ("route53", "Route53"), ("s3", "S3"), ("sagemaker", "SageMaker"),
    ("secretsmanager", "SecretsManager"), ("sns", "SNS"), ("sqs", "SQS"), ("ssm", "SSM"),
    ("states", "StepFunctions"),
];

/// Services whose resources are global: their items' region is [`GLOBAL`].
pub const GLOBAL_SERVICES: &[&str] = &["iam", "cloudfront", "route53"];

/// What an ARN says of a tags-only item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArnType {
    /// CloudFormation type name, or a best-effort one in the same style.
    pub resource_type: String,
    /// Primary identifier (or the closest the ARN holds).
    pub id: String,
    /// The resource's region, [`GLOBAL`] for a global service.
    pub region: String,
    /// The owning account, when the ARN names one.
    pub account: Option<String>,
}

/// Read `arn`, returned by the sweep of `swept_region`; `None` when it is not an ARN.
pub fn arn_type(arn: &str, swept_region: &str) -> Option<ArnType> {
    let parsed: Arn = arn.parse().ok()?;
    let service = parsed.service();
    let resource = parsed.resource();
    let region = if GLOBAL_SERVICES.contains(&service) {
        GLOBAL.to_string()
    } else {
        parsed.region().unwrap_or(swept_region).to_string()
    };
    let account = parsed.account().map(|a| a.as_str().to_string());
    let known = KNOWN
        .iter()
        .find(|(s, prefix, _, _)| *s == service && resource.starts_with(prefix));
    let (resource_type, id) = match known {
        Some((_, prefix, resource_type, rule)) => {
            let rest = &resource[prefix.len()..];
            let id = match rule {
                IdFrom::Arn => arn.to_string(),
                IdFrom::Rest => rest.strip_suffix(":*").unwrap_or(rest).to_string(),
                IdFrom::LastSegment => rest.rsplit('/').next().unwrap_or(rest).to_string(),
                IdFrom::QueueUrl => format!(
                    "https://sqs.{region}.amazonaws.com/{}/{rest}",
                    account.as_deref().unwrap_or_default()
                ),
                IdFrom::EcsService => match rest.split_once('/') {
                    Some((cluster, _)) => format!("{arn}|{cluster}"),
                    None => arn.to_string(),
                },
            };
            (resource_type.to_string(), id)
        }
        None => best_effort(service, resource),
    };
    Some(ArnType {
        resource_type,
        id,
        region,
        account,
    })
}

/// `AWS::<Service>::<Kind>` and the id for an ARN no row covers.
fn best_effort(service: &str, resource: &str) -> (String, String) {
    let service_name = SERVICE_NAMES
        .iter()
        .find(|(s, _)| *s == service)
        .map(|(_, name)| name.to_string())
        .unwrap_or_else(|| pascal(service));
    let (kind, id) = match resource.find(['/', ':']) {
        Some(at) if at > 0 => (pascal(&resource[..at]), &resource[at + 1..]),
        _ => ("Resource".to_string(), resource),
    };
    (format!("AWS::{service_name}::{kind}"), id.to_string())
}

/// `log-group` → `LogGroup`, `stateMachine` → `StateMachine`.
fn pascal(text: &str) -> String {
    text.split(['-', '_', '.'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_arns_map_to_their_cloudformation_type_id_and_region() {
        let a = "123456789012";
        let cases: &[(&str, &str, &str, &str)] = &[
            ("arn:aws:sns:us-east-1:123456789012:alerts", "AWS::SNS::Topic", "arn:aws:sns:us-east-1:123456789012:alerts", "us-east-1"),
            ("arn:aws:sqs:eu-west-1:123456789012:jobs", "AWS::SQS::Queue", "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", "eu-west-1"),
            ("arn:aws:s3:::my-bucket", "AWS::S3::Bucket", "my-bucket", "us-west-2"),
            ("arn:aws:ec2:us-east-1:123456789012:instance/i-0abc", "AWS::EC2::Instance", "i-0abc", "us-east-1"),
            ("arn:aws:ec2:us-east-1:123456789012:volume/vol-1", "AWS::EC2::Volume", "vol-1", "us-east-1"),
            ("arn:aws:ec2:us-east-1:123456789012:security-group/sg-1", "AWS::EC2::SecurityGroup", "sg-1", "us-east-1"),
            ("arn:aws:ec2:us-east-1::image/ami-1", "AWS::EC2::Image", "ami-1", "us-east-1"),
            ("arn:aws:iam::123456789012:role/service/deployer", "AWS::IAM::Role", "deployer", "global"),
            ("arn:aws:iam::123456789012:user/alice", "AWS::IAM::User", "alice", "global"),
            ("arn:aws:iam::123456789012:policy/p", "AWS::IAM::ManagedPolicy", "arn:aws:iam::123456789012:policy/p", "global"),
            ("arn:aws:lambda:us-east-1:123456789012:function:fn", "AWS::Lambda::Function", "fn", "us-east-1"),
            ("arn:aws:dynamodb:us-east-1:123456789012:table/t", "AWS::DynamoDB::Table", "t", "us-east-1"),
            ("arn:aws:kms:us-east-1:123456789012:key/1234-abcd", "AWS::KMS::Key", "1234-abcd", "us-east-1"),
            ("arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/fn:*", "AWS::Logs::LogGroup", "/aws/lambda/fn", "us-east-1"),
            ("arn:aws:logs:us-east-1:123456789012:log-group:app", "AWS::Logs::LogGroup", "app", "us-east-1"),
            ("arn:aws:rds:us-east-1:123456789012:db:orders", "AWS::RDS::DBInstance", "orders", "us-east-1"),
            ("arn:aws:rds:us-east-1:123456789012:cluster:orders", "AWS::RDS::DBCluster", "orders", "us-east-1"),
            ("arn:aws:ecs:us-east-1:123456789012:cluster/prod", "AWS::ECS::Cluster", "prod", "us-east-1"),
            ("arn:aws:ecs:us-east-1:123456789012:service/prod/web", "AWS::ECS::Service", "arn:aws:ecs:us-east-1:123456789012:service/prod/web|prod", "us-east-1"),
            ("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/50dc6c495c0c9188", "AWS::ElasticLoadBalancingV2::LoadBalancer", "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/50dc6c495c0c9188", "us-east-1"),
            ("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/classic", "AWS::ElasticLoadBalancing::LoadBalancer", "classic", "us-east-1"),
            ("arn:aws:cloudfront::123456789012:distribution/E1", "AWS::CloudFront::Distribution", "E1", "global"),
            ("arn:aws:route53:::hostedzone/Z1", "AWS::Route53::HostedZone", "Z1", "global"),
            ("arn:aws:states:us-east-1:123456789012:stateMachine:flow", "AWS::StepFunctions::StateMachine", "arn:aws:states:us-east-1:123456789012:stateMachine:flow", "us-east-1"),
        ];
        for (arn, resource_type, id, region) in cases {
            let t = arn_type(arn, "us-west-2").unwrap_or_else(|| panic!("{arn}"));
            assert_eq!(
                (t.resource_type.as_str(), t.id.as_str(), t.region.as_str()),
                (*resource_type, *id, *region),
                "{arn}"
            );
            let want_account = (!arn.contains("::image") && arn.contains(a)).then(|| a.to_string());
            assert_eq!(t.account, want_account, "{arn}");
        }
    }

    #[test]
    fn an_unknown_arn_gets_a_best_effort_name_in_the_same_style() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "arn:aws:glue:us-east-1:123456789012:crawler/nightly",
                "AWS::Glue::Crawler",
                "nightly",
            ),
            (
                "arn:aws:codebuild:us-east-1:123456789012:project/app",
                "AWS::Codebuild::Project",
                "app",
            ),
            (
                "arn:aws:ssm:us-east-1:123456789012:maintenance-window:mw-1",
                "AWS::SSM::MaintenanceWindow",
                "mw-1",
            ),
            (
                "arn:aws:newthing:us-east-1:123456789012:bare",
                "AWS::Newthing::Resource",
                "bare",
            ),
        ];
        for (arn, resource_type, id) in cases {
            let t = arn_type(arn, "us-east-1").unwrap();
            assert_eq!(
                (t.resource_type.as_str(), t.id.as_str()),
                (*resource_type, *id),
                "{arn}"
            );
        }
        assert_eq!(arn_type("not-an-arn", "us-east-1"), None);
    }

    #[test]
    fn every_known_row_names_a_type_of_its_service_namespace_style() {
        for (service, _, resource_type, _) in KNOWN {
            let parts: Vec<&str> = resource_type.split("::").collect();
            assert_eq!(parts.len(), 3, "{resource_type}");
            assert_eq!(parts[0], "AWS", "{resource_type}");
            assert!(!service.is_empty());
        }
    }
}
