//! The report's JSON Schema (`docs/report.schema.json`), compiled once, and the
//! assertion every test that reads a report makes: the document validates.
//!
//! A validator crate (boon) rather than hand-written checks: the schema uses JSON Schema
//! 2020-12's `if`/`then`, `oneOf` and `unevaluatedProperties`, and users validate their
//! reports with any standard validator, so the tests must read it the same way.

use std::sync::OnceLock;

/// The checked-in schema's text.
pub const SCHEMA: &str = include_str!("../../docs/report.schema.json");

const URL: &str = "urn:tollgate:report.schema.json";

struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(SCHEMA).expect("docs/report.schema.json is JSON");
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(URL, schema)
            .expect("the schema is added");
        let index = compiler
            .compile(URL, &mut schemas)
            .unwrap_or_else(|e| panic!("docs/report.schema.json does not compile: {e:#}"));
        Compiled { schemas, index }
    })
}

/// Why `report` does not validate, every error with its JSON pointer; `None` when it
/// does.
pub fn errors(report: &serde_json::Value) -> Option<String> {
    let c = compiled();
    c.schemas
        .validate(report, c.index)
        .err()
        .map(|e| format!("{e:#}"))
}

/// Panics, naming every error, unless `report` validates against the schema.
#[track_caller]
pub fn assert_valid(report: &serde_json::Value) {
    if let Some(errors) = errors(report) {
        panic!("the report does not validate against docs/report.schema.json:\n{errors}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> serde_json::Value {
        json!({
            "scan_id": "scan-1", "partition": "aws", "account": "123456789012",
            "regions": ["us-east-1"],
            "started_at": "2026-12-03T06:37:18.671Z", "finished_at": "2026-12-03T06:37:24Z",
            "datasets": {"kms-keys": {"status": "complete", "reasons": [], "coverage": [
                {"resource_type": "AWS::KMS::Key", "account": "123456789012",
                 "region": "us-east-1", "status": "complete", "count": 1}],
                "items": [{"resource_type": "AWS::KMS::Key", "id": "k",
                    "arn": "arn:aws:kms:us-east-1:123456789012:key/k",
                    "account": "123456789012", "region": "us-east-1", "tags": {},
                    "properties": {"KeyId": "k"}, "key_id": "k", "key_manager": null,
                    "key_state": "Enabled", "last_used_at": null}]}},
            "throttling": null
        })
    }

    #[test]
    fn a_minimal_account_report_validates() {
        assert_valid(&minimal());
    }

    #[test]
    fn a_report_that_breaks_the_model_does_not_validate() {
        type Break = fn(&mut serde_json::Value);
        let breaks: [(&str, Break); 6] = [
            ("an unknown status", |r| {
                r["datasets"]["kms-keys"]["status"] = json!("done");
            }),
            ("an item without tags", |r| {
                let item = r["datasets"]["kms-keys"]["items"][0]
                    .as_object_mut()
                    .unwrap();
                item.remove("tags");
            }),
            ("a dataset field missing", |r| {
                let item = r["datasets"]["kms-keys"]["items"][0]
                    .as_object_mut()
                    .unwrap();
                item.remove("key_state");
            }),
            ("an unknown item field", |r| {
                r["datasets"]["kms-keys"]["items"][0]["colour"] = json!("red");
            }),
            ("an unknown top-level field", |r| r["extra"] = json!(1)),
            ("a malformed account", |r| r["account"] = json!("12345")),
        ];
        for (what, breaks) in breaks {
            let mut report = minimal();
            breaks(&mut report);
            assert!(errors(&report).is_some(), "{what} validated");
        }
    }

    #[test]
    fn a_tags_only_item_needs_no_dataset_fields() {
        let mut report = minimal();
        report["datasets"]["tags-only"] = json!({"status": "complete", "reasons": [],
            "coverage": [], "items": [{"resource_type": "AWS::KMS::Key", "id": "x",
            "arn": "arn:aws:kms:us-east-1:123456789012:key/x", "account": "123456789012",
            "region": "us-east-1", "tags": {"team": "a"}, "properties": {},
            "coverage": "tags-only"}]});
        assert_valid(&report);
    }
}
