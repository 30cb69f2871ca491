//! A resource modified between two stored scans, for the inventory's readers (the
//! history endpoint, the live page): a DynamoDB table tagged `env=prod`, scanned by the
//! service, retagged `env=staging`, scanned again.

use std::time::Duration;

use serde_json::json;
use tollgate_testkit::moto::{Moto, MOTO_ACCOUNT};

use super::Serve;

/// The region the scans list.
pub const REGION: &str = "us-east-1";

/// Tags `arn` (a DynamoDB table) `env=value`.
pub fn tag_table(moto: &Moto, arn: &str, value: &str) {
    moto.json_call(
        "dynamodb",
        "DynamoDB_20120810.TagResource",
        &json!({"ResourceArn": arn, "Tags": [{"Key": "env", "Value": value}]}).to_string(),
    );
}

/// One service scan of DynamoDB in [`REGION`], complete and stored: its number in the
/// store. Forced: the second scan of the account comes within the guard rail's cooldown.
pub fn stored_table_scan(serve: &Serve, moto: &Moto) -> i64 {
    let body = format!(
        r#"{{"regions":["{REGION}"],"datasets":["dynamodb-tables"],"endpoint_url":"{}","timeout":"100s","force":true}}"#,
        moto.url
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let id = answer["scan_id"].as_str().unwrap().to_owned();
    let status = serve.wait_for(
        &id,
        &["complete", "partial", "failed"],
        Duration::from_secs(120),
    );
    assert_eq!(status, "complete");
    let (code, detail) = serve.json("GET", &format!("/v1/scans/{id}"), None);
    assert_eq!(code, 200, "{detail}");
    assert_eq!(detail["store"]["stored"], true, "{detail}");
    detail["store"]["scan"].as_i64().unwrap()
}

/// Creates `table`, scans, retags it, scans again: the two scans' numbers in the store.
pub fn table_modified_between_two_scans(serve: &Serve, moto: &Moto, table: &str) -> (i64, i64) {
    moto.create_table(table);
    let arn = format!("arn:aws:dynamodb:{REGION}:{MOTO_ACCOUNT}:table/{table}");
    tag_table(moto, &arn, "prod");
    let first = stored_table_scan(serve, moto);
    tag_table(moto, &arn, "staging");
    let second = stored_table_scan(serve, moto);
    (first, second)
}
