//! The report as the store reads it: a `serde_json::Value` (docs/report.md) decoded once,
//! at the edge, into typed [`AccountDoc`]s and a [`ScanMeta`].
//!
//! Why a `Value` and not the scan crate's types? The store must accept a report file as
//! well as a scan in memory, and must not drag the AWS SDK into every binary that reads
//! an inventory. Only the fields the store needs are decoded; everything else in the
//! report is ignored, so a report field added later does not break a store. A malformed
//! report is refused with the JSON path of the bad field (`serde_path_to_error`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{InventoryError, InventoryErrorKind, Result};
use crate::model::{CoverageStatus, ResourceKey, ScanMeta, ScanStatus, UNKNOWN};

/// The name of the tagging sweep's dataset; its status never sets the exit code.
const TAGS_ONLY_DATASET: &str = "tags-only";

/// One account's report, decoded.
#[derive(Debug, Clone)]
pub struct AccountDoc {
    /// The account (`unknown` when the report has `null`).
    pub account: String,
    /// Every coverage line of every dataset.
    pub coverage: Vec<CoverageLine>,
    /// Every item of every dataset.
    pub items: Vec<Item>,
    /// What the account's datasets add up to (the exit code's rule).
    pub status: ScanStatus,
}

/// How one type was listed in one account and region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoverageLine {
    pub resource_type: String,
    pub account: String,
    pub region: String,
    pub status: CoverageStatus,
    pub reason: Option<String>,
    pub count: u64,
}

/// One resource as a scan saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub key: ResourceKey,
    pub arn: Option<String>,
    /// A JSON object of string values.
    pub tags: Map<String, Value>,
    /// A JSON object: the CloudFormation properties.
    pub properties: Map<String, Value>,
    /// The dataset's own fields (`name`, `item_count`, ...), `activity` left out.
    pub fields: Map<String, Value>,
    /// Seen only through the tagging sweep (`"coverage": "tags-only"`).
    pub tags_only: bool,
}

/// A whole report, decoded.
#[derive(Debug, Clone)]
pub struct Report {
    pub meta: ScanMeta,
    pub accounts: Vec<AccountDoc>,
    pub finished_at: Option<String>,
    pub status: ScanStatus,
}

#[derive(Deserialize)]
struct RawAccount {
    account: Option<String>,
    #[serde(default)]
    datasets: BTreeMap<String, RawDataset>,
}

#[derive(Deserialize)]
struct RawDataset {
    status: DatasetStatus,
    #[serde(default)]
    items: Vec<RawItem>,
    #[serde(default)]
    coverage: Vec<RawCoverage>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum DatasetStatus {
    Complete,
    Partial,
    Failed,
    Cancelled,
}

#[derive(Deserialize)]
struct RawCoverage {
    resource_type: String,
    account: Option<String>,
    region: String,
    status: CoverageStatus,
    reason: Option<String>,
    #[serde(default)]
    count: u64,
}

#[derive(Deserialize)]
struct RawItem {
    resource_type: String,
    id: String,
    arn: Option<String>,
    account: Option<String>,
    region: Option<String>,
    tags: Map<String, Value>,
    properties: Map<String, Value>,
    coverage: Option<String>,
    #[serde(flatten)]
    fields: Map<String, Value>,
}

#[derive(Deserialize)]
struct RawHeader {
    scan_id: Option<String>,
    account: Option<String>,
    started_at: String,
    finished_at: Option<String>,
    organization: Option<RawOrganization>,
    accounts: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct RawOrganization {
    caller_account: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

fn malformed(what: &str, err: serde_path_to_error::Error<serde_json::Error>) -> InventoryError {
    let path = err.path().to_string();
    InventoryError::new(
        InventoryErrorKind::MalformedReport,
        format!(
            "the {what} is not a tollgate report (docs/report.md) at `{path}`: {}; \
             validate it against docs/report.schema.json, or store the report of a scan made by this tollgate",
            err.inner()
        ),
    )
    .with_source(err.into_inner())
}

impl AccountDoc {
    /// Decodes one account document (a one-account report, or one of `accounts[]`).
    pub fn from_value(doc: &Value) -> Result<AccountDoc> {
        let raw: RawAccount = serde_path_to_error::deserialize(doc)
            .map_err(|err| malformed("account document", err))?;
        let account = raw.account.unwrap_or_else(|| UNKNOWN.to_string());
        let mut coverage = Vec::new();
        let mut native = Vec::new();
        let mut tags_only = Vec::new();
        let mut status = ScanStatus::Complete;
        for (name, dataset) in raw.datasets {
            if name != TAGS_ONLY_DATASET {
                status = status.worst(match dataset.status {
                    DatasetStatus::Complete => ScanStatus::Complete,
                    DatasetStatus::Partial => ScanStatus::Partial,
                    DatasetStatus::Failed => ScanStatus::Failed,
                    DatasetStatus::Cancelled => ScanStatus::Cancelled,
                });
            }
            coverage.extend(dataset.coverage.into_iter().map(|line| CoverageLine {
                resource_type: line.resource_type,
                account: line.account.unwrap_or_else(|| account.clone()),
                region: line.region,
                status: line.status,
                reason: line.reason,
                count: line.count,
            }));
            for raw_item in dataset.items {
                let item = Item::from_raw(raw_item, &account);
                if item.tags_only {
                    tags_only.push(item);
                } else {
                    native.push(item);
                }
            }
        }
        // A resource listed natively and by the tagging sweep is one resource: the
        // native item (with its properties) wins.
        let seen: std::collections::HashSet<ResourceKey> =
            native.iter().map(|item| item.key.clone()).collect();
        native.extend(
            tags_only
                .into_iter()
                .filter(|item| !seen.contains(&item.key)),
        );
        Ok(AccountDoc {
            account,
            coverage,
            items: native,
            status,
        })
    }
}

impl Item {
    fn from_raw(raw: RawItem, doc_account: &str) -> Item {
        let mut fields = raw.fields;
        fields.remove("activity");
        Item {
            key: ResourceKey {
                account: raw.account.unwrap_or_else(|| doc_account.to_string()),
                region: raw.region.unwrap_or_else(|| UNKNOWN.to_string()),
                resource_type: raw.resource_type,
                id: raw.id,
            },
            arn: raw.arn,
            tags: raw.tags,
            properties: raw.properties,
            fields,
            tags_only: raw.coverage.as_deref() == Some("tags-only"),
        }
    }
}

impl Report {
    /// Decodes a one-account or an organization report.
    pub fn from_value(report: &Value) -> Result<Report> {
        let header: RawHeader =
            serde_path_to_error::deserialize(report).map_err(|err| malformed("report", err))?;
        let started_at = crate::time::normalize(&header.started_at)?;
        let finished_at = header
            .finished_at
            .as_deref()
            .map(crate::time::normalize)
            .transpose()?;
        let (accounts, caller_account, organization, mut status) = match header.accounts {
            Some(docs) => {
                let mut accounts = Vec::with_capacity(docs.len());
                for (index, doc) in docs.iter().enumerate() {
                    accounts.push(AccountDoc::from_value(doc).map_err(|err| {
                        InventoryError::new(
                            err.kind(),
                            format!("accounts[{index}]: {}", err.message()),
                        )
                    })?);
                }
                let org = header.organization.as_ref();
                let caller = org.and_then(|org| org.caller_account.clone());
                let failed =
                    org.is_some_and(|org| org.error.as_ref().is_some_and(|e| !e.is_null()));
                let status = if failed {
                    ScanStatus::Failed
                } else {
                    ScanStatus::Complete
                };
                (accounts, caller, true, status)
            }
            None => {
                let doc = AccountDoc::from_value(report)?;
                (
                    vec![doc],
                    header.account.clone(),
                    false,
                    ScanStatus::Complete,
                )
            }
        };
        for doc in &accounts {
            status = status.worst(doc.status);
        }
        Ok(Report {
            meta: ScanMeta {
                report_scan_id: header.scan_id,
                started_at,
                caller_account,
                organization,
                options: Value::Object(Map::new()),
            },
            accounts,
            finished_at,
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn account_doc(datasets: Value) -> Value {
        json!({"scan_id": "s1", "partition": "aws", "account": "111111111111", "regions": ["eu-west-1"],
               "started_at": "2026-12-03T06:37:18.671Z", "finished_at": "2026-12-03T06:37:19Z",
               "datasets": datasets, "throttling": null})
    }

    #[test]
    fn a_malformed_item_is_named_by_its_path() {
        let doc = account_doc(
            json!({"s3-buckets": {"status": "complete", "reasons": [], "coverage": [],
            "items": [{"resource_type": "AWS::S3::Bucket", "id": "b", "arn": null, "account": null,
                       "region": "eu-west-1", "tags": [], "properties": {}}]}}),
        );
        let err = Report::from_value(&doc).unwrap_err();
        assert_eq!(err.kind(), InventoryErrorKind::MalformedReport);
        assert!(
            err.message().contains("datasets.s3-buckets.items[0].tags"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn the_tags_only_dataset_does_not_set_the_status_and_native_items_win() {
        let item = json!({"resource_type": "AWS::S3::Bucket", "id": "b", "arn": null, "account": null,
                          "region": "eu-west-1", "tags": {"k": "v"}, "properties": {"BucketName": "b"},
                          "name": "b", "activity": {"x": 1}});
        let mut sweep = item.clone();
        sweep["coverage"] = json!("tags-only");
        sweep["properties"] = json!({});
        let doc = account_doc(json!({
            "s3-buckets": {"status": "complete", "reasons": [], "coverage": [], "items": [item]},
            "tags-only": {"status": "partial", "reasons": [], "coverage": [], "items": [sweep]}}));
        let report = Report::from_value(&doc).unwrap();
        assert_eq!(report.status, ScanStatus::Complete);
        let items = &report.accounts[0].items;
        assert_eq!(items.len(), 1);
        assert!(!items[0].tags_only);
        assert_eq!(items[0].key.account, "111111111111");
        assert_eq!(items[0].fields.get("name"), Some(&json!("b")));
        assert!(!items[0].fields.contains_key("activity"));
        assert_eq!(report.meta.started_at, "2026-12-03T06:37:18.671Z");
        assert_eq!(
            report.finished_at.as_deref(),
            Some("2026-12-03T06:37:19.000Z")
        );
    }
}
