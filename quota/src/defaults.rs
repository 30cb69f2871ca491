//! The one table of default policies, and the fallback for everything else.
//!
//! DESIGN §2 wants a single owner for "how fast may we call X by default": this module.
//! [`DEFAULT_ROWS`] holds every row of seed 000's "Default policies" and "CloudWatch
//! datapoints" tables, expanded to one row per canonical `service:group` (seed rows such
//! as `ec2:<supported read operation>` become one row per EC2 read a collector uses).
//! Any other `service:group` uses [`FALLBACK_RATE`]/[`FALLBACK_BURST`], per account,
//! region, service and operation.
//!
//! Each row says whether its figures were checked against AWS documentation
//! ([`Verified`]): seed 000's rows were (by the seed's account), its S3 configuration
//! reads and fallback were not, nor are the rows tollgate adds with the fallback's
//! figures. Operations our first collectors call that the seed does not list (`s3:ListBuckets`,
//! `s3:GetBucketLocation`, `sts:GetCallerIdentity`) have explicit rows with the fallback
//! figures, so `tollgate policies` lists every budget the collectors can touch and
//! [`is_known`] is true for them. `sts:GetCallerIdentity` is the bootstrap call: its
//! account is unknown until it answers, so the engine runs it on a per-run in-memory
//! budget with this policy rather than on a shared key.
//!
//! Every request policy has concurrency [`DEFAULT_CONCURRENCY`] and retry capacity
//! [`DEFAULT_RETRY_CAPACITY`] ([`Policy::with_rate`]); the table only varies rate and
//! burst. Lookups resolve service aliases, so `elbv2` finds the
//! `elasticloadbalancingv2` row.
//!
//! One more default is not in the seed's tables: the two datapoint budgets allow
//! [`DATAPOINT_ARRIVAL_JITTER_MS`] of arrival jitter ([`default_arrival_jitter_ms`];
//! `crate::arrival_jitter` says why and why 100 ms), so tollgate admits pages into a
//! bucket 10 % smaller than AWS's and a page that reaches CloudWatch a little early still
//! finds the datapoints there. Every other row allows none.

use crate::key::canonical_service;
use crate::policy::Policy;
#[cfg(doc)]
use crate::policy::{DEFAULT_CONCURRENCY, DEFAULT_RETRY_CAPACITY};

/// Refill rate (requests per second) for any operation without a row.
pub const FALLBACK_RATE: f64 = 10.0;
/// Burst for any operation without a row.
pub const FALLBACK_BURST: f64 = 10.0;

/// Group of the CloudWatch datapoint budget for requests whose `StartTime` is at most
/// 3 hours old (inclusive).
pub const RECENT_DATAPOINTS_GROUP: &str = "GetMetricData:recent-datapoints";
/// Group of the CloudWatch datapoint budget for older `StartTime`s.
pub const OLDER_DATAPOINTS_GROUP: &str = "GetMetricData:older-datapoints";

/// The arrival jitter the two datapoint budgets allow by default, in milliseconds.
pub const DATAPOINT_ARRIVAL_JITTER_MS: u32 = 100;

/// The default arrival jitter of a `service:group`: [`DATAPOINT_ARRIVAL_JITTER_MS`] for
/// the two `cloudwatch:GetMetricData:*-datapoints` budgets, 0 for every other key.
pub fn default_arrival_jitter_ms(service: &str, group: &str) -> u32 {
    let datapoints = [RECENT_DATAPOINTS_GROUP, OLDER_DATAPOINTS_GROUP].contains(&group);
    if datapoints && canonical_service(service).is_ok_and(|s| s == "cloudwatch") {
        DATAPOINT_ARRIVAL_JITTER_MS
    } else {
        0
    }
}

/// One default policy: rate and burst for a canonical `service:group`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DefaultRow {
    /// Canonical service name (see [`crate::key::canonical_service`]).
    pub service: &'static str,
    /// Operation or operation group (see [`crate::key::operation_group`]).
    pub group: &'static str,
    /// Sustained refill rate in requests (or datapoints) per second.
    pub rate_per_second: f64,
    /// Token capacity.
    pub burst: f64,
    /// Scope and source of the figures.
    pub note: &'static str,
    /// Whether the figures were checked against AWS documentation.
    pub verified: Verified,
}

/// Whether a default row's figures were checked against AWS documentation: shown by
/// `tollgate policies` (column and JSON field `verified`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verified {
    /// A row of seed 000's table, which says its figures were checked against AWS
    /// documentation on 2026-09-07; the figures are conservative (some are below AWS's,
    /// e.g. Route 53). tollgate has not re-checked them since.
    AwsDocs,
    /// A local budget, not a verified AWS quota: the S3 configuration reads (seed 000
    /// says no AWS quota covers them), the fallback, and the rows given the fallback's
    /// figures.
    No,
}

impl Verified {
    /// The label `tollgate policies` prints.
    pub fn label(self) -> &'static str {
        match self {
            Verified::AwsDocs => "aws-docs",
            Verified::No => "no",
        }
    }
}

const fn row(
    service: &'static str,
    group: &'static str,
    rate_per_second: f64,
    burst: f64,
    note: &'static str,
) -> DefaultRow {
    DefaultRow {
        service,
        group,
        rate_per_second,
        burst,
        note,
        verified: Verified::AwsDocs,
    }
}

/// A row whose figures are a local budget, not a verified AWS quota.
const fn local(
    service: &'static str,
    group: &'static str,
    rate_per_second: f64,
    burst: f64,
    note: &'static str,
) -> DefaultRow {
    DefaultRow {
        verified: Verified::No,
        ..row(service, group, rate_per_second, burst, note)
    }
}

const EC2: &str = "Separate quota per EC2 read API (seed 000; EC2 throttling).";
const EC2_UNFILTERED: &str = "A call of the action with neither a filter nor MaxResults/NextToken also draws on this smaller bucket (EC2 throttling: 50 tokens refilled at 10/s, against 100 at 20/s per read; seed 000: the smaller unfiltered/unpaginated read allowance).";
const KMS: &str = "Other supported KMS reads use 100/s (seed 000; KMS quotas).";
const FALLBACK: &str = "Local fallback figures; not a verified AWS quota.";
const S3: &str = "Local budget per operation, shared across buckets; not a verified AWS quota.";

/// Every default policy. Order is the seed's, for `tollgate policies` output.
#[rustfmt::skip]
pub const DEFAULT_ROWS: &[DefaultRow] = &[
    row("logs", "DescribeLogStreams", 25.0, 1.0, "Account, region, operation (CloudWatch Logs quotas)."),
    row("logs", "DescribeLogGroups", 10.0, 1.0, "Account, region, operation (CloudWatch Logs quotas)."),
    row("route53", "all-requests", 5.0, 5.0, "Global account budget; AWS documents 10/s (Route 53 throttling)."),
    row("ec2", "DescribeAddresses", 10.0, 10.0, EC2),
    row("ec2", "DescribeAvailabilityZones", 10.0, 10.0, EC2),
    row("ec2", "DescribeFlowLogs", 10.0, 10.0, EC2),
    row("ec2", "DescribeImageAttribute", 10.0, 10.0, EC2),
    row("ec2", "DescribeImages", 10.0, 10.0, EC2),
    row("ec2", "DescribeInstanceTypes", 10.0, 10.0, EC2),
    row("ec2", "DescribeInstanceStatus", 10.0, 10.0, EC2),
    row("ec2", "DescribeInstances", 10.0, 10.0, EC2),
    row("ec2", "DescribeInternetGateways", 10.0, 10.0, EC2),
    row("ec2", "DescribeKeyPairs", 10.0, 10.0, EC2),
    row("ec2", "DescribeLaunchTemplateVersions", 10.0, 10.0, EC2),
    row("ec2", "DescribeLaunchTemplates", 10.0, 10.0, EC2),
    row("ec2", "DescribeNatGateways", 10.0, 10.0, EC2),
    row("ec2", "DescribeNetworkInterfaces", 10.0, 10.0, EC2),
    row("ec2", "DescribeRegions", 10.0, 10.0, EC2),
    row("ec2", "DescribeReservedInstances", 10.0, 10.0, EC2),
    row("ec2", "DescribeRouteTables", 10.0, 10.0, EC2),
    row("ec2", "DescribeSecurityGroups", 10.0, 10.0, EC2),
    row("ec2", "DescribeSnapshotAttribute", 10.0, 10.0, EC2),
    row("ec2", "DescribeSnapshots", 10.0, 10.0, EC2),
    row("ec2", "DescribeSpotInstanceRequests", 10.0, 10.0, EC2),
    row("ec2", "DescribeSubnets", 10.0, 10.0, EC2),
    row("ec2", "DescribeTags", 10.0, 10.0, EC2),
    row("ec2", "DescribeTransitGatewayAttachments", 10.0, 10.0, EC2),
    row("ec2", "DescribeTransitGateways", 10.0, 10.0, EC2),
    row("ec2", "DescribeVolumes", 10.0, 10.0, EC2),
    row("ec2", "DescribeVolumesModifications", 10.0, 10.0, EC2),
    row("ec2", "DescribeVpcEndpoints", 10.0, 10.0, EC2),
    row("ec2", "DescribeVpcs", 10.0, 10.0, EC2),
    // The smaller budgets of the seven actions called with neither a filter nor
    // pagination (`crate::unfiltered`): half the read's, AWS's ratio.
    row("ec2", "DescribeInstanceStatus:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeInstances:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeNetworkInterfaces:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeSecurityGroups:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeSnapshots:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeSpotInstanceRequests:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ec2", "DescribeVolumes:unfiltered", 5.0, 5.0, EC2_UNFILTERED),
    row("ecs", "service-read", 20.0, 1.0, "Account/region operation group (ECS throttling)."),
    row("ecs", "cluster-resource-read", 20.0, 1.0, "Account/region operation group (ECS throttling)."),
    row("elasticloadbalancing", "all-requests", 10.0, 1.0, "Account/region budget, classic API (ELB throttling)."),
    row("elasticloadbalancingv2", "all-requests", 10.0, 1.0, "Account/region budget, v2 API (ELB throttling)."),
    row("dynamodb", "control-plane-read", 100.0, 1.0, "Read control-plane budget shared across tables (DynamoDB constraints)."),
    row("kms", "GetKeyLastUsage", 5.0, 1.0, "Account/region operation quota across all keys (KMS quotas)."),
    row("kms", "DescribeKey", 100.0, 1.0, KMS),
    row("kms", "GetKeyPolicy", 100.0, 1.0, KMS),
    row("kms", "GetKeyRotationStatus", 100.0, 1.0, KMS),
    row("kms", "ListAliases", 100.0, 1.0, KMS),
    row("kms", "ListKeys", 100.0, 1.0, KMS),
    row("kms", "ListResourceTags", 100.0, 1.0, KMS),
    row("emr", "DescribeCluster", 1.0, 1.0, "Account/region operation quota (EMR quotas)."),
    row("emr", "ListInstances", 0.5, 1.0, "Account/region operation quota (EMR quotas)."),
    row("cloudtrail", "DescribeTrails", 10.0, 1.0, "Account, region, operation (CloudTrail quotas)."),
    row("cloudwatch", "ListMetrics", 25.0, 1.0, "Account/region request quota (CloudWatch quotas)."),
    row("cloudwatch", "GetMetricData", 500.0, 1.0, "Account/region request quota; also charges a datapoint budget (CloudWatch quotas)."),
    row("cloudwatch", RECENT_DATAPOINTS_GROUP, 180_000.0, 180_000.0, "Datapoints/s when StartTime is at most 3 hours old (CloudWatch quotas)."),
    row("cloudwatch", OLDER_DATAPOINTS_GROUP, 396_000.0, 396_000.0, "Datapoints/s when StartTime is older than 3 hours (CloudWatch quotas)."),
    row("lambda", "control-plane", 15.0, 1.0, "Shared by the function/version listing operations (Lambda quotas)."),
    row("resource-explorer-2", "non-search", 3.0, 1.0, "Account/region budget for non-search operations (Resource Explorer quotas)."),
    local("resource-explorer-2", "Search", FALLBACK_RATE, FALLBACK_BURST, "Account/region; seed 000 gives Search no figure, so the fallback's as a local budget, not a verified AWS quota."),
    local("resource-explorer-2", "setup", 3.0, 1.0, "tollgate's own: holds `catalog init`'s concurrency and retry allowance, charged beside resource-explorer-2:non-search (whose rate binds), so set-up retries never spend catalog collection's; a local budget, not a verified AWS quota."),
    row("sagemaker", "DescribeEndpoint", 5.0, 1.0, "Account/region operation quota (SageMaker quotas)."),
    row("sagemaker", "DescribeEndpointConfig", 5.0, 1.0, "Account/region operation quota (SageMaker quotas)."),
    local("s3", "GetBucketLifecycleConfiguration", 10.0, 10.0, S3),
    local("s3", "ListBucketIntelligentTieringConfigurations", 10.0, 10.0, S3),
    local("s3", "ListBuckets", FALLBACK_RATE, FALLBACK_BURST, FALLBACK),
    local("s3", "GetBucketLocation", FALLBACK_RATE, FALLBACK_BURST, FALLBACK),
    local("sts", "GetCallerIdentity", FALLBACK_RATE, FALLBACK_BURST, "Bootstrap call on a per-run in-memory budget; local fallback figures, not a verified AWS quota."),
    // Organization scans: the hub's calls, charged to the caller's account.
    row("sts", "AssumeRole", 600.0, 1.0, "600/s per account and region, shared with GetCallerIdentity; for a cross-account AssumeRole only the calling account's quota counts (IAM and AWS STS quotas)."),
    local("organizations", "ListAccounts", 5.0, 5.0, ORGANIZATIONS),
    local("organizations", "DescribeOrganization", 5.0, 5.0, ORGANIZATIONS),
    row("account", "ListRegions", 5.0, 5.0, "5/s, burst 5, per account (Quotas for AWS Account Management)."),
    // The tagging sweep (collectors/src/tagging).
    row("tag", "GetResources", 15.0, 1.0, "15 calls/s per account and region, not adjustable (Tag Editor user guide, Service quotas: rate of calling GetResources)."),
    // The Cloud Control sweep (collectors/src/cloudcontrol); each call also charges its
    // type's underlying operations, on their own rows.
    local("cloudcontrol", "ListResources", FALLBACK_RATE, FALLBACK_BURST, CLOUDCONTROL),
    local("cloudcontrol", "GetResource", FALLBACK_RATE, FALLBACK_BURST, CLOUDCONTROL),
    // The EMR collector's listing (collectors/src/services/emr.rs): seed 000 gives
    // DescribeCluster and ListInstances figures, not ListClusters'.
    local("emr", "ListClusters", FALLBACK_RATE, FALLBACK_BURST, FALLBACK),
];

/// Cloud Control publishes no request rate.
const CLOUDCONTROL: &str = "Per account and region; AWS publishes no Cloud Control rate (aws-nuke #508 met `Rate exceeded` near 30 requests/s), so the fallback's 10/s as a local budget, not a verified AWS quota; the underlying operations are charged on their own keys.";

/// Organizations publishes no request rate.
const ORGANIZATIONS: &str = "Global per account; AWS publishes no rate for Organizations, so a local budget (seed 001's 5/s), not a verified AWS quota.";

/// The row for a `service:group`, resolving service aliases.
pub fn lookup(service: &str, group: &str) -> Option<&'static DefaultRow> {
    let service = canonical_service(service).ok()?;
    DEFAULT_ROWS
        .iter()
        .find(|r| r.service == service && r.group == group)
}

/// Whether the default figures of a `service:group` were checked against AWS
/// documentation (the fallback's were not).
pub fn verified(service: &str, group: &str) -> Verified {
    lookup(service, group).map_or(Verified::No, |r| r.verified)
}

/// Whether a `service:group` has its own row (as opposed to the fallback).
pub fn is_known(service: &str, group: &str) -> bool {
    lookup(service, group).is_some()
}

/// The default policy of a `service:group`: its row, or the fallback.
pub fn default_policy(service: &str, group: &str) -> Policy {
    match lookup(service, group) {
        Some(r) => row_policy(r),
        None => fallback_policy(),
    }
}

/// The policy of any operation without a row: [`FALLBACK_RATE`] and [`FALLBACK_BURST`].
pub fn fallback_policy() -> Policy {
    Policy::with_rate(FALLBACK_RATE, FALLBACK_BURST).expect("fallback figures are valid")
}

/// The policy a row describes.
pub fn row_policy(row: &DefaultRow) -> Policy {
    // The table is constant and every row is validated by `every_row_is_a_valid_policy`.
    Policy::with_rate(row.rate_per_second, row.burst)
        .and_then(|p| p.with_arrival_jitter_ms(default_arrival_jitter_ms(row.service, row.group)))
        .expect("default rows are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{operation_group, ServiceGroup};
    use crate::policy::{DEFAULT_CONCURRENCY, DEFAULT_RETRY_CAPACITY};
    use std::collections::BTreeSet;

    #[test]
    fn every_row_is_a_valid_policy() {
        for r in DEFAULT_ROWS {
            let p = Policy::with_rate(r.rate_per_second, r.burst);
            assert!(p.is_ok(), "{}:{}: {:?}", r.service, r.group, p);
            assert!(!r.note.is_empty(), "{}:{} has no note", r.service, r.group);
        }
    }

    #[test]
    fn only_the_two_datapoint_budgets_allow_arrival_jitter_by_default() {
        let jittered: Vec<(String, u32, f64)> = DEFAULT_ROWS
            .iter()
            .map(|r| (r, row_policy(r)))
            .filter(|(_, p)| p.arrival_jitter_ms() > 0)
            .map(|(r, p)| {
                let name = format!("{}:{}", r.service, r.group);
                (name, p.arrival_jitter_ms(), p.admission_burst())
            })
            .collect();
        assert_eq!(
            jittered,
            [
                (
                    "cloudwatch:GetMetricData:recent-datapoints".to_owned(),
                    100,
                    162_000.0
                ),
                (
                    "cloudwatch:GetMetricData:older-datapoints".to_owned(),
                    100,
                    356_400.0
                ),
            ]
        );
        assert_eq!(fallback_policy().arrival_jitter_ms(), 0);
        assert_eq!(
            default_policy("cloudwatch", "GetMetricData").arrival_jitter_ms(),
            0
        );
    }

    #[test]
    fn only_the_seed_rows_with_aws_references_count_as_verified() {
        let unverified: Vec<String> = DEFAULT_ROWS
            .iter()
            .filter(|r| r.verified == Verified::No)
            .map(|r| format!("{}:{}", r.service, r.group))
            .collect();
        assert_eq!(
            unverified,
            [
                "resource-explorer-2:Search",
                "resource-explorer-2:setup",
                "s3:GetBucketLifecycleConfiguration",
                "s3:ListBucketIntelligentTieringConfigurations",
                "s3:ListBuckets",
                "s3:GetBucketLocation",
                "sts:GetCallerIdentity",
                "organizations:ListAccounts",
                "organizations:DescribeOrganization",
                "cloudcontrol:ListResources",
                "cloudcontrol:GetResource",
                "emr:ListClusters",
            ]
        );
        // Each note agrees with its mark.
        for r in DEFAULT_ROWS {
            let says_unverified = r.note.contains("not a verified AWS quota");
            assert_eq!(
                says_unverified,
                r.verified == Verified::No,
                "{}:{}: {}",
                r.service,
                r.group,
                r.note
            );
        }
        assert_eq!(verified("s3", "GetBucketLocation"), Verified::No);
        assert_eq!(verified("kms", "ListKeys"), Verified::AwsDocs);
        assert_eq!(
            verified("ec2", "DescribeFleets"),
            Verified::No,
            "the fallback"
        );
    }

    #[test]
    fn rows_are_canonical_and_unique() {
        let mut seen = BTreeSet::new();
        for r in DEFAULT_ROWS {
            let name = ServiceGroup::new(r.service, r.group).unwrap();
            assert_eq!(name.service(), r.service, "{} is not canonical", r.service);
            assert!(seen.insert(name.to_string()), "duplicate row {name}");
        }
    }

    #[test]
    fn seed_figures() {
        // (service, group, rate, burst) straight from seed 000.
        let cases: &[(&str, &str, f64, f64)] = &[
            ("logs", "DescribeLogStreams", 25.0, 1.0),
            ("logs", "DescribeLogGroups", 10.0, 1.0),
            ("route53", "all-requests", 5.0, 5.0),
            ("ec2", "DescribeInstances", 10.0, 10.0),
            ("ec2", "DescribeRegions", 10.0, 10.0),
            ("ecs", "service-read", 20.0, 1.0),
            ("ecs", "cluster-resource-read", 20.0, 1.0),
            ("elasticloadbalancing", "all-requests", 10.0, 1.0),
            ("elbv2", "all-requests", 10.0, 1.0),
            ("dynamodb", "control-plane-read", 100.0, 1.0),
            ("kms", "GetKeyLastUsage", 5.0, 1.0),
            ("kms", "ListKeys", 100.0, 1.0),
            ("emr", "DescribeCluster", 1.0, 1.0),
            ("elasticmapreduce", "ListInstances", 0.5, 1.0),
            ("cloudtrail", "DescribeTrails", 10.0, 1.0),
            ("monitoring", "ListMetrics", 25.0, 1.0),
            ("cloudwatch", "GetMetricData", 500.0, 1.0),
            ("cloudwatch", RECENT_DATAPOINTS_GROUP, 180_000.0, 180_000.0),
            ("cloudwatch", OLDER_DATAPOINTS_GROUP, 396_000.0, 396_000.0),
            ("lambda", "control-plane", 15.0, 1.0),
            ("resource-explorer-2", "non-search", 3.0, 1.0),
            ("sagemaker", "DescribeEndpoint", 5.0, 1.0),
            ("sagemaker", "DescribeEndpointConfig", 5.0, 1.0),
            ("s3", "GetBucketLifecycleConfiguration", 10.0, 10.0),
            (
                "s3",
                "ListBucketIntelligentTieringConfigurations",
                10.0,
                10.0,
            ),
        ];
        for &(service, group, rate, burst) in cases {
            assert!(is_known(service, group), "{service}:{group}");
            let p = default_policy(service, group);
            assert_eq!(
                (p.rate_per_second(), p.burst()),
                (rate, burst),
                "{service}:{group}"
            );
            assert_eq!(p.concurrency(), DEFAULT_CONCURRENCY);
            assert_eq!(p.retry_capacity(), DEFAULT_RETRY_CAPACITY);
        }
    }

    #[test]
    fn unknown_operations_fall_back() {
        for (service, group) in [
            ("ec2", "RunInstances"),
            ("kms", "Decrypt"),
            ("", "x"),
            ("newsvc", "Op"),
        ] {
            assert!(!is_known(service, group), "{service}:{group}");
            let p = default_policy(service, group);
            assert_eq!(
                (p.rate_per_second(), p.burst()),
                (FALLBACK_RATE, FALLBACK_BURST)
            );
            assert_eq!(p, fallback_policy());
        }
    }

    #[test]
    fn collector_operations_have_rows() {
        // DESIGN §6's first collectors: S3, Lambda, DynamoDB, KMS, plus the STS bootstrap.
        let calls: &[(&str, &str)] = &[
            ("s3", "ListBuckets"),
            ("s3", "GetBucketLocation"),
            ("s3", "GetBucketLifecycleConfiguration"),
            ("s3", "ListBucketIntelligentTieringConfigurations"),
            ("lambda", "ListFunctions"),
            ("lambda", "ListVersionsByFunction"),
            ("dynamodb", "ListTables"),
            ("dynamodb", "DescribeTable"),
            ("kms", "ListKeys"),
            ("kms", "DescribeKey"),
            ("kms", "GetKeyLastUsage"),
            ("sts", "GetCallerIdentity"),
            ("sts", "AssumeRole"),
            ("organizations", "ListAccounts"),
            ("organizations", "DescribeOrganization"),
            ("account", "ListRegions"),
            ("resource-explorer-2", "ListIndexes"),
            ("ec2", "DescribeRegions"),
            // Seed 000's other datasets (collectors/src/services).
            ("ecs", "ListClusters"),
            ("ecs", "DescribeServices"),
            ("elasticloadbalancing", "DescribeLoadBalancers"),
            ("elasticloadbalancingv2", "DescribeListeners"),
            ("logs", "DescribeLogGroups"),
            ("logs", "DescribeLogStreams"),
            ("cloudtrail", "DescribeTrails"),
            ("route53", "ListHostedZones"),
            ("emr", "ListClusters"),
            ("emr", "DescribeCluster"),
            ("emr", "ListInstances"),
        ];
        for &(service, op) in calls {
            let group = operation_group(service, op);
            assert!(
                is_known(service, &group),
                "{service}:{op} → {group} has no row"
            );
        }
    }
}
