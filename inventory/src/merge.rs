//! One account's write, planned in memory: which rows to upsert, which versions and
//! changes to record, which resources are proven gone. Both backends load the account's
//! stored resources, call [`plan`], and apply the plan in one transaction, so the rules
//! (`rules.rs`) live once, whatever the engine.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::model::{ChangeKind, ResourceKey, WriteCounts};
use crate::report::{AccountDoc, Item};
use crate::rules::{changed_fields, judge_absence, Absence, CoverageIndex};

/// A resource as the store holds it, before this write.
#[derive(Debug, Clone)]
pub struct Stored {
    pub arn: Option<String>,
    pub tags: Map<String, Value>,
    pub properties: Map<String, Value>,
    pub fields: Map<String, Value>,
    pub gone: bool,
    pub tags_only: bool,
    /// The scan and time of the first sighting (the first version, until a version row
    /// is written).
    pub first_scan: i64,
    pub first_seen: String,
    /// `resource_versions` holds the resource's versions.
    pub versioned: bool,
}

/// A resource's state before its first change, written as its first version.
#[derive(Debug, Clone)]
pub struct FirstVersion {
    pub scan: i64,
    pub seen_at: String,
    pub arn: Option<String>,
    pub tags: String,
    pub properties: String,
}

/// A row to insert or update in `resources` (first_seen is kept on update).
#[derive(Debug, Clone)]
pub struct Upsert {
    pub key: ResourceKey,
    pub arn: Option<String>,
    pub tags: String,
    pub properties: String,
    pub fields: String,
    pub tags_only: bool,
    /// Also write a `resource_versions` row.
    pub new_version: bool,
    /// Before it, the resource's first version (a resource that never changed has no
    /// version rows: its row in `resources` is its one version).
    pub first_version: Option<FirstVersion>,
    /// `resource_versions` holds the resource's versions after this write.
    pub versioned: bool,
    /// The store held the key before this write (gone or not).
    pub existed: bool,
}

/// A row to insert in `changes`.
#[derive(Debug, Clone)]
pub struct PlannedChange {
    pub key: ResourceKey,
    pub kind: ChangeKind,
    pub detail: Vec<String>,
}

/// Everything one account's write does.
#[derive(Debug, Default)]
pub struct Plan {
    pub upserts: Vec<Upsert>,
    pub gone: Vec<ResourceKey>,
    pub changes: Vec<PlannedChange>,
    pub counts: WriteCounts,
}

/// The primary key's column order: (account, resource_type, region, id).
fn storage_order(key: &ResourceKey) -> (&str, &str, &str, &str) {
    (&key.account, &key.resource_type, &key.region, &key.id)
}

fn to_json(object: &Map<String, Value>) -> String {
    // A Map of Values always serializes.
    serde_json::to_string(object).unwrap_or_else(|_| "{}".to_string())
}

/// Plans the write of `doc` over the `stored` resources of its accounts.
pub fn plan(doc: &AccountDoc, stored: &HashMap<ResourceKey, Stored>) -> Plan {
    let mut out = Plan::default();
    let mut seen: HashSet<&ResourceKey> = HashSet::with_capacity(doc.items.len());
    for item in &doc.items {
        if !seen.insert(&item.key) {
            continue; // one resource listed twice in a report: the first sighting counts
        }
        plan_sighting(&mut out, item, stored.get(&item.key));
    }
    // In primary-key order: index inserts become appends, and one type of one account
    // lands on neighbouring pages (the query of `--accounts A --types T` reads fewer).
    out.upserts
        .sort_unstable_by(|a, b| storage_order(&a.key).cmp(&storage_order(&b.key)));
    plan_absences(&mut out, doc, stored, &seen);
    out
}

/// Adds to `out` the upsert, counts and change of one sighted `item`, stored before as
/// `previous` (if at all).
fn plan_sighting(out: &mut Plan, item: &Item, previous: Option<&Stored>) {
    out.counts.resources_written += 1;
    // A tags-only sighting of a resource known natively refreshes its tags only.
    let keep_native = item.tags_only && previous.is_some_and(|old| !old.tags_only);
    let (arn, properties, fields) = match previous {
        Some(old) if keep_native => (&old.arn, &old.properties, to_json(&old.fields)),
        _ => (&item.arn, &*item.properties, item.fields.to_json()),
    };
    let tags_only = item.tags_only && previous.is_none_or(|old| old.tags_only);
    let (kind, detail) = classify(previous, arn, &item.tags, properties);
    // Versions are written from a resource's first change on: until then its row in
    // `resources` is its one version (history reads it from there), which spares
    // every first sighting a second copy of the resource.
    let new_version = previous.is_some() && kind.is_some() && !detail.is_empty();
    let first_version = previous
        .filter(|old| new_version && !old.versioned)
        .map(first_version_of);
    let versioned = new_version || previous.is_some_and(|old| old.versioned);
    match kind {
        Some(ChangeKind::Added) => out.counts.added += 1,
        Some(ChangeKind::Modified) => out.counts.modified += 1,
        _ => {}
    }
    if let Some(kind) = kind {
        out.changes.push(PlannedChange {
            key: item.key.clone(),
            kind,
            detail,
        });
    }
    out.upserts.push(Upsert {
        key: item.key.clone(),
        arn: arn.clone(),
        tags: to_json(&item.tags),
        properties: to_json(properties),
        fields,
        tags_only,
        new_version,
        first_version,
        versioned,
        existed: previous.is_some(),
    });
}

/// The change a sighting with this `arn`, `tags` and `properties` makes to `previous`
/// (none when nothing changed), and the fields it changed.
fn classify(
    previous: Option<&Stored>,
    arn: &Option<String>,
    tags: &Map<String, Value>,
    properties: &Map<String, Value>,
) -> (Option<ChangeKind>, Vec<String>) {
    let Some(old) = previous else {
        return (Some(ChangeKind::Added), Vec::new());
    };
    let fields_changed = changed_fields(
        (&old.arn, &old.tags, &old.properties),
        (arn, tags, properties),
    );
    if old.gone {
        (Some(ChangeKind::Added), fields_changed)
    } else if fields_changed.is_empty() {
        (None, Vec::new())
    } else {
        (Some(ChangeKind::Modified), fields_changed)
    }
}

/// A stored resource's state as its first version (written before its first change).
fn first_version_of(old: &Stored) -> FirstVersion {
    FirstVersion {
        scan: old.first_scan,
        seen_at: old.first_seen.clone(),
        arn: old.arn.clone(),
        tags: to_json(&old.tags),
        properties: to_json(&old.properties),
    }
}

/// Adds to `out` the removals and not-verified changes of the `stored` resources that
/// `doc` did not list (`seen`), judged by `doc`'s coverage, in key order.
fn plan_absences(
    out: &mut Plan,
    doc: &AccountDoc,
    stored: &HashMap<ResourceKey, Stored>,
    seen: &HashSet<&ResourceKey>,
) {
    let coverage = CoverageIndex::new(doc.coverage.iter().map(|line| {
        (
            line.account.as_str(),
            line.region.as_str(),
            line.resource_type.as_str(),
            line.status,
        )
    }));
    let mut absent: Vec<(&ResourceKey, &Stored)> = stored
        .iter()
        .filter(|(key, old)| !old.gone && !seen.contains(key))
        .collect();
    absent.sort_by(|a, b| a.0.cmp(b.0));
    for (key, old) in absent {
        let status = coverage.get(&key.account, &key.region, &key.resource_type);
        match judge_absence(status, old.tags_only) {
            Absence::Removed => {
                out.counts.removed += 1;
                out.gone.push(key.clone());
                out.changes.push(PlannedChange {
                    key: key.clone(),
                    kind: ChangeKind::Removed,
                    detail: Vec::new(),
                });
            }
            Absence::NotVerified(why) => {
                out.counts.not_verified += 1;
                out.changes.push(PlannedChange {
                    key: key.clone(),
                    kind: ChangeKind::NotVerified,
                    detail: vec![why.describe()],
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CoverageStatus, ScanStatus};
    use crate::report::{CoverageLine, Fields, Item};
    use serde_json::json;
    use std::borrow::Cow;

    fn key(id: &str) -> ResourceKey {
        ResourceKey {
            account: "111111111111".into(),
            region: "eu-west-1".into(),
            resource_type: "AWS::S3::Bucket".into(),
            id: id.into(),
        }
    }

    fn item(id: &str, tags: Value, tags_only: bool) -> Item<'static> {
        Item {
            key: key(id),
            arn: None,
            tags: Cow::Owned(tags.as_object().unwrap().clone()),
            properties: Cow::Owned(if tags_only {
                Map::new()
            } else {
                json!({"BucketName": id}).as_object().unwrap().clone()
            }),
            fields: Fields::Owned(Map::new()),
            tags_only,
        }
    }

    fn stored(item: &Item) -> Stored {
        Stored {
            arn: item.arn.clone(),
            tags: item.tags.clone().into_owned(),
            properties: item.properties.clone().into_owned(),
            fields: Map::new(),
            gone: false,
            tags_only: item.tags_only,
            first_scan: 1,
            first_seen: "2026-12-01T00:00:00.000Z".into(),
            versioned: false,
        }
    }

    fn doc(items: Vec<Item<'static>>, status: CoverageStatus) -> AccountDoc<'static> {
        AccountDoc {
            account: "111111111111".into(),
            coverage: vec![CoverageLine {
                resource_type: "AWS::S3::Bucket".into(),
                account: "111111111111".into(),
                region: "eu-west-1".into(),
                status,
                reason: None,
                count: items.len() as u64,
            }],
            items,
            status: ScanStatus::Complete,
        }
    }

    #[test]
    fn a_new_resource_is_added_without_a_version_row_and_an_unchanged_one_writes_nothing_else() {
        let a = item("a", json!({}), false);
        let b = item("b", json!({}), false);
        let held = HashMap::from([(key("a"), stored(&a))]);
        let plan = plan(&doc(vec![a, b], CoverageStatus::Complete), &held);
        assert_eq!(plan.counts.added, 1);
        assert_eq!(plan.counts.resources_written, 2);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].key.id, "b");
        assert!(plan
            .upserts
            .iter()
            .all(|u| !u.new_version && !u.versioned && u.first_version.is_none()));
    }

    #[test]
    fn a_tag_change_is_a_modification_naming_the_tag() {
        let old = item("a", json!({"env": "dev"}), false);
        let held = HashMap::from([(key("a"), stored(&old))]);
        let plan = plan(
            &doc(
                vec![item("a", json!({"env": "prod"}), false)],
                CoverageStatus::Complete,
            ),
            &held,
        );
        assert_eq!(plan.counts.modified, 1);
        assert_eq!(plan.changes[0].kind, ChangeKind::Modified);
        assert_eq!(plan.changes[0].detail, ["tags.env"]);
        assert!(plan.upserts[0].new_version && plan.upserts[0].versioned);
        let first = plan.upserts[0]
            .first_version
            .as_ref()
            .expect("the state before the change");
        assert_eq!((first.scan, first.tags.as_str()), (1, r#"{"env":"dev"}"#));
        let mut versioned = stored(&old);
        versioned.versioned = true;
        let held = HashMap::from([(key("a"), versioned)]);
        let again = super::plan(
            &doc(
                vec![item("a", json!({"env": "prod"}), false)],
                CoverageStatus::Complete,
            ),
            &held,
        );
        assert!(
            again.upserts[0].first_version.is_none(),
            "written once only"
        );
    }

    #[test]
    fn an_absent_resource_is_removed_under_complete_coverage_only() {
        let old = item("a", json!({}), false);
        let held = HashMap::from([(key("a"), stored(&old))]);
        let complete = plan(&doc(vec![], CoverageStatus::Complete), &held);
        assert_eq!(complete.gone, [key("a")]);
        assert_eq!(complete.changes[0].kind, ChangeKind::Removed);
        for status in [
            CoverageStatus::Partial,
            CoverageStatus::Failed,
            CoverageStatus::Skipped,
            CoverageStatus::TagsOnly,
            CoverageStatus::Denied,
            CoverageStatus::Cancelled,
            CoverageStatus::Unsupported,
        ] {
            let unproven = plan(&doc(vec![], status), &held);
            assert!(unproven.gone.is_empty(), "{status:?}");
            assert_eq!(unproven.changes[0].kind, ChangeKind::NotVerified);
            assert_eq!(
                unproven.changes[0].detail,
                [format!("coverage {}", status.as_str())]
            );
        }
        let mut uncovered = doc(vec![], CoverageStatus::Complete);
        uncovered.coverage[0].resource_type = "AWS::KMS::Key".into();
        let uncovered = plan(&uncovered, &held);
        assert!(uncovered.gone.is_empty());
        assert_eq!(uncovered.changes[0].detail, ["not covered"]);
    }

    #[test]
    fn a_resource_seen_only_tags_only_is_not_removed_when_it_vanishes() {
        let old = item("a", json!({"env": "dev"}), true);
        let held = HashMap::from([(key("a"), stored(&old))]);
        let plan = plan(&doc(vec![], CoverageStatus::Complete), &held);
        assert!(plan.gone.is_empty());
        assert_eq!(plan.changes[0].kind, ChangeKind::NotVerified);
        assert_eq!(plan.changes[0].detail, ["tags-only sighting"]);
    }

    #[test]
    fn a_tags_only_sighting_of_a_native_resource_keeps_its_properties() {
        let native = item("a", json!({"env": "dev"}), false);
        let held = HashMap::from([(key("a"), stored(&native))]);
        let plan = plan(
            &doc(
                vec![item("a", json!({"env": "dev"}), true)],
                CoverageStatus::Complete,
            ),
            &held,
        );
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
        assert!(!plan.upserts[0].tags_only);
        assert_eq!(plan.upserts[0].properties, r#"{"BucketName":"a"}"#);
    }

    #[test]
    fn a_gone_resource_seen_again_is_added_again() {
        let old = item("a", json!({}), false);
        let mut held_row = stored(&old);
        held_row.gone = true;
        let held = HashMap::from([(key("a"), held_row)]);
        let plan = plan(&doc(vec![old], CoverageStatus::Complete), &held);
        assert_eq!(plan.changes[0].kind, ChangeKind::Added);
        assert_eq!(plan.counts.added, 1);
        let gone_twice = super::plan(&doc(vec![], CoverageStatus::Complete), &held);
        assert!(
            gone_twice.changes.is_empty(),
            "a gone resource is not removed twice"
        );
    }
}
