//! "Removed means proven gone": the pure decisions of a write, table-tested.
//!
//! A resource that a scan did not return is *gone* only when that scan listed its
//! account, region and type completely: anything less (a partial, failed, skipped,
//! denied, cancelled or tags-only listing, or a type or region the scan did not cover)
//! proves nothing, so the resource is left as it was and `changes` says `not_verified`.
//! A resource seen only through the tagging sweep is never removed: when its last tag is
//! removed it vanishes from `GetResources` while it still exists.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::model::CoverageStatus;

/// What becomes of a stored resource that a scan did not return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absence {
    /// Proven gone: mark `gone_since`, write a `removed` change.
    Removed,
    /// Not proven: leave the resource as it was, write a `not_verified` change.
    NotVerified(Unproven),
}

/// Why an absence proves nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unproven {
    /// The scan listed the type in that region, but not completely.
    Coverage(CoverageStatus),
    /// The scan did not list the type in that region at all.
    NotCovered,
    /// The resource was only ever seen through the tagging sweep.
    TagsOnlySighting,
}

impl Unproven {
    /// The reason written in the change's detail.
    pub fn describe(self) -> String {
        match self {
            Unproven::Coverage(status) => format!("coverage {}", status.as_str()),
            Unproven::NotCovered => "not covered".to_string(),
            Unproven::TagsOnlySighting => "tags-only sighting".to_string(),
        }
    }
}

/// Decides the fate of an absent resource from the scan's coverage for its account,
/// region and type (`None`: no coverage line) and whether it was only seen tags-only.
pub fn judge_absence(coverage: Option<CoverageStatus>, tags_only_sighting: bool) -> Absence {
    if tags_only_sighting {
        return Absence::NotVerified(Unproven::TagsOnlySighting);
    }
    match coverage {
        Some(CoverageStatus::Complete) => Absence::Removed,
        Some(other) => Absence::NotVerified(Unproven::Coverage(other)),
        None => Absence::NotVerified(Unproven::NotCovered),
    }
}

/// The coverage of one account document's scan, by (account, region, type). Several
/// lines for one of them (two datasets listing one type) are complete only if all are.
#[derive(Debug, Default)]
pub struct CoverageIndex {
    by_key: HashMap<(String, String, String), CoverageStatus>,
}

impl CoverageIndex {
    pub fn new<'a>(
        lines: impl IntoIterator<Item = (&'a str, &'a str, &'a str, CoverageStatus)>,
    ) -> Self {
        let mut by_key = HashMap::new();
        for (account, region, resource_type, status) in lines {
            by_key
                .entry((
                    account.to_string(),
                    region.to_string(),
                    resource_type.to_string(),
                ))
                .and_modify(|held: &mut CoverageStatus| {
                    if *held == CoverageStatus::Complete {
                        *held = status;
                    }
                })
                .or_insert(status);
        }
        CoverageIndex { by_key }
    }

    pub fn get(&self, account: &str, region: &str, resource_type: &str) -> Option<CoverageStatus> {
        self.by_key
            .get(&(
                account.to_string(),
                region.to_string(),
                resource_type.to_string(),
            ))
            .copied()
    }
}

/// The top-level fields that differ between two sightings: `arn`, `tags.KEY` for each
/// tag added, removed or changed, `properties.NAME` for each property. Empty when the
/// resource did not change (key order does not count).
pub fn changed_fields(
    old: (&Option<String>, &Map<String, Value>, &Map<String, Value>),
    new: (&Option<String>, &Map<String, Value>, &Map<String, Value>),
) -> Vec<String> {
    let mut fields = Vec::new();
    if old.0 != new.0 {
        fields.push("arn".to_string());
    }
    diff_object("tags", old.1, new.1, &mut fields);
    diff_object("properties", old.2, new.2, &mut fields);
    fields
}

fn diff_object(
    prefix: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    out: &mut Vec<String>,
) {
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        if old.get(name) != new.get(name) {
            out.push(format!("{prefix}.{name}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_complete_listing_proves_a_resource_gone() {
        use CoverageStatus::*;
        let table = [
            (Some(Complete), false, Absence::Removed),
            (
                Some(Partial),
                false,
                Absence::NotVerified(Unproven::Coverage(Partial)),
            ),
            (
                Some(Failed),
                false,
                Absence::NotVerified(Unproven::Coverage(Failed)),
            ),
            (
                Some(Unsupported),
                false,
                Absence::NotVerified(Unproven::Coverage(Unsupported)),
            ),
            (
                Some(Denied),
                false,
                Absence::NotVerified(Unproven::Coverage(Denied)),
            ),
            (
                Some(Skipped),
                false,
                Absence::NotVerified(Unproven::Coverage(Skipped)),
            ),
            (
                Some(Cancelled),
                false,
                Absence::NotVerified(Unproven::Coverage(Cancelled)),
            ),
            (
                Some(TagsOnly),
                false,
                Absence::NotVerified(Unproven::Coverage(TagsOnly)),
            ),
            (None, false, Absence::NotVerified(Unproven::NotCovered)),
        ];
        for (coverage, tags_only, expected) in table {
            assert_eq!(judge_absence(coverage, tags_only), expected, "{coverage:?}");
        }
    }

    #[test]
    fn a_tags_only_sighting_is_never_removed_even_under_complete_coverage() {
        for coverage in [
            Some(CoverageStatus::Complete),
            Some(CoverageStatus::TagsOnly),
            None,
        ] {
            assert_eq!(
                judge_absence(coverage, true),
                Absence::NotVerified(Unproven::TagsOnlySighting)
            );
        }
    }

    #[test]
    fn two_lines_for_one_type_are_complete_only_if_both_are() {
        use CoverageStatus::*;
        let index = CoverageIndex::new([
            ("1", "eu-west-1", "AWS::S3::Bucket", Complete),
            ("1", "eu-west-1", "AWS::S3::Bucket", Partial),
            ("1", "eu-west-1", "AWS::KMS::Key", Complete),
        ]);
        assert_eq!(
            index.get("1", "eu-west-1", "AWS::S3::Bucket"),
            Some(Partial)
        );
        assert_eq!(index.get("1", "eu-west-1", "AWS::KMS::Key"), Some(Complete));
        assert_eq!(index.get("1", "us-east-1", "AWS::KMS::Key"), None);
        assert_eq!(index.get("2", "eu-west-1", "AWS::KMS::Key"), None);
    }

    #[test]
    fn changed_fields_name_each_tag_and_property_that_differs() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        let arn = Some("arn:aws:s3:::b".to_string());
        let old_tags = obj(json!({"env": "dev", "team": "a"}));
        let new_tags = obj(json!({"team": "a", "env": "prod", "cost": "x"}));
        let props = obj(json!({"BucketName": "b", "Versioning": {"Status": "Enabled"}}));
        let new_props = obj(json!({"Versioning": {"Status": "Suspended"}, "BucketName": "b"}));
        let fields = changed_fields((&arn, &old_tags, &props), (&arn, &new_tags, &new_props));
        assert_eq!(fields, ["tags.cost", "tags.env", "properties.Versioning"]);
        let reordered = obj(json!({"team": "a", "env": "dev"}));
        assert!(changed_fields((&arn, &old_tags, &props), (&arn, &reordered, &props)).is_empty());
        assert_eq!(
            changed_fields((&None, &old_tags, &props), (&arn, &old_tags, &props)),
            ["arn"]
        );
    }
}
