//! The inventory tests' harness: reports built with `json!` as docs/report.md has them,
//! and the two engines behind one [`Engine`] so that every scenario runs on both.
#![allow(dead_code)]

pub mod scenarios;

use serde_json::{json, Value};
use tollgate_inventory::Store;

pub const ACCOUNT: &str = "111111111111";
pub const OTHER: &str = "222222222222";
pub const REGION: &str = "eu-west-1";

/// A fresh, empty store of one engine, private to one test.
pub trait Engine: Sync {
    /// The store's URL (a password, if any, included).
    fn url(&self) -> String;
    /// Runs one SQL statement directly (not through the store) and returns the first
    /// column of its first row as an integer, or 0 when it returns no row.
    fn scalar(&self, sql: &str) -> i64;
    /// Runs SQL statements directly.
    fn execute(&self, sql: &str);

    fn open(&self) -> Store {
        Store::open(&self.url()).unwrap_or_else(|err| panic!("open: {err}"))
    }
}

/// An item of the resource model (docs/report.md "Datasets and items").
pub fn item(
    resource_type: &str,
    id: &str,
    account: &str,
    region: &str,
    tags: Value,
    properties: Value,
) -> Value {
    let arn = format!("arn:aws:test:{region}:{account}:{id}");
    let mut item = json!({
        "resource_type": resource_type, "id": id, "arn": arn, "account": account,
        "region": region, "tags": tags, "properties": properties,
    });
    // The dataset's own fields the schema requires for the native types.
    let extra = match resource_type {
        "AWS::S3::Bucket" => {
            json!({"name": id, "lifecycle_rule_count": 0, "intelligent_tiering_configuration_count": 0})
        }
        "AWS::DynamoDB::Table" => {
            json!({"table_name": id, "billing_mode": "PAY_PER_REQUEST", "item_count": 3})
        }
        "AWS::KMS::Key" => {
            json!({"key_id": id, "key_manager": "CUSTOMER", "key_state": "Enabled", "last_used_at": null})
        }
        _ => json!({}),
    };
    for (key, value) in extra.as_object().unwrap() {
        item[key] = value.clone();
    }
    item
}

/// A bucket in the test region.
pub fn bucket(id: &str, tags: Value) -> Value {
    item(
        "AWS::S3::Bucket",
        id,
        ACCOUNT,
        REGION,
        tags,
        json!({"BucketName": id}),
    )
}

/// A coverage line.
pub fn coverage(
    resource_type: &str,
    account: &str,
    region: &str,
    status: &str,
    count: usize,
) -> Value {
    let mut line = json!({"resource_type": resource_type, "account": account, "region": region,
                          "status": status, "count": count});
    if status != "complete" {
        line["reason"] = json!(format!("{status} in the test"));
    }
    line
}

/// A dataset of `items` whose coverage is one line per (type, region) of its items, or
/// `extra_types` with no items, all with `status`.
pub fn dataset(status: &str, items: Vec<Value>, coverage_lines: Vec<Value>) -> Value {
    let dataset_status = match status {
        "complete" => "complete",
        "failed" => "failed",
        "cancelled" => "cancelled",
        _ => "partial",
    };
    json!({"status": dataset_status, "reasons": [], "items": items, "coverage": coverage_lines})
}

/// One account's report over `datasets` (name → dataset).
pub fn account_report(account: &str, started_at: &str, datasets: Value) -> Value {
    json!({
        "scan_id": format!("scan-{account}-{started_at}"),
        "partition": "aws",
        "account": account,
        "regions": [REGION],
        "started_at": started_at,
        "finished_at": started_at,
        "datasets": datasets,
        "throttling": null,
    })
}

/// A report with one complete `s3-buckets` dataset of `buckets`.
pub fn s3_report(started_at: &str, buckets: Vec<Value>, status: &str) -> Value {
    let count = buckets.len();
    account_report(
        ACCOUNT,
        started_at,
        json!({"s3-buckets": dataset(status, buckets, vec![coverage("AWS::S3::Bucket", ACCOUNT, REGION, status, count)])}),
    )
}

/// An organization report of account documents.
pub fn organization_report(started_at: &str, accounts: Vec<Value>) -> Value {
    json!({
        "scan_id": format!("org-{started_at}"),
        "partition": "aws",
        "started_at": started_at,
        "finished_at": started_at,
        "organization": {"management_account": ACCOUNT, "caller_account": ACCOUNT, "role_name": "OrganizationAccountAccessRole",
                         "listed": accounts.len(), "scanned": accounts.len(), "skipped": [], "hub_throttling": null},
        "accounts": accounts,
    })
}
