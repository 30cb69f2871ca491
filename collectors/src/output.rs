//! The discovery report: what `tollgate discover` prints and `Discovery::report` returns.
//!
//! One JSON document per scan:
//! `{scan_id, partition, account, regions, started_at, finished_at, datasets, throttling}`
//! (`throttling` is `null` when no key was throttled, failed transiently, retried, gave
//! up, met an open breaker or queued long; see [`ThrottlingSummary`]),
//! plus `fleet_degraded` when, in fleet mode, a key the scan used admitted without the
//! fleet table (see [`FleetDegraded`]).
//! Every dataset carries a `status` so a reader can tell a complete list from a short one:
//! a dataset that lost calls to throttling, retry exhaustion or the deadline is `partial`,
//! one whose listing failed outright is `failed`, one stopped by cancellation is
//! `cancelled`. A value the account would not give (access denied, an operation the
//! endpoint does not implement) is `null` on the item and explained, once per distinct
//! cause and with a count, in the dataset's `reasons`.
//!
//! An organization scan's report ([`OrganizationReport`], `tollgate discover
//! --organization`) holds one such report per scanned account; its types live in
//! the scan crate (`tollgate_scan::organization::report`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::coverage::{Coverage, CoverageStatus, CoverageSummary};
use crate::dataset::Dataset;
pub use crate::resource::{Resource, GLOBAL, TAGS_ONLY};

/// The `datasets` entry of the items only the tagging sweep saw (every type in one
/// entry; each item says its own `resource_type`), and of the sweep's own coverage.
/// Its status is the sweep's; it never counts towards
/// [`DiscoveryReport::overall_status`] (the exit code): a sweep that failed is not a
/// failed scan.
pub const TAGS_ONLY_DATASET: &str = TAGS_ONLY;

// The gate's own report pieces (throttling, fleet degradation, timestamps) are the
// engine's: re-exported so the report's whole model is named from one module.
pub use tollgate_engine::report::{
    format_date_time, rfc3339, BreakerSummary, DegradedMode, FleetDegraded, KeyThrottling,
    SlowedKey, ThrottlingSummary, ThrottlingTotals, LONG_WAIT_SECONDS,
};

/// Where a `--regions all` scan found its regions (the report's `regions_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RegionsSource {
    /// The Account Management API's `ListRegions` (enabled and enabled-by-default).
    #[serde(rename = "account:ListRegions")]
    ListRegions,
    /// EC2 `DescribeRegions` (the regions enabled for the account), where `ListRegions`
    /// was denied or unavailable: member accounts often lack `account:ListRegions`.
    #[serde(rename = "ec2:DescribeRegions")]
    DescribeRegions,
    /// Neither answered: `--regions-fallback` (or the configured region), with a reason.
    #[serde(rename = "fallback")]
    Fallback,
}

/// One scan's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveryReport {
    /// The scan id (also the attribution id in telemetry).
    pub scan_id: String,
    /// AWS partition (`aws`, `aws-cn`, `aws-us-gov`).
    pub partition: String,
    /// The caller's account, or `null` when identity could not be resolved (then
    /// admission ran isolated under `unresolved:<run-id>`; see `identity_note`).
    pub account: Option<String>,
    /// Why the account is unknown, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_note: Option<String>,
    /// Regions scanned.
    pub regions: Vec<String>,
    /// `--regions all` only: why the fallback regions were scanned instead of the
    /// account's enabled ones (a reason naming `account:ListRegions` and its error).
    /// Absent when `ListRegions` answered, and without `--regions all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions_reason: Option<Reason>,
    /// `--regions all` only: where the regions came from (`account:ListRegions`, else
    /// `ec2:DescribeRegions` where ListRegions is denied or unavailable, else `fallback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions_source: Option<RegionsSource>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Wall-clock end, RFC 3339 UTC.
    pub finished_at: String,
    /// One entry per requested dataset, by name (`s3-buckets`, ...).
    pub datasets: BTreeMap<String, DatasetReport>,
    /// What throttling cost this scan, per quota key and in total, with one readable line
    /// per eventful key; `null` when nothing eventful happened.
    pub throttling: Option<ThrottlingSummary>,
    /// Fleet mode only: the keys of this scan whose fleet admission was degraded while it
    /// ran (the fleet table failed; the key admitted from a local share of its rate, or
    /// refused). Absent when there were none, and without fleet mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fleet_degraded: Vec<FleetDegraded>,
}

impl DiscoveryReport {
    /// The worst dataset status (`complete` when there are no datasets), the
    /// [`TAGS_ONLY_DATASET`] entry aside.
    pub fn overall_status(&self) -> DatasetStatus {
        self.datasets
            .iter()
            .filter(|(name, _)| name.as_str() != TAGS_ONLY_DATASET)
            .map(|(_, d)| d.status)
            .max()
            .unwrap_or(DatasetStatus::Complete)
    }

    /// One dataset's report.
    pub fn dataset(&self, dataset: Dataset) -> Option<&DatasetReport> {
        self.datasets.get(dataset.name())
    }

    /// The per-key counters of [`DiscoveryReport::throttling`] (empty when it is `null`).
    pub fn throttling_keys(&self) -> BTreeMap<String, KeyThrottling> {
        self.throttling
            .as_ref()
            .map(|t| t.keys.clone())
            .unwrap_or_default()
    }
}

/// How complete a dataset is. Ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetStatus {
    /// Every call answered; `null` values (if any) are explained in `reasons`.
    Complete,
    /// Some calls were lost to throttling, retry exhaustion, transient errors or the
    /// deadline: items or values are missing, and `reasons` says which calls.
    Partial,
    /// The listing itself failed: `items` is empty or a prefix, not the inventory.
    Failed,
    /// The scan was cancelled before the dataset finished: `items` is what was collected.
    Cancelled,
}

impl DatasetStatus {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetStatus::Complete => "complete",
            DatasetStatus::Partial => "partial",
            DatasetStatus::Failed => "failed",
            DatasetStatus::Cancelled => "cancelled",
        }
    }
}

/// One dataset's status, reasons and items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetReport {
    /// How complete it is.
    pub status: DatasetStatus,
    /// Why values are `null` or calls were lost; one entry per distinct cause.
    pub reasons: Vec<Reason>,
    /// The resources found.
    pub items: Vec<Item>,
    /// How well each account and region (or `global`) of its type was covered, with a
    /// reason where not `complete` and the items found there.
    #[serde(default)]
    pub coverage: Vec<Coverage>,
}

/// One distinct cause of missing data, with how often it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// `service:Operation` of the call.
    pub operation: String,
    /// The item field left `null`, when the cause was a per-item read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What happened (see [`ReasonKind`]).
    pub kind: ReasonKind,
    /// The AWS error code, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A human-readable explanation (first occurrence).
    pub message: String,
    /// How many calls ended this way.
    pub count: u64,
}

/// What a [`Reason`] is: how the calls it counts ended. Serialised in snake case
/// (`retries_exhausted`), as the report has always spelled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonKind {
    /// The account or endpoint will not give the value (access denied, not implemented).
    Unavailable,
    /// Throttled past what retries could absorb.
    Throttled,
    /// The key's shared retry allowance ran out.
    RetriesExhausted,
    /// Transient failures (5xx, connection errors) past the retries.
    Transient,
    /// The scan's deadline passed.
    DeadlineExceeded,
    /// The scan was cancelled.
    Cancelled,
    /// The key's calendar allowance (seed 003) is used up for its period.
    AllowanceExhausted,
    /// Admission itself failed (its state cannot be stored, coordination was lost).
    Admission,
    /// The scope's circuit breaker was open past the deadline; the message names the
    /// scope.
    BreakerOpen,
    /// The caller's credentials could not be loaded or expired; not retried.
    Credentials,
    /// Anything else.
    Failed,
}

impl ReasonKind {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonKind::Unavailable => "unavailable",
            ReasonKind::Throttled => "throttled",
            ReasonKind::RetriesExhausted => "retries_exhausted",
            ReasonKind::Transient => "transient",
            ReasonKind::DeadlineExceeded => "deadline_exceeded",
            ReasonKind::Cancelled => "cancelled",
            ReasonKind::AllowanceExhausted => "allowance_exhausted",
            ReasonKind::Admission => "admission",
            ReasonKind::BreakerOpen => "breaker_open",
            ReasonKind::Credentials => "credentials",
            ReasonKind::Failed => "failed",
        }
    }

    /// The kind of the one reason a dataset that never reported carries.
    pub fn of_unfinished(status: DatasetStatus) -> ReasonKind {
        match status {
            DatasetStatus::Cancelled => ReasonKind::Cancelled,
            _ => ReasonKind::Failed,
        }
    }
}

impl std::fmt::Display for ReasonKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An inventory item. Untagged in JSON: each variant has its own required name field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Item {
    /// `s3-buckets`.
    S3Bucket(S3Bucket),
    /// `lambda-functions`.
    LambdaFunction(LambdaFunction),
    /// `dynamodb-tables`.
    DynamoDbTable(DynamoDbTable),
    /// `kms-keys`.
    KmsKey(KmsKey),
    /// Any other type (EC2, the Cloud Control sweep, a tags-only item): the common fields
    /// only, its details in `properties`. Last: the variants above each require a field
    /// of their own (`name`, `function_name`, ...), which this one never has.
    Resource(Resource),
}

impl Item {
    /// The common fields.
    pub fn resource(&self) -> &Resource {
        match self {
            Item::S3Bucket(i) => &i.resource,
            Item::LambdaFunction(i) => &i.resource,
            Item::DynamoDbTable(i) => &i.resource,
            Item::KmsKey(i) => &i.resource,
            Item::Resource(r) => r,
        }
    }

    /// The common fields, to merge tags into.
    pub fn resource_mut(&mut self) -> &mut Resource {
        match self {
            Item::S3Bucket(i) => &mut i.resource,
            Item::LambdaFunction(i) => &mut i.resource,
            Item::DynamoDbTable(i) => &mut i.resource,
            Item::KmsKey(i) => &mut i.resource,
            Item::Resource(r) => r,
        }
    }
}

/// An item's CloudWatch activity (`--metrics`): daily series over the last 14 complete
/// UTC days, by metric name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    /// The window's start (inclusive), RFC 3339 UTC midnight.
    pub start: String,
    /// The window's end (exclusive): midnight UTC of the scan's day.
    pub end: String,
    /// The period of every datapoint, seconds (86,400: daily).
    pub period_s: u32,
    /// By metric name (`Invocations`): the series, or `null` when it could not be read
    /// (the dataset is then `partial` and its `reasons` say why).
    pub series: BTreeMap<String, Option<ActivitySeries>>,
}

/// One metric's datapoints for one item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivitySeries {
    /// CloudWatch namespace (`AWS/Lambda`).
    pub namespace: String,
    /// The statistic (`Sum`, `Average`).
    pub stat: String,
    /// Ascending by timestamp; days without data are absent (CloudWatch returns none).
    pub datapoints: Vec<ActivityDatapoint>,
}

/// One datapoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityDatapoint {
    /// The period's start, RFC 3339 UTC.
    pub timestamp: String,
    /// The statistic's value (a JSON number: CloudWatch never returns NaN or infinity).
    pub value: serde_json::Number,
}

/// An S3 bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct S3Bucket {
    /// The resource model's common fields (`resource_type`, `id`, `arn`, `account`,
    /// `region`, `tags`, `properties`).
    #[serde(flatten)]
    pub resource: Resource,
    /// Bucket name. (`region` is the bucket's region; `null` if it could not be read.)
    pub name: String,
    /// Lifecycle rules (0 when the bucket has no lifecycle configuration).
    pub lifecycle_rule_count: Option<u32>,
    /// Intelligent-Tiering configurations.
    pub intelligent_tiering_configuration_count: Option<u32>,
    /// CloudWatch activity (`--metrics` only; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
}

/// A Lambda function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LambdaFunction {
    /// The resource model's common fields (`resource_type`, `id`, `arn`, `account`,
    /// `region`, `tags`, `properties`).
    #[serde(flatten)]
    pub resource: Resource,
    /// Function name.
    pub function_name: String,
    /// Runtime (`null` for container-image functions).
    pub runtime: Option<String>,
    /// Published versions, excluding `$LATEST`.
    pub version_count: Option<u32>,
    /// CloudWatch activity (`--metrics` only; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
}

/// A DynamoDB table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamoDbTable {
    /// The resource model's common fields (`resource_type`, `id`, `arn`, `account`,
    /// `region`, `tags`, `properties`).
    #[serde(flatten)]
    pub resource: Resource,
    /// Table name.
    pub table_name: String,
    /// `PROVISIONED` or `PAY_PER_REQUEST` (tables created before on-demand existed report
    /// no billing mode summary and are `PROVISIONED`).
    pub billing_mode: Option<String>,
    /// DynamoDB's approximate item count (refreshed by AWS about every six hours).
    pub item_count: Option<i64>,
    /// CloudWatch activity (`--metrics` only; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
}

/// A KMS key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KmsKey {
    /// The resource model's common fields (`resource_type`, `id`, `arn`, `account`,
    /// `region`, `tags`, `properties`).
    #[serde(flatten)]
    pub resource: Resource,
    /// Key id.
    pub key_id: String,
    /// `AWS` or `CUSTOMER`.
    pub key_manager: Option<String>,
    /// `Enabled`, `Disabled`, `PendingDeletion`, ...
    pub key_state: Option<String>,
    /// Last successful cryptographic use, RFC 3339 UTC; `null` when never used since
    /// tracking began or when the value could not be read (then `reasons` says why).
    pub last_used_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_order_from_best_to_worst() {
        use DatasetStatus::*;
        assert!(Complete < Partial && Partial < Failed && Failed < Cancelled);
    }

    #[test]
    fn reason_kinds_keep_their_json_spelling() {
        use ReasonKind::*;
        let kinds = [
            (Unavailable, "unavailable"),
            (Throttled, "throttled"),
            (RetriesExhausted, "retries_exhausted"),
            (Transient, "transient"),
            (DeadlineExceeded, "deadline_exceeded"),
            (Cancelled, "cancelled"),
            (AllowanceExhausted, "allowance_exhausted"),
            (Admission, "admission"),
            (BreakerOpen, "breaker_open"),
            (Credentials, "credentials"),
            (Failed, "failed"),
        ];
        for (kind, text) in kinds {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, text, "{kind:?}");
            assert_eq!(kind.as_str(), text);
            assert_eq!(serde_json::from_value::<ReasonKind>(json).unwrap(), kind);
        }
    }

    #[test]
    fn items_round_trip_untagged() {
        let items = vec![
            Item::S3Bucket(S3Bucket {
                resource: crate::resource::Resource::new("AWS::S3::Bucket", "b".into())
                    .region(Some("us-east-1".into())),
                name: "b".into(),
                lifecycle_rule_count: Some(2),
                intelligent_tiering_configuration_count: None,
                activity: None,
            }),
            Item::KmsKey(KmsKey {
                resource: crate::resource::Resource::new("AWS::KMS::Key", "k".into())
                    .region(Some("eu-west-1".into())),
                key_id: "k".into(),
                key_manager: Some("CUSTOMER".into()),
                key_state: Some("Enabled".into()),
                last_used_at: None,
            }),
            Item::LambdaFunction(LambdaFunction {
                resource: crate::resource::Resource::new("AWS::Lambda::Function", "f".into())
                    .region(Some("us-east-1".into())),
                function_name: "f".into(),
                runtime: None,
                version_count: Some(0),
                activity: None,
            }),
            Item::DynamoDbTable(DynamoDbTable {
                resource: crate::resource::Resource::new("AWS::DynamoDB::Table", "t".into())
                    .region(Some("us-east-1".into())),
                table_name: "t".into(),
                billing_mode: Some("PAY_PER_REQUEST".into()),
                item_count: Some(0),
                activity: None,
            }),
        ];
        let json = serde_json::to_string(&items).unwrap();
        assert!(json.contains(r#""intelligent_tiering_configuration_count":null"#));
        let back: Vec<Item> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, items);
    }
}
