//! Every scenario, written once over an [`Engine`] and run by `sqlite.rs` and
//! `postgres.rs`.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use tollgate_inventory::{
    ChangeFilter, ChangeKind, ChangeOrder, InventoryErrorKind, PageSize, ResourceFilter,
    ResourceKey, ScanMeta, Since, Store, TypePattern,
};

use super::*;

fn all_resources(
    store: &mut Store,
    mut filter: ResourceFilter,
) -> Vec<tollgate_inventory::ResourceRow> {
    let mut rows = Vec::new();
    filter.page_size = max_page();
    loop {
        let page = store.resources(&filter).unwrap();
        rows.extend(page.rows);
        match page.next {
            Some(next) => filter.cursor = Some(next),
            None => return rows,
        }
    }
}

fn changes_since(
    store: &mut Store,
    scan: tollgate_inventory::ScanId,
) -> Vec<tollgate_inventory::ChangeRow> {
    store
        .changes(&ChangeFilter {
            since: Some(Since::AfterScan(scan)),
            page_size: max_page(),
            ..ChangeFilter::default()
        })
        .unwrap()
        .rows
}

fn max_page() -> PageSize {
    PageSize::new(PageSize::MAX).unwrap()
}

/// The resource model of an item, as a resource row serializes it.
fn model(value: &Value) -> Value {
    json!({
        "resource_type": value["resource_type"], "id": value["id"], "arn": value["arn"],
        "account": value["account"], "region": value["region"], "tags": value["tags"],
        "properties": value["properties"],
    })
}

pub fn round_trip_stores_every_item_as_a_resource_row(engine: &dyn Engine) {
    let items = [
        bucket("logs", json!({"env": "prod"})),
        item(
            "AWS::DynamoDB::Table",
            "orders",
            ACCOUNT,
            REGION,
            json!({}),
            json!({"TableName": "orders", "SSESpecification": {"SSEEnabled": true}}),
        ),
        item(
            "AWS::KMS::Key",
            "k-1",
            ACCOUNT,
            REGION,
            json!({"team": "a"}),
            json!({"KeyId": "k-1", "Enabled": true}),
        ),
        item(
            "AWS::IAM::Role",
            "admin",
            ACCOUNT,
            "global",
            json!({}),
            json!({"RoleName": "admin", "Path": "/"}),
        ),
    ];
    let report = account_report(
        ACCOUNT,
        "2026-12-01T00:00:00Z",
        json!({
            "s3-buckets": dataset("complete", vec![items[0].clone()], vec![coverage("AWS::S3::Bucket", ACCOUNT, REGION, "complete", 1)]),
            "dynamodb-tables": dataset("complete", vec![items[1].clone()], vec![coverage("AWS::DynamoDB::Table", ACCOUNT, REGION, "complete", 1)]),
            "kms-keys": dataset("complete", vec![items[2].clone()], vec![coverage("AWS::KMS::Key", ACCOUNT, REGION, "complete", 1)]),
            "AWS::IAM::Role": dataset("complete", vec![items[3].clone()], vec![coverage("AWS::IAM::Role", ACCOUNT, "global", "complete", 1)]),
        }),
    );
    let mut store = engine.open();
    let summary = store.write_report(&report).unwrap();
    assert_eq!(summary.counts.resources_written, 4);
    assert_eq!(summary.counts.added, 4);
    assert_eq!(summary.accounts, 1);
    let rows = all_resources(&mut store, ResourceFilter::default());
    let stored: BTreeSet<String> = rows
        .iter()
        .map(|row| model(&serde_json::to_value(row).unwrap()).to_string())
        .collect();
    let expected: BTreeSet<String> = items.iter().map(|item| model(item).to_string()).collect();
    assert_eq!(stored, expected);
    let table = rows.iter().find(|row| row.id == "orders").unwrap();
    assert_eq!(table.fields.value()["item_count"], json!(3));
    assert_eq!(table.first_seen, "2026-12-01T00:00:00.000Z");
    assert_eq!(table.gone_since, None);
    assert_eq!(engine.scalar("SELECT count(*) FROM coverage"), 4);
    assert_eq!(engine.scalar("SELECT count(*) FROM scan_accounts"), 1);
    assert_eq!(
        engine.scalar("SELECT count(*) FROM scans WHERE status = 'complete' AND exit_code = 0"),
        1
    );
}

pub fn a_second_scan_records_additions_modifications_and_proven_removals(engine: &dyn Engine) {
    let mut store = engine.open();
    let first = store
        .write_report(&s3_report(
            "2026-12-01T00:00:00Z",
            vec![
                bucket("a", json!({"env": "dev"})),
                bucket("b", json!({"env": "dev"})),
                bucket("c", json!({})),
            ],
            "complete",
        ))
        .unwrap();
    let second = store
        .write_report(&s3_report(
            "2026-12-02T00:00:00Z",
            vec![
                bucket("a", json!({"env": "dev"})),
                bucket("b", json!({"env": "prod"})),
                bucket("d", json!({})),
            ],
            "complete",
        ))
        .unwrap();
    assert_eq!(
        (
            second.counts.added,
            second.counts.modified,
            second.counts.removed
        ),
        (1, 1, 1)
    );
    let mut changes: Vec<(ChangeKind, String, Vec<String>)> = changes_since(&mut store, first.scan)
        .into_iter()
        .map(|change| (change.kind, change.id, change.detail))
        .collect();
    changes.sort();
    assert_eq!(
        changes,
        [
            (ChangeKind::Added, "d".to_string(), vec![]),
            (
                ChangeKind::Modified,
                "b".to_string(),
                vec!["tags.env".to_string()]
            ),
            (ChangeKind::Removed, "c".to_string(), vec![]),
        ]
    );
    let current: Vec<String> = all_resources(&mut store, ResourceFilter::default())
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(current, ["a", "b", "d"]);
    let with_gone = all_resources(
        &mut store,
        ResourceFilter {
            include_gone: true,
            ..ResourceFilter::default()
        },
    );
    let gone = with_gone.iter().find(|row| row.id == "c").unwrap();
    assert_eq!(gone.gone_since.as_deref(), Some("2026-12-02T00:00:00.000Z"));
    let history = store
        .history(&ResourceKey {
            account: ACCOUNT.into(),
            region: REGION.into(),
            resource_type: "AWS::S3::Bucket".into(),
            id: "b".into(),
        })
        .unwrap();
    let tags: Vec<&Value> = history.iter().map(|version| &version.tags).collect();
    assert_eq!(tags, [&json!({"env": "dev"}), &json!({"env": "prod"})]);
    assert_eq!(history[0].scan, first.scan);
    assert_eq!(history[1].scan, second.scan);
    // A resource that never changed has one version: its first sighting.
    let unchanged = store
        .history(&ResourceKey {
            account: ACCOUNT.into(),
            region: REGION.into(),
            resource_type: "AWS::S3::Bucket".into(),
            id: "a".into(),
        })
        .unwrap();
    assert_eq!(unchanged.len(), 1);
    assert_eq!(
        (unchanged[0].scan, &unchanged[0].tags),
        (first.scan, &json!({"env": "dev"}))
    );
    assert_eq!(engine.scalar("SELECT count(*) FROM resource_versions"), 2);
    // One resource's current row, by its key: gone or not, and nothing for a stranger.
    let key = |id: &str| ResourceKey {
        account: ACCOUNT.into(),
        region: REGION.into(),
        resource_type: "AWS::S3::Bucket".into(),
        id: id.into(),
    };
    let current = store.resource(&key("b")).unwrap().unwrap();
    assert_eq!(
        (current.id.as_str(), current.tags.value(), current.last_scan),
        ("b", json!({"env": "prod"}), second.scan)
    );
    let gone = store.resource(&key("c")).unwrap().unwrap();
    assert!(gone.gone_since.is_some(), "{gone:?}");
    assert_eq!(store.resource(&key("never-stored")).unwrap(), None);
}

pub fn an_incomplete_listing_leaves_absent_resources_and_says_not_verified(engine: &dyn Engine) {
    for status in [
        "partial",
        "failed",
        "skipped",
        "denied",
        "cancelled",
        "tags-only",
    ] {
        let mut store = engine.open();
        let id = format!("kept-{status}");
        let first = store
            .write_report(&s3_report(
                "2026-12-01T00:00:00Z",
                vec![bucket(&id, json!({}))],
                "complete",
            ))
            .unwrap();
        let second = store
            .write_report(&s3_report("2026-12-02T00:00:00Z", vec![], status))
            .unwrap();
        assert_eq!(second.counts.removed, 0, "{status}");
        let rows = all_resources(&mut store, ResourceFilter::default());
        assert!(
            rows.iter()
                .any(|row| row.id == id && row.gone_since.is_none()),
            "{status}"
        );
        let changes = changes_since(&mut store, first.scan);
        let mine: Vec<_> = changes.iter().filter(|change| change.id == id).collect();
        assert_eq!(mine.len(), 1, "{status}: {changes:?}");
        assert_eq!(mine[0].kind, ChangeKind::NotVerified);
        assert_eq!(mine[0].detail, [format!("coverage {status}")]);
    }
    // A type the later scan did not list at all.
    let mut store = engine.open();
    let before = store
        .write_report(&account_report(
            OTHER,
            "2026-12-03T00:00:00Z",
            json!({"kms-keys": dataset("complete",
                vec![item("AWS::KMS::Key", "k", OTHER, REGION, json!({}), json!({}))],
                vec![coverage("AWS::KMS::Key", OTHER, REGION, "complete", 1)])}),
        ))
        .unwrap();
    store
        .write_report(&account_report(
            OTHER,
            "2026-12-04T00:00:00Z",
            json!({"s3-buckets": dataset("complete", vec![], vec![coverage("AWS::S3::Bucket", OTHER, REGION, "complete", 0)])}),
        ))
        .unwrap();
    let changes = changes_since(&mut store, before.scan);
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].kind, changes[0].detail.clone()),
        (ChangeKind::NotVerified, vec!["not covered".to_string()])
    );
}

pub fn a_resource_seen_only_tags_only_is_never_removed(engine: &dyn Engine) {
    let mut sweep_item = item(
        "AWS::EC2::Volume",
        "vol-1",
        ACCOUNT,
        REGION,
        json!({"env": "prod"}),
        json!({}),
    );
    sweep_item["coverage"] = json!("tags-only");
    let sweep = |items: Vec<Value>| {
        dataset(
            "complete",
            items,
            vec![coverage(
                "AWS::ResourceGroupsTagging::Sweep",
                ACCOUNT,
                REGION,
                "complete",
                1,
            )],
        )
    };
    let mut store = engine.open();
    let first = store
        .write_report(&account_report(
            ACCOUNT,
            "2026-12-01T00:00:00Z",
            json!({"tags-only": sweep(vec![sweep_item])}),
        ))
        .unwrap();
    let row = all_resources(&mut store, ResourceFilter::default()).remove(0);
    assert!(row.tags_only);
    // Its tag removed, it vanishes from the sweep; even a complete listing of its type
    // (here, one that happened to be empty) does not prove it gone.
    store
        .write_report(&account_report(
            ACCOUNT,
            "2026-12-02T00:00:00Z",
            json!({"tags-only": sweep(vec![]),
                   "AWS::EC2::Volume": dataset("complete", vec![], vec![coverage("AWS::EC2::Volume", ACCOUNT, REGION, "complete", 0)])}),
        ))
        .unwrap();
    let rows = all_resources(&mut store, ResourceFilter::default());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].gone_since, None);
    let changes = changes_since(&mut store, first.scan);
    assert_eq!(changes[0].kind, ChangeKind::NotVerified);
    assert_eq!(changes[0].detail, ["tags-only sighting"]);
}

pub fn a_newer_schema_is_refused_and_left_unchanged(engine: &dyn Engine) {
    drop(engine.open());
    engine.execute("UPDATE tollgate_schema SET version = 99");
    let err = Store::open(&engine.url()).unwrap_err();
    assert_eq!(err.kind(), InventoryErrorKind::SchemaTooNew);
    let text = err.to_string();
    assert!(text.contains("schema version 99"), "{text}");
    assert!(text.contains("version 1 this tollgate knows"), "{text}");
    assert!(text.contains("upgrade tollgate"), "{text}");
    assert_eq!(
        engine.scalar("SELECT max(version) FROM tollgate_schema"),
        99
    );
}

pub fn an_older_schema_is_migrated(engine: &dyn Engine) {
    // A store at version 0: the version table exists, empty, and nothing else.
    engine.execute("CREATE TABLE tollgate_schema (version INTEGER NOT NULL)");
    let mut store = engine.open();
    assert_eq!(
        store.schema_version().unwrap(),
        tollgate_inventory::schema::LATEST
    );
    store
        .write_report(&s3_report(
            "2026-12-01T00:00:00Z",
            vec![bucket("a", json!({}))],
            "complete",
        ))
        .unwrap();
    drop(store);
    // Opening again migrates nothing and keeps the rows.
    let mut again = engine.open();
    assert_eq!(
        all_resources(&mut again, ResourceFilter::default()).len(),
        1
    );
    assert_eq!(engine.scalar("SELECT count(*) FROM tollgate_schema"), 1);
}

pub fn two_writers_at_once_lose_no_row(engine: &dyn Engine) {
    const REPORTS: usize = 4;
    const ITEMS: usize = 500;
    let accounts = ["333333333333", "444444444444"];
    std::thread::scope(|scope| {
        for account in accounts {
            scope.spawn(move || {
                let mut store = engine.open();
                for n in 0..REPORTS {
                    let report = tollgate_inventory::bench::synthetic_report(
                        account,
                        ITEMS * (n + 1),
                        &format!("2026-12-0{}T00:00:00Z", n + 1),
                        "prod",
                    );
                    store
                        .write_report(&report)
                        .unwrap_or_else(|err| panic!("{account}: {err}"));
                }
            });
        }
    });
    let mut store = engine.open();
    for account in accounts {
        let rows = all_resources(
            &mut store,
            ResourceFilter {
                accounts: vec![account.into()],
                ..ResourceFilter::default()
            },
        );
        assert_eq!(rows.len(), ITEMS * REPORTS, "{account}");
    }
    assert_eq!(
        engine.scalar("SELECT count(*) FROM scans WHERE status = 'complete'"),
        (2 * REPORTS) as i64
    );
    assert_eq!(
        engine.scalar("SELECT count(*) FROM changes WHERE kind = 'added'"),
        (2 * ITEMS * REPORTS) as i64
    );
}

pub fn a_crash_mid_account_leaves_nothing_of_it(engine: &dyn Engine) {
    let first = s3_report(
        "2026-12-01T00:00:00Z",
        vec![bucket("a", json!({}))],
        "complete",
    );
    let mut second = s3_report(
        "2026-12-01T00:00:00Z",
        vec![bucket("z", json!({}))],
        "complete",
    );
    second["account"] = json!(OTHER);
    second["datasets"]["s3-buckets"]["items"][0]["account"] = json!(OTHER);
    second["datasets"]["s3-buckets"]["coverage"][0]["account"] = json!(OTHER);
    let mut store = engine.open();
    let scan = store
        .begin_scan(&ScanMeta {
            report_scan_id: Some("org".into()),
            started_at: "2026-12-01T00:00:00Z".into(),
            caller_account: Some(ACCOUNT.into()),
            organization: true,
            options: json!({"types": ["AWS::S3::Bucket"]}),
        })
        .unwrap();
    store.write_account(scan, &first).unwrap();
    store.fail_next_write_before_commit();
    store.write_account(scan, &second).unwrap_err();
    drop(store);
    let mut reopened = engine.open();
    let rows = all_resources(&mut reopened, ResourceFilter::default());
    assert_eq!(
        rows.iter().map(|row| row.id.as_str()).collect::<Vec<_>>(),
        ["a"]
    );
    for table in [
        "resources",
        "coverage",
        "changes",
        "resource_versions",
        "scan_accounts",
    ] {
        assert_eq!(
            engine.scalar(&format!(
                "SELECT count(*) FROM {table} WHERE account = '{OTHER}'"
            )),
            0,
            "{table}"
        );
    }
    assert_eq!(
        engine.scalar("SELECT count(*) FROM scans WHERE status = 'running'"),
        1
    );
    // The next scan completes.
    let summary = reopened.write_report(&second).unwrap();
    assert_eq!(summary.counts.added, 1);
}

pub fn filters_and_pages_cover_every_row_once(engine: &dyn Engine) {
    let mut store = engine.open();
    let buckets: Vec<Value> = (0..25)
        .map(|n| {
            bucket(
                &format!("b{n:02}"),
                json!({"env": if n % 5 == 0 { "prod" } else { "dev" }}),
            )
        })
        .collect();
    let mut report = s3_report("2026-12-01T00:00:00Z", buckets, "complete");
    report["datasets"]["kms-keys"] = dataset(
        "complete",
        vec![item(
            "AWS::KMS::Key",
            "k",
            ACCOUNT,
            "us-east-1",
            json!({"env": "prod"}),
            json!({}),
        )],
        vec![coverage(
            "AWS::KMS::Key",
            ACCOUNT,
            "us-east-1",
            "complete",
            1,
        )],
    );
    store.write_report(&report).unwrap();
    let mut filter = ResourceFilter {
        page_size: PageSize::new(10).unwrap(),
        ..ResourceFilter::default()
    };
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.resources(&filter).unwrap();
        pages += 1;
        seen.extend(page.rows.into_iter().map(|row| row.id));
        match page.next {
            Some(next) => filter.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 26);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 26);
    let count = |store: &mut Store, filter: ResourceFilter| all_resources(store, filter).len();
    let s3 = vec![TypePattern::parse("AWS::S3::*").unwrap()];
    assert_eq!(
        count(
            &mut store,
            ResourceFilter {
                types: s3.clone(),
                ..ResourceFilter::default()
            }
        ),
        25
    );
    let prod = vec![("env".to_string(), "prod".to_string())];
    assert_eq!(
        count(
            &mut store,
            ResourceFilter {
                tags: prod.clone(),
                ..ResourceFilter::default()
            }
        ),
        6
    );
    assert_eq!(
        count(
            &mut store,
            ResourceFilter {
                types: s3,
                tags: prod,
                ..ResourceFilter::default()
            }
        ),
        5
    );
    assert_eq!(
        count(
            &mut store,
            ResourceFilter {
                regions: vec!["us-east-1".into()],
                ..ResourceFilter::default()
            }
        ),
        1
    );
    assert_eq!(
        count(
            &mut store,
            ResourceFilter {
                accounts: vec![OTHER.into()],
                ..ResourceFilter::default()
            }
        ),
        0
    );
    let by_time = store
        .changes(&ChangeFilter {
            since: Some(Since::At("2026-12-01T00:00:00.000Z".into())),
            types: vec![TypePattern::parse("AWS::KMS::Key").unwrap()],
            ..ChangeFilter::default()
        })
        .unwrap();
    assert_eq!(by_time.rows.len(), 1);
    let later = store
        .changes(&ChangeFilter {
            since: Some(Since::At("2026-12-02T00:00:00.000Z".into())),
            ..ChangeFilter::default()
        })
        .unwrap();
    assert!(later.rows.is_empty());
    // Newest first, page by page: the same changes, in reverse, each once.
    let oldest_first: Vec<i64> = changes_since(&mut store, tollgate_inventory::ScanId(0))
        .iter()
        .map(|c| c.change)
        .collect();
    let mut newest_first = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .changes(&ChangeFilter {
                order: ChangeOrder::NewestFirst,
                page_size: PageSize::new(1).unwrap(),
                cursor,
                ..ChangeFilter::default()
            })
            .unwrap();
        newest_first.extend(page.rows.iter().map(|c| c.change));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(oldest_first.len() > 1, "{oldest_first:?}");
    assert_eq!(
        newest_first,
        oldest_first.iter().rev().copied().collect::<Vec<_>>()
    );
}

pub fn an_organization_report_commits_account_by_account(engine: &dyn Engine) {
    let mut other = s3_report("2026-12-01T00:00:00Z", vec![], "complete");
    other["account"] = json!(OTHER);
    other["datasets"]["s3-buckets"]["items"] = json!([item(
        "AWS::S3::Bucket",
        "o",
        OTHER,
        REGION,
        json!({}),
        json!({})
    )]);
    other["datasets"]["s3-buckets"]["coverage"] =
        json!([coverage("AWS::S3::Bucket", OTHER, REGION, "partial", 1)]);
    other["datasets"]["s3-buckets"]["status"] = json!("partial");
    let report = organization_report(
        "2026-12-01T00:00:00Z",
        vec![
            s3_report(
                "2026-12-01T00:00:00Z",
                vec![bucket("a", json!({}))],
                "complete",
            ),
            other,
        ],
    );
    let mut store = engine.open();
    let summary = store.write_report(&report).unwrap();
    assert_eq!(summary.accounts, 2);
    assert_eq!(summary.counts.added, 2);
    assert_eq!(engine.scalar("SELECT count(*) FROM scan_accounts"), 2);
    assert_eq!(engine.scalar("SELECT exit_code FROM scans"), 2);
    assert_eq!(
        engine.scalar("SELECT count(*) FROM scans WHERE caller_account = '111111111111'"),
        1
    );
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["added"], json!(2));
    assert!(!json["url"].as_str().unwrap().is_empty());
}

pub fn two_writers_of_one_account_at_once_both_commit(engine: &dyn Engine) {
    // Each writer stores its own buckets under one account: the account lock (or
    // SQLite's write lock) serialises them, so neither fails on the other's rows.
    std::thread::scope(|scope| {
        for writer in ["x", "y"] {
            scope.spawn(move || {
                let mut store = engine.open();
                for n in 0..3 {
                    let buckets = (0..50)
                        .map(|i| bucket(&format!("{writer}{n}-{i}"), json!({})))
                        .collect();
                    // Partial coverage: neither writer removes the other's buckets.
                    let report = s3_report("2026-12-01T00:00:00Z", buckets, "partial");
                    store
                        .write_report(&report)
                        .unwrap_or_else(|err| panic!("{writer}: {err}"));
                }
            });
        }
    });
    let mut store = engine.open();
    assert_eq!(
        all_resources(&mut store, ResourceFilter::default()).len(),
        300
    );
    assert_eq!(engine.scalar("SELECT count(*) FROM scan_accounts"), 6);
}
