//! The inventory on a real SQLite file in a temporary directory.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::{scenarios, Engine};
use tollgate_inventory::Store;

struct SqliteFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SqliteFile {
    fn new() -> SqliteFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("inventory.sqlite");
        SqliteFile { _dir: dir, path }
    }
}

impl Engine for SqliteFile {
    fn url(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn scalar(&self, sql: &str) -> i64 {
        let conn = rusqlite::Connection::open(&self.path).unwrap();
        conn.query_row(sql, [], |row| row.get::<_, Option<i64>>(0))
            .unwrap()
            .unwrap_or(0)
    }

    fn execute(&self, sql: &str) {
        std::fs::create_dir_all(self.path.parent().unwrap()).unwrap();
        rusqlite::Connection::open(&self.path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }
}

#[test]
fn round_trip_stores_every_item_as_a_resource_row() {
    scenarios::round_trip_stores_every_item_as_a_resource_row(&SqliteFile::new());
}

#[test]
fn a_second_scan_records_additions_modifications_and_proven_removals() {
    scenarios::a_second_scan_records_additions_modifications_and_proven_removals(&SqliteFile::new());
}

#[test]
fn an_incomplete_listing_leaves_absent_resources_and_says_not_verified() {
    scenarios::an_incomplete_listing_leaves_absent_resources_and_says_not_verified(
        &SqliteFile::new(),
    );
}

#[test]
fn a_resource_seen_only_tags_only_is_never_removed() {
    scenarios::a_resource_seen_only_tags_only_is_never_removed(&SqliteFile::new());
}

#[test]
fn a_newer_schema_is_refused_and_left_unchanged() {
    scenarios::a_newer_schema_is_refused_and_left_unchanged(&SqliteFile::new());
}

#[test]
fn an_older_schema_is_migrated() {
    scenarios::an_older_schema_is_migrated(&SqliteFile::new());
}

#[test]
fn two_writers_at_once_lose_no_row() {
    scenarios::two_writers_at_once_lose_no_row(&SqliteFile::new());
}

#[test]
fn two_writers_of_one_account_at_once_both_commit() {
    scenarios::two_writers_of_one_account_at_once_both_commit(&SqliteFile::new());
}

#[test]
fn a_crash_mid_account_leaves_nothing_of_it() {
    scenarios::a_crash_mid_account_leaves_nothing_of_it(&SqliteFile::new());
}

#[test]
fn filters_and_pages_cover_every_row_once() {
    scenarios::filters_and_pages_cover_every_row_once(&SqliteFile::new());
}

#[test]
fn an_organization_report_commits_account_by_account() {
    scenarios::an_organization_report_commits_account_by_account(&SqliteFile::new());
}

#[test]
fn the_file_is_0600_in_a_0700_directory_and_journals_in_wal() {
    let file = SqliteFile::new();
    let mut store = file.open();
    store
        .write_report(&common::s3_report(
            "2026-12-01T00:00:00Z",
            vec![common::bucket("a", serde_json::json!({}))],
            "complete",
        ))
        .unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file.path), 0o600);
    assert_eq!(mode(file.path.parent().unwrap()), 0o700);
    let wal = file.path.with_extension("sqlite-wal");
    assert!(wal.exists(), "a WAL file beside the store");
    assert_eq!(mode(&wal), 0o600);
    assert_eq!(store.redacted_url(), file.url());
}

#[test]
fn a_malformed_report_is_refused_with_its_path_and_nothing_is_written() {
    let file = SqliteFile::new();
    let mut store = file.open();
    let mut report = common::s3_report(
        "2026-12-01T00:00:00Z",
        vec![common::bucket("a", serde_json::json!({}))],
        "complete",
    );
    report["datasets"]["s3-buckets"]["coverage"][0]["status"] = serde_json::json!("mostly");
    let err = store.write_report(&report).unwrap_err();
    assert_eq!(
        err.kind(),
        tollgate_inventory::InventoryErrorKind::MalformedReport
    );
    assert!(
        err.to_string()
            .contains("datasets.s3-buckets.coverage[0].status"),
        "{err}"
    );
    assert_eq!(file.scalar("SELECT count(*) FROM scans"), 0);
}

#[test]
fn a_bare_path_opens_a_sqlite_store() {
    let file = SqliteFile::new();
    let store = Store::open(&file.path.display().to_string()).unwrap();
    assert!(file.path.exists());
    drop(store);
}
