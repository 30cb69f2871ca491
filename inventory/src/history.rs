//! One resource's history as a reader shows it: its current row and every version,
//! each with the fields that changed from the version before (`tollgate history`,
//! `GET /v1/resources/history` and the live page all read this one shape, so the three
//! never disagree about what changed).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{ResourceRow, VersionRow};
use crate::rules::changed_fields;

/// A resource's current row (gone or not) and its versions, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceHistory {
    /// The current view's row; `None` when only versions remain.
    pub resource: Option<ResourceRow>,
    pub versions: Vec<Version>,
}

/// One version and what changed to make it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Version {
    #[serde(flatten)]
    pub row: VersionRow,
    /// The fields that differ from the previous version (`tags.env`, `arn`); empty for
    /// the first.
    pub changed: Vec<String>,
}

impl ResourceHistory {
    /// The history of a resource, or `None` when the store never held it (no row and no
    /// version).
    pub fn new(resource: Option<ResourceRow>, rows: Vec<VersionRow>) -> Option<ResourceHistory> {
        if resource.is_none() && rows.is_empty() {
            return None;
        }
        let empty = Map::new();
        let object = |value: &Value| value.as_object().unwrap_or(&empty).clone();
        let mut versions: Vec<Version> = Vec::with_capacity(rows.len());
        for row in rows {
            let changed = versions.last().map_or_else(Vec::new, |before| {
                changed_fields(
                    (
                        &before.row.arn,
                        &object(&before.row.tags),
                        &object(&before.row.properties),
                    ),
                    (&row.arn, &object(&row.tags), &object(&row.properties)),
                )
            });
            versions.push(Version { row, changed });
        }
        Some(ResourceHistory { resource, versions })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ScanId;
    use serde_json::json;

    fn version(scan: i64, arn: Option<&str>, tags: Value, properties: Value) -> VersionRow {
        VersionRow {
            scan: ScanId(scan),
            seen_at: format!("2026-12-0{scan}T00:00:00.000Z"),
            arn: arn.map(str::to_owned),
            tags,
            properties,
        }
    }

    #[test]
    fn each_version_names_the_fields_that_changed_from_the_one_before() {
        let history = ResourceHistory::new(
            None,
            vec![
                version(1, Some("a"), json!({"env": "dev"}), json!({"Size": 1})),
                version(2, Some("a"), json!({"env": "prod"}), json!({"Size": 1})),
                version(
                    3,
                    Some("b"),
                    json!({"env": "prod"}),
                    json!({"Size": 2, "New": true}),
                ),
            ],
        )
        .unwrap();
        let changed: Vec<&[String]> = history.versions.iter().map(|v| &v.changed[..]).collect();
        assert_eq!(
            changed,
            [
                &[][..],
                &["tags.env".to_string()][..],
                &[
                    "arn".to_string(),
                    "properties.New".to_string(),
                    "properties.Size".to_string()
                ][..],
            ]
        );
    }

    #[test]
    fn a_resource_never_stored_has_no_history() {
        assert_eq!(ResourceHistory::new(None, vec![]), None);
    }

    #[test]
    fn a_version_serializes_flat_with_its_changed_fields() {
        let history =
            ResourceHistory::new(None, vec![version(1, None, json!({}), json!({}))]).unwrap();
        let value = serde_json::to_value(&history).unwrap();
        assert_eq!(value["versions"][0]["scan"], 1);
        assert_eq!(value["versions"][0]["changed"], json!([]));
        assert_eq!(value["resource"], Value::Null);
    }
}
