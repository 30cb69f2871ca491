//! The report as the store reads it: a `serde_json::Value` (docs/report.md) decoded once,
//! at the edge, into typed [`AccountDoc`]s and a [`ScanMeta`].
//!
//! Why a `Value` and not the scan crate's types? The store must accept a report file as
//! well as a scan in memory, and must not drag the AWS SDK into every binary that reads
//! an inventory. Only the fields the store needs are decoded; everything else in the
//! report is ignored, so a report field added later does not break a store. A malformed
//! report is refused with the JSON path of the bad field (`serde_path_to_error`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{InventoryError, InventoryErrorKind, Result};
use crate::model::{CoverageStatus, ResourceKey, ScanMeta, ScanStatus, UNKNOWN};

/// The name of the tagging sweep's dataset; its status never sets the exit code.
const TAGS_ONLY_DATASET: &str = "tags-only";

/// One account's report, decoded (its items borrow from the report's JSON).
#[derive(Debug, Clone)]
pub struct AccountDoc<'a> {
    /// The account (`unknown` when the report has `null`).
    pub account: String,
    /// Every coverage line of every dataset.
    pub coverage: Vec<CoverageLine>,
    /// Every item of every dataset.
    pub items: Vec<Item<'a>>,
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

/// One resource as a scan saw it, borrowing its JSON from the report it was decoded
/// from (a scan of 100,000 resources would otherwise copy, then free, every tag and
/// property once more on its way into the store).
#[derive(Debug, Clone, PartialEq)]
pub struct Item<'a> {
    pub key: ResourceKey,
    pub arn: Option<String>,
    /// A JSON object of string values.
    pub tags: Cow<'a, Map<String, Value>>,
    /// A JSON object: the CloudFormation properties.
    pub properties: Cow<'a, Map<String, Value>>,
    /// The dataset's own fields (`name`, `item_count`, ...), `activity` left out.
    pub fields: Fields<'a>,
    /// Seen only through the tagging sweep (`"coverage": "tags-only"`).
    pub tags_only: bool,
}

/// An item's own fields: every member of its JSON object but the resource model's
/// (`resource_type`, `id`, `arn`, `account`, `region`, `tags`, `properties`,
/// `coverage`) and `activity` (a measurement of the scan, not a state of the resource).
#[derive(Debug, Clone, PartialEq)]
pub enum Fields<'a> {
    /// The members of an item object of a report, the model's left out.
    Item(&'a Map<String, Value>),
    /// Fields built in memory.
    Owned(Map<String, Value>),
}

/// The members of an item that are not its own fields.
const NOT_FIELDS: &[&str] = &[
    "resource_type",
    "id",
    "arn",
    "account",
    "region",
    "tags",
    "properties",
    "coverage",
    "activity",
];

impl Fields<'_> {
    /// The field `name`, if the item has it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Fields::Item(_) if NOT_FIELDS.contains(&name) => None,
            Fields::Item(object) => object.get(name),
            Fields::Owned(map) => map.get(name),
        }
    }

    /// The fields as one JSON object's text.
    pub fn to_json(&self) -> String {
        // Maps of Values always serialize.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Fields::Owned(map) => map.serialize(serializer),
            Fields::Item(object) => {
                use serde::ser::SerializeMap;
                let mut out = serializer.serialize_map(None)?;
                for (name, value) in object.iter() {
                    if !NOT_FIELDS.contains(&name.as_str()) {
                        out.serialize_entry(name, value)?;
                    }
                }
                out.end()
            }
        }
    }
}

/// A whole report, decoded.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    pub meta: ScanMeta,
    pub accounts: Vec<AccountDoc<'a>>,
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
struct RawHeader {
    scan_id: Option<String>,
    account: Option<String>,
    started_at: String,
    finished_at: Option<String>,
    organization: Option<RawOrganization>,
}

#[derive(Deserialize)]
struct RawOrganization {
    caller_account: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    role_name: Option<String>,
    #[serde(default)]
    skipped: Vec<RawSkip>,
}

#[derive(Deserialize)]
struct RawSkip {
    reason: String,
}

/// What a skipped account does to the stored scan's status, as it does to the exit
/// code (the scan crate's `SkipReason::status`): the user's own exclusions and accounts
/// AWS will not scan leave it complete; an account that should have been scanned and
/// was not makes it partial; a cancellation makes it cancelled.
fn skip_status(reason: &str) -> ScanStatus {
    match reason {
        "suspended" | "excluded" => ScanStatus::Complete,
        "cancelled" => ScanStatus::Cancelled,
        // role_not_assumable, not_in_organization, deadline, and any reason added later
        _ => ScanStatus::Partial,
    }
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

impl<'a> AccountDoc<'a> {
    /// Decodes one account document (a one-account report, or one of `accounts[]`).
    pub fn from_value(doc: &'a Value) -> Result<AccountDoc<'a>> {
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
            let items = match &doc["datasets"][name.as_str()]["items"] {
                Value::Null => &[][..],
                Value::Array(items) => items.as_slice(),
                other => {
                    return Err(bad_item_field(&name, None, "items", "an array", other));
                }
            };
            for (index, value) in items.iter().enumerate() {
                let item = Item::from_value(value, &account, &name, index)?;
                if item.tags_only {
                    tags_only.push(item);
                } else {
                    native.push(item);
                }
            }
        }
        // A resource listed natively and by the tagging sweep is one resource: the
        // native item (with its properties) wins.
        if !tags_only.is_empty() {
            let seen: std::collections::HashSet<&ResourceKey> =
                native.iter().map(|item| &item.key).collect();
            let swept: Vec<Item<'a>> = tags_only
                .into_iter()
                .filter(|item| !seen.contains(&item.key))
                .collect();
            native.extend(swept);
        }
        Ok(AccountDoc {
            account,
            coverage,
            items: native,
            status,
        })
    }
}

/// The error of a malformed member of `datasets.<dataset>.items[<index>]` (or of
/// `items` itself without an index).
fn bad_item_field(
    dataset: &str,
    index: Option<usize>,
    field: &str,
    expected: &str,
    found: &Value,
) -> InventoryError {
    let found = match found {
        Value::Null => "null (or missing)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let path = match index {
        Some(index) => format!("datasets.{dataset}.items[{index}].{field}"),
        None => format!("datasets.{dataset}.{field}"),
    };
    InventoryError::new(
        InventoryErrorKind::MalformedReport,
        format!(
            "the account document is not a tollgate report (docs/report.md) at `{path}`: \
             expected {expected}, found {found}; validate it against docs/report.schema.json, \
             or store the report of a scan made by this tollgate"
        ),
    )
}

impl<'a> Item<'a> {
    /// Decodes `datasets.<dataset>.items[<index>]`, borrowing its tags, properties and
    /// fields. Decoded by hand rather than through serde: `#[serde(flatten)]` (the
    /// fields) buffers every member and copies the whole item, which was a tenth of the
    /// store's write time.
    fn from_value(
        value: &'a Value,
        doc_account: &str,
        dataset: &str,
        index: usize,
    ) -> Result<Item<'a>> {
        let bad = |field: &str, expected: &str, found: &Value| {
            bad_item_field(dataset, Some(index), field, expected, found)
        };
        let Value::Object(object) = value else {
            return Err(bad_item_field(
                dataset,
                None,
                &format!("items[{index}]"),
                "an object",
                value,
            ));
        };
        let member = |name: &str| object.get(name).unwrap_or(&Value::Null);
        let text = |name: &str| match member(name) {
            Value::String(text) => Ok(text.clone()),
            other => Err(bad(name, "a string", other)),
        };
        let optional_text = |name: &str| match member(name) {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text.clone())),
            other => Err(bad(name, "a string or null", other)),
        };
        let object_of = |name: &str| match member(name) {
            Value::Object(map) => Ok(Cow::Borrowed(map)),
            other => Err(bad(name, "an object", other)),
        };
        Ok(Item {
            key: ResourceKey {
                account: optional_text("account")?.unwrap_or_else(|| doc_account.to_string()),
                region: optional_text("region")?.unwrap_or_else(|| UNKNOWN.to_string()),
                resource_type: text("resource_type")?,
                id: text("id")?,
            },
            arn: optional_text("arn")?,
            tags: object_of("tags")?,
            properties: object_of("properties")?,
            fields: Fields::Item(object),
            tags_only: optional_text("coverage")?.as_deref() == Some("tags-only"),
        })
    }
}

impl<'a> Report<'a> {
    /// Decodes a one-account or an organization report.
    pub fn from_value(report: &'a Value) -> Result<Report<'a>> {
        let header: RawHeader =
            serde_path_to_error::deserialize(report).map_err(|err| malformed("report", err))?;
        let started_at = crate::time::normalize(&header.started_at)?;
        let finished_at = header
            .finished_at
            .as_deref()
            .map(crate::time::normalize)
            .transpose()?;
        // Read in place, not copied: an organization's report is most of the memory.
        let docs = match report.get("accounts") {
            None | Some(Value::Null) => None,
            Some(Value::Array(docs)) => Some(docs),
            Some(_) => {
                return Err(InventoryError::new(
                    InventoryErrorKind::MalformedReport,
                    "the report is not a tollgate report (docs/report.md) at `accounts`: expected an array of account documents; \
                     validate it against docs/report.schema.json",
                ))
            }
        };
        let (accounts, caller_account, organization, mut status) = match docs {
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
                    org.into_iter()
                        .flat_map(|org| &org.skipped)
                        .fold(ScanStatus::Complete, |status, skip| {
                            status.worst(skip_status(&skip.reason))
                        })
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
        let options = scan_options(report, &accounts, header.organization.as_ref());
        Ok(Report {
            meta: ScanMeta {
                report_scan_id: header.scan_id,
                started_at,
                caller_account,
                organization,
                options,
            },
            accounts,
            finished_at,
            status,
        })
    }
}

/// The options that shaped a scan's coverage, as far as its report tells them: the
/// regions scanned, the datasets loaded and the types they covered, and for an
/// organization the role assumed and the accounts skipped (with why). A caller that
/// knows its flags adds them (`Store::write_report_with_options`).
fn scan_options(
    report: &Value,
    accounts: &[AccountDoc<'_>],
    organization: Option<&RawOrganization>,
) -> Value {
    use std::collections::BTreeSet;
    let docs: Vec<&Value> = match report.get("accounts").and_then(Value::as_array) {
        Some(docs) => docs.iter().collect(),
        None => vec![report],
    };
    let regions: BTreeSet<&str> = docs
        .iter()
        .filter_map(|doc| doc.get("regions").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let datasets: BTreeSet<&str> = docs
        .iter()
        .filter_map(|doc| doc.get("datasets").and_then(Value::as_object))
        .flat_map(|datasets| datasets.keys().map(String::as_str))
        .collect();
    let types: BTreeSet<&str> = accounts
        .iter()
        .flat_map(|doc| doc.coverage.iter().map(|line| line.resource_type.as_str()))
        .collect();
    let mut options = serde_json::json!({
        "regions": regions,
        "datasets": datasets,
        "types": types,
    });
    if let Some(org) = organization {
        let mut skipped: BTreeMap<&str, u64> = BTreeMap::new();
        for skip in &org.skipped {
            *skipped.entry(skip.reason.as_str()).or_default() += 1;
        }
        options["role_name"] = serde_json::json!(org.role_name);
        options["skipped"] = serde_json::json!(skipped);
    }
    options
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
        assert!(items[0].fields.get("activity").is_none());
        assert!(items[0].fields.get("tags").is_none());
        assert!(!items[0].fields.to_json().contains("activity"));
        assert_eq!(report.meta.started_at, "2026-12-03T06:37:18.671Z");
        assert_eq!(
            report.finished_at.as_deref(),
            Some("2026-12-03T06:37:19.000Z")
        );
    }

    fn organization(skipped: Value, accounts: Value) -> Value {
        json!({"scan_id": "s1", "partition": "aws", "started_at": "2026-12-03T06:37:18Z",
               "finished_at": "2026-12-03T06:40:00Z",
               "organization": {"management_account": "111111111111", "caller_account": "111111111111",
                                "role_name": "OrganizationAccountAccessRole", "listed": 3, "scanned": 1,
                                "skipped": skipped, "hub_throttling": null},
               "accounts": accounts})
    }

    #[test]
    fn a_skipped_account_makes_an_organization_partial_unless_the_user_or_aws_excluded_it() {
        let one = account_doc(json!({}));
        let skip =
            |reason: &str| json!({"account": "222222222222", "reason": reason, "message": "m"});
        for (reason, status) in [
            ("role_not_assumable", ScanStatus::Partial),
            ("deadline", ScanStatus::Partial),
            ("not_in_organization", ScanStatus::Partial),
            ("suspended", ScanStatus::Complete),
            ("excluded", ScanStatus::Complete),
            ("cancelled", ScanStatus::Cancelled),
        ] {
            let report = organization(json!([skip(reason)]), json!([one.clone()]));
            assert_eq!(
                Report::from_value(&report).unwrap().status,
                status,
                "{reason}"
            );
        }
        let report = organization(json!([]), json!([one]));
        assert_eq!(
            Report::from_value(&report).unwrap().status,
            ScanStatus::Complete
        );
    }

    #[test]
    fn the_stored_options_name_the_regions_datasets_types_role_and_skips() {
        let doc = account_doc(
            json!({"s3-buckets": {"status": "complete", "reasons": [], "items": [],
            "coverage": [{"resource_type": "AWS::S3::Bucket", "account": null, "region": "eu-west-1",
                          "status": "complete", "reason": null, "count": 0}]}}),
        );
        let skip = json!({"account": "222222222222", "reason": "deadline", "message": "m"});
        let report = organization(json!([skip.clone(), skip]), json!([doc]));
        let options = Report::from_value(&report).unwrap().meta.options;
        assert_eq!(
            options,
            json!({"regions": ["eu-west-1"], "datasets": ["s3-buckets"], "types": ["AWS::S3::Bucket"],
                   "role_name": "OrganizationAccountAccessRole", "skipped": {"deadline": 2}})
        );
    }

    #[test]
    fn accounts_that_are_not_an_array_and_an_item_that_is_not_an_object_are_refused_by_path() {
        let mut report = organization(json!([]), json!([]));
        report["accounts"] = json!({"a": 1});
        let err = Report::from_value(&report).unwrap_err();
        assert_eq!(err.kind(), InventoryErrorKind::MalformedReport);
        assert!(err.message().contains("`accounts`"), "{}", err.message());
        let doc = account_doc(
            json!({"s3-buckets": {"status": "complete", "reasons": [], "coverage": [],
            "items": [7]}}),
        );
        let err = Report::from_value(&doc).unwrap_err();
        assert!(
            err.message().contains("datasets.s3-buckets.items[0]"),
            "{}",
            err.message()
        );
        let doc = account_doc(
            json!({"s3-buckets": {"status": "complete", "reasons": [], "coverage": [],
            "items": [{"resource_type": "AWS::S3::Bucket", "id": 3, "tags": {}, "properties": {}}]}}),
        );
        let err = Report::from_value(&doc).unwrap_err();
        assert!(
            err.message()
                .contains("items[0].id`: expected a string, found a number"),
            "{}",
            err.message()
        );
    }
}
