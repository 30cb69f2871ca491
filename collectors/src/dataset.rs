//! `Dataset`: what one collector collects (one resource type), the names a user asks
//! for (`--types 'AWS::EC2::*'`, or the first four datasets' aliases `s3-buckets`, ...)
//! and the one place that maps them to collectors.
//!
//! [`Dataset::catalog`] is every dataset tollgate can collect: the native ones (the
//! four first datasets, seventeen EC2 types and eleven types of seed 000's other services,
//! [`Dataset::native`]) and every type the
//! Cloud Control sweep can list that no native collector lists ([`Dataset::CloudControl`],
//! about 1,600: the top-level ones, and the children whose parent type the table names,
//! listed per parent item; [`Dataset::parent`]); [`Dataset::defaults`] the ones a scan
//! without `--types` collects (every native one); [`select`] turns `--types`
//! patterns (type names with `*` globs, or aliases) into datasets. The alias
//! [`CLOUDCONTROL_ALIAS`] selects the default Cloud Control sweep ([`DEFAULT_SWEEP`]),
//! [`NATIVE_ALIAS`] every native type.
//!
//! Why every native type is in the defaults and the Cloud Control sweep is not: a
//! native listing costs one paginated call per page on its service's own key (an empty
//! account costs 17 EC2 calls and 13 others per region, and one Route 53 call), while
//! the sweep's 33 types spend the underlying services' quotas too (`--types cloudcontrol`
//! asks for that).

mod ec2;
mod services;

use std::fmt;
use std::str::FromStr;

use crate::cloudcontrol::schemas::CcType;
use crate::cloudcontrol::schemas::{find, table};

pub use ec2::Ec2Type;
pub use services::ServiceType;

/// A dataset tollgate can collect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Dataset {
    /// S3 buckets with lifecycle and Intelligent-Tiering configuration counts.
    S3Buckets,
    /// Lambda functions with their published version counts.
    LambdaFunctions,
    /// DynamoDB tables with billing mode and item count.
    DynamoDbTables,
    /// KMS keys with metadata and last usage.
    KmsKeys,
    /// One EC2 type, collected natively (`crate::ec2`).
    Ec2(Ec2Type),
    /// One type of seed 000's other services (ECS, ELB, Logs, CloudTrail, Route 53,
    /// EMR), collected natively.
    Service(ServiceType),
    /// One type of the Cloud Control sweep (its row in
    /// [`cloudcontrol::table`](crate::cloudcontrol::table)).
    CloudControl(CcTypeId),
}

/// A Cloud Control type: its index in the checked-in table (sorted by name, so datasets
/// order by type name after the native ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CcTypeId(u16);

impl CcTypeId {
    /// The type's row.
    pub fn info(self) -> &'static CcType {
        &table().types[usize::from(self.0)]
    }
}

/// The `--types` alias of the default Cloud Control sweep.
pub const CLOUDCONTROL_ALIAS: &str = "cloudcontrol";

/// The `--types` alias of every native type (the scan without `--types`), so that
/// `--types native,cloudcontrol` adds the sweep to the default scan.
pub const NATIVE_ALIAS: &str = "native";

/// The default Cloud Control sweep (`--types cloudcontrol`): the types users ask for
/// first that no native collector lists, each listable without a parent (EC2's, ECS's,
/// the load balancers', log groups, trails and hosted zones are native). SageMaker's
/// endpoints and their configurations (seed 000's datasets) are here rather than native:
/// the SDK crate is too large for the build budget, and a `--details` read of each is
/// charged to seed 000's `sagemaker:DescribeEndpoint` / `DescribeEndpointConfig` budgets.
pub const DEFAULT_SWEEP: &[&str] = &[
    "AWS::ApiGateway::RestApi",
    "AWS::ApiGatewayV2::Api",
    "AWS::AppSync::GraphQLApi",
    "AWS::Backup::BackupPlan",
    "AWS::Backup::BackupVault",
    "AWS::CloudFormation::Stack",
    "AWS::CloudFront::Distribution",
    "AWS::CloudWatch::Alarm",
    "AWS::Cognito::UserPool",
    "AWS::ECR::Repository",
    "AWS::EFS::FileSystem",
    "AWS::EKS::Cluster",
    "AWS::ElastiCache::CacheCluster",
    "AWS::ElastiCache::ReplicationGroup",
    "AWS::Events::EventBus",
    "AWS::Events::Rule",
    "AWS::IAM::Group",
    "AWS::IAM::InstanceProfile",
    "AWS::IAM::ManagedPolicy",
    "AWS::IAM::Role",
    "AWS::IAM::User",
    "AWS::Kinesis::Stream",
    "AWS::KinesisFirehose::DeliveryStream",
    "AWS::RDS::DBCluster",
    "AWS::RDS::DBInstance",
    "AWS::Redshift::Cluster",
    "AWS::SNS::Topic",
    "AWS::SageMaker::Endpoint",
    "AWS::SageMaker::EndpointConfig",
    "AWS::SQS::Queue",
    "AWS::SSM::Parameter",
    "AWS::SecretsManager::Secret",
    "AWS::StepFunctions::StateMachine",
];

impl Dataset {
    /// The four first datasets (the seed 000 cost datasets), in report order.
    pub const ALL: [Dataset; 4] = [
        Dataset::S3Buckets,
        Dataset::LambdaFunctions,
        Dataset::DynamoDbTables,
        Dataset::KmsKeys,
    ];

    /// The name used on the command line and in the report: the first four datasets'
    /// alias, every other one's type name (an EC2 type keeps the name it had in the
    /// Cloud Control sweep).
    pub fn name(self) -> &'static str {
        self.alias().unwrap_or_else(|| self.resource_type())
    }

    /// The alias `--types` accepts besides the type name (`s3-buckets`): the first four
    /// datasets only.
    pub fn alias(self) -> Option<&'static str> {
        match self {
            Dataset::S3Buckets => Some("s3-buckets"),
            Dataset::LambdaFunctions => Some("lambda-functions"),
            Dataset::DynamoDbTables => Some("dynamodb-tables"),
            Dataset::KmsKeys => Some("kms-keys"),
            Dataset::Ec2(_) | Dataset::Service(_) | Dataset::CloudControl(_) => None,
        }
    }

    /// Every natively collected dataset, in report order: the four first ones, the EC2
    /// types, then the other services' types.
    pub fn native() -> Vec<Dataset> {
        let mut all = Dataset::ALL.to_vec();
        all.extend(Ec2Type::ALL.map(Dataset::Ec2));
        all.extend(ServiceType::ALL.map(Dataset::Service));
        all
    }

    /// Every dataset tollgate can collect, in report order: the native ones, then every
    /// Cloud Control type the sweep can list (top-level, or with a known parent type)
    /// that no native one collects.
    pub fn catalog() -> Vec<Dataset> {
        let mut all = Dataset::native();
        let native: Vec<&str> = all.iter().map(|d| d.resource_type()).collect();
        all.extend(
            table()
                .types
                .iter()
                .enumerate()
                .filter(|(_, t)| is_listable(t) && !native.contains(&t.type_name.as_str()))
                .filter_map(|(i, _)| u16::try_from(i).ok())
                .map(|i| Dataset::CloudControl(CcTypeId(i))),
        );
        all
    }

    /// The Cloud Control dataset of `type_name`, if the sweep can list it and no native
    /// collector does (one dataset per type).
    pub fn cloudcontrol(type_name: &str) -> Option<Dataset> {
        if Dataset::native()
            .iter()
            .any(|d| d.resource_type() == type_name)
        {
            return None;
        }
        let (i, t) = find(type_name)?;
        let id = u16::try_from(i).ok()?;
        is_listable(t).then_some(Dataset::CloudControl(CcTypeId(id)))
    }

    /// The dataset whose items a child type's listing needs (its parent type's, native
    /// or swept); `None` for a top-level type.
    pub fn parent(self) -> Option<Dataset> {
        match self {
            Dataset::CloudControl(id) => id.info().parent_type.as_ref()?.type_name.parse().ok(),
            _ => None,
        }
    }

    /// The default Cloud Control sweep ([`DEFAULT_SWEEP`]) as datasets.
    pub fn default_sweep() -> Vec<Dataset> {
        DEFAULT_SWEEP
            .iter()
            .filter_map(|t| Dataset::cloudcontrol(t))
            .collect()
    }

    /// What a scan without `--types` collects, in report order.
    pub fn defaults() -> Vec<Dataset> {
        Dataset::native()
    }

    /// The CloudFormation type name of its items (`AWS::S3::Bucket`).
    pub fn resource_type(self) -> &'static str {
        match self {
            Dataset::CloudControl(id) => &id.info().type_name,
            native => native.native_type(),
        }
    }

    /// The type name of a native dataset (a Cloud Control one's is in the table).
    ///
    /// The names live here, not in the collectors: the collectors name their own type
    /// through this (`TYPE`), so the dataset list depends on no collector.
    pub const fn native_type(self) -> &'static str {
        match self {
            Dataset::S3Buckets => "AWS::S3::Bucket",
            Dataset::LambdaFunctions => "AWS::Lambda::Function",
            Dataset::DynamoDbTables => "AWS::DynamoDB::Table",
            Dataset::KmsKeys => "AWS::KMS::Key",
            Dataset::Ec2(t) => t.resource_type(),
            Dataset::Service(t) => t.resource_type(),
            Dataset::CloudControl(_) => "",
        }
    }

    /// Whether its type is global (listed once per account, items in region `global`).
    pub fn is_global(self) -> bool {
        match self {
            Dataset::CloudControl(id) => id.info().global,
            Dataset::Service(t) => t.is_global(),
            _ => false,
        }
    }

    /// Whether the Cloud Control sweep collects it.
    pub fn is_cloudcontrol(self) -> bool {
        matches!(self, Dataset::CloudControl(_))
    }

    /// The collector that produces it (telemetry attribution).
    pub fn collector(self) -> &'static str {
        match self {
            Dataset::S3Buckets => "s3",
            Dataset::LambdaFunctions => "lambda",
            Dataset::DynamoDbTables => "dynamodb",
            Dataset::KmsKeys => "kms",
            Dataset::Ec2(_) => "ec2",
            Dataset::Service(t) => t.collector(),
            Dataset::CloudControl(_) => "cloudcontrol",
        }
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the sweep can list `t`: a top-level type, or a child whose parent type the
/// table names (listed once per parent item, when that type is in the scan).
fn is_listable(t: &CcType) -> bool {
    t.parent.is_empty() || t.parent_type.is_some()
}

/// A `--types` entry that names no dataset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown type {0:?}: give a CloudFormation type name (`AWS::EC2::Instance`), a glob \
     (`AWS::EC2::*`, `AWS::*`) or an alias (s3-buckets, lambda-functions, \
     dynamodb-tables, kms-keys, native, cloudcontrol); `tollgate types` lists them all"
)]
pub struct UnknownDataset(pub String);

impl FromStr for Dataset {
    type Err = UnknownDataset;

    /// One dataset by alias (`s3-buckets`) or exact type name (`AWS::S3::Bucket`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Dataset::native()
            .into_iter()
            .find(|d| d.name() == s || d.resource_type() == s)
            .or_else(|| Dataset::cloudcontrol(s))
            .ok_or_else(|| UnknownDataset(s.to_string()))
    }
}

/// The datasets `patterns` select, deduplicated, in report order: each pattern is an
/// alias (`s3-buckets`), a type name (`AWS::S3::Bucket`) or a glob over type names
/// (`AWS::EC2::*`, `*::Bucket`; `*` matches any run of characters, case-sensitively as
/// CloudFormation spells types). A pattern that selects nothing is an error naming it.
pub fn select<S: AsRef<str>>(patterns: &[S]) -> Result<Vec<Dataset>, UnknownDataset> {
    let catalog = Dataset::catalog();
    let mut selected = Vec::new();
    for pattern in patterns {
        let pattern = pattern.as_ref().trim();
        let before = selected.len();
        if pattern == CLOUDCONTROL_ALIAS {
            selected.extend(Dataset::default_sweep());
        }
        if pattern == NATIVE_ALIAS {
            selected.extend(Dataset::native());
        }
        selected.extend(
            catalog
                .iter()
                .copied()
                .filter(|d| d.name() == pattern || glob_matches(pattern, d.resource_type())),
        );
        if selected.len() == before {
            return Err(UnknownDataset(pattern.to_string()));
        }
    }
    selected.sort_unstable();
    selected.dedup();
    Ok(selected)
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (none
/// included) and everything else matches itself. Written here rather than taken from a
/// glob crate: type names have no path separators, classes or escapes to honour, and
/// this is the whole of the syntax `--types` documents.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dataset::catalog() {
            assert_eq!(d.name().parse::<Dataset>(), Ok(d));
            assert_eq!(d.resource_type().parse::<Dataset>(), Ok(d));
        }
        assert!("ec2-instances".parse::<Dataset>().is_err());
    }

    #[test]
    fn every_default_sweep_type_is_listable_without_a_parent_and_not_native() {
        let sweep = Dataset::default_sweep();
        assert_eq!(
            sweep.len(),
            DEFAULT_SWEEP.len(),
            "a name in DEFAULT_SWEEP is not listable"
        );
        assert!(sweep.iter().all(|d| d.is_cloudcontrol()));
        assert_eq!(
            select(&[CLOUDCONTROL_ALIAS]).unwrap().len(),
            DEFAULT_SWEEP.len()
        );
        let both = select(&[NATIVE_ALIAS, CLOUDCONTROL_ALIAS]).unwrap();
        assert_eq!(both.len(), Dataset::native().len() + DEFAULT_SWEEP.len());
        assert_eq!(both[..Dataset::native().len()], Dataset::defaults()[..]);
        let role: Dataset = "AWS::IAM::Role".parse().unwrap();
        assert!(role.is_global());
        assert_eq!(role.name(), "AWS::IAM::Role");
        let alias: Dataset = "AWS::Lambda::Alias".parse().unwrap();
        assert_eq!(
            alias.parent(),
            Some(Dataset::LambdaFunctions),
            "a child of a native type"
        );
        let nodegroup: Dataset = "AWS::EKS::Nodegroup".parse().unwrap();
        assert_eq!(nodegroup.parent(), "AWS::EKS::Cluster".parse().ok());
        assert!(
            "AWS::WAFv2::WebACL".parse::<Dataset>().is_err(),
            "a listing that needs a value no type holds is not selectable"
        );
        assert_eq!(role.parent(), None);
        assert_eq!(
            "AWS::S3::Bucket".parse::<Dataset>(),
            Ok(Dataset::S3Buckets),
            "a native type stays native"
        );
    }

    #[test]
    fn the_ec2_glob_selects_the_native_ec2_types_then_ec2s_others_through_cloud_control() {
        let ec2 = select(&["AWS::EC2::*"]).unwrap();
        assert_eq!(
            ec2[..Ec2Type::ALL.len()],
            Ec2Type::ALL.map(Dataset::Ec2),
            "native first"
        );
        assert!(
            ec2[Ec2Type::ALL.len()..]
                .iter()
                .all(|d| d.is_cloudcontrol() && d.name().starts_with("AWS::EC2::")),
            "then EC2's other types through Cloud Control"
        );
        assert!(ec2.len() > 40, "{}", ec2.len());
        for t in Ec2Type::ALL {
            let d = Dataset::Ec2(t);
            assert_eq!(d.name(), t.resource_type(), "named by its type");
            assert_eq!(d.alias(), None);
            assert_eq!(t.resource_type().parse::<Dataset>(), Ok(d));
            assert_eq!(Dataset::cloudcontrol(t.resource_type()), None, "{t:?}");
            assert_eq!(d.collector(), "ec2");
        }
        assert!(!DEFAULT_SWEEP.iter().any(|t| t.starts_with("AWS::EC2::")));
        assert_eq!(
            Dataset::defaults(),
            Dataset::native(),
            "a scan without --types collects every native type, EC2's included"
        );
        assert_eq!(
            select(&["AWS::EC2::VPC"]).unwrap(),
            vec![Dataset::Ec2(Ec2Type::Vpc)],
            "no glob: the one type, not VPCEndpoint"
        );
    }

    #[test]
    fn globs_match_type_names_and_aliases_stay_names() {
        assert!(glob_matches("AWS::EC2::*", "AWS::EC2::Instance"));
        assert!(glob_matches("AWS::*", "AWS::S3::Bucket"));
        assert!(glob_matches("*::Bucket", "AWS::S3::Bucket"));
        assert!(glob_matches("AWS::*::Key", "AWS::KMS::Key"));
        assert!(glob_matches("*", "AWS::KMS::Key"));
        assert!(glob_matches("AWS::KMS::Key", "AWS::KMS::Key"));
        assert!(!glob_matches("AWS::KMS::Key", "AWS::KMS::KeyX"));
        assert!(!glob_matches("AWS::EC2::*", "AWS::S3::Bucket"));
        assert!(!glob_matches("AWS::*::Keys", "AWS::KMS::Key"));
        assert!(!glob_matches("a*a", "a"));
        assert_eq!(
            select(&["AWS::*"]).unwrap(),
            Dataset::catalog(),
            "AWS::* is every type"
        );
        assert_eq!(
            select(&["kms-keys", "AWS::KMS::Key", "AWS::S3::Bucket"]).unwrap(),
            vec![Dataset::S3Buckets, Dataset::KmsKeys]
        );
        let s3 = select(&["AWS::S3::*"]).unwrap();
        assert_eq!(s3[0], Dataset::S3Buckets, "the native bucket first");
        assert!(
            s3[1..]
                .iter()
                .all(|d| d.is_cloudcontrol() && d.name().starts_with("AWS::S3::")),
            "then S3's other types, through Cloud Control"
        );
        let e = select(&["AWS::Nope::*"]).unwrap_err();
        assert!(e.to_string().contains("AWS::Nope::*"), "{e}");
    }
}
