//! Issue 34's must-show, as a user runs it: `tollgate discover --store` against a moto
//! server of the test's own, then `tollgate resources --json` and `tollgate changes
//! --json`, on a real SQLite file and on a real PostgreSQL (a schema of the test's own on
//! TOLLGATE_TEST_POSTGRES_URL's server, which scripts/test starts; without it the
//! PostgreSQL case prints SKIPPED).
//!
//! Three scans: the first stores what moto holds; between it and the second a bucket is
//! deleted and a table's tag changed (one removal, one modification); before the third
//! another bucket is deleted while a fault proxy fails every S3 ListBuckets, so S3's
//! coverage is not complete and nothing in S3 may be marked removed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::service_support::inventory::tag_table;
use serde_json::{json, Value};
use tollgate_testkit::fault_proxy::FaultProxy;
use tollgate_testkit::http::Call;
use tollgate_testkit::moto::{DedicatedMoto, Moto, MOTO_ACCOUNT};

const POSTGRES_URL: &str = "TOLLGATE_TEST_POSTGRES_URL";

fn command(args: &[&str], admission: &Path) -> std::process::Command {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(args).env("TOLLGATE_ADMISSION_DIR", admission);
    tollgate_testkit::emulator_env(&mut cmd);
    cmd
}

fn tollgate(args: &[&str], admission: &Path) -> Output {
    tollgate_testkit::cli::output(&mut command(args, admission))
}

fn scan_args(endpoint: &str, store: &str, report: &Path) -> Vec<String> {
    [
        "discover",
        "--endpoint-url",
        endpoint,
        "--regions",
        "us-east-1",
        "--types",
        "s3-buckets,dynamodb-tables",
        "--timeout",
        "120s",
        "--store",
        store,
        "--output",
        report.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec()
}

fn read_report(path: &Path, out: &Output) -> Value {
    let text = std::fs::read(path)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", tollgate_testkit::cli::describe(out)));
    let report: Value = serde_json::from_slice(&text).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    report
}

/// One `discover --store` of S3 and DynamoDB in us-east-1 through `endpoint`; the report.
fn scan(endpoint: &str, store: &str, tmp: &Path, n: usize) -> (Output, Value) {
    let report = tmp.join(format!("report-{n}.json"));
    let args = scan_args(endpoint, store, &report);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tollgate(&args, &tmp.join("admission"));
    let report = read_report(&report, &out);
    (out, report)
}

fn read_json(args: &[&str], tmp: &Path) -> Vec<Value> {
    let out = tollgate(args, &tmp.join("admission"));
    assert!(
        out.status.success(),
        "{}",
        tollgate_testkit::cli::describe(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The resource model of every item of a report, by (type, account, region, id).
fn report_items(report: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for dataset in report["datasets"].as_object().unwrap().values() {
        for item in dataset["items"].as_array().unwrap() {
            out.insert(key(item), model(item));
        }
    }
    out
}

fn key(v: &Value) -> String {
    format!(
        "{}|{}|{}|{}",
        v["resource_type"].as_str().unwrap(),
        v["account"].as_str().unwrap_or("unknown"),
        v["region"].as_str().unwrap_or("unknown"),
        v["id"].as_str().unwrap()
    )
}

fn model(v: &Value) -> Value {
    json!({"arn": v["arn"], "tags": v["tags"], "properties": v["properties"]})
}

fn delete_bucket(moto: &Moto, name: &str) {
    let answer = moto.call("s3", Call::new("DELETE", &format!("/{name}")));
    assert_eq!(answer.status, 204, "DeleteBucket: {}", answer.text());
}

/// `tollgate history` of the table retagged between scans `first` and `second`: two
/// versions, the second naming the tag; a resource never stored exits 1.
fn history_of_the_retagged_table(store: &str, tmp: &Path, first: i64, second: i64) {
    let key = [
        "--account",
        MOTO_ACCOUNT,
        "--type",
        "dynamodb-tables",
        "--region",
        "us-east-1",
    ];
    let mut args = vec!["history", "--store", store, "--id", "inv-table", "--json"];
    args.extend(key);
    let out = tollgate(&args, &tmp.join("admission"));
    assert!(
        out.status.success(),
        "{}",
        tollgate_testkit::cli::describe(&out)
    );
    let history: Value = serde_json::from_slice(&out.stdout).unwrap();
    let versions: Vec<(i64, &Value, &Value)> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["scan"].as_i64().unwrap(), &v["tags"], &v["changed"]))
        .collect();
    assert_eq!(
        versions,
        [
            (first, &json!({"env": "prod"}), &json!([])),
            (second, &json!({"env": "staging"}), &json!(["tags.env"])),
        ],
        "{history:#}"
    );
    assert_eq!(history["resource"]["tags"], json!({"env": "staging"}));
    // Text: the newest version first.
    args.retain(|a| *a != "--json");
    let out = tollgate(&args, &tmp.join("admission"));
    let text = String::from_utf8_lossy(&out.stdout);
    let newest = text.find("tags.env").expect("the retag is named");
    let oldest = text
        .find("(first version)")
        .expect("the first version is named");
    assert!(newest < oldest, "{text}");
    args[4] = "never-stored";
    let out = tollgate(&args, &tmp.join("admission"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds no AWS::DynamoDB::Table"),
        "{}",
        tollgate_testkit::cli::describe(&out)
    );
}

/// The three scans against `store` (a SQLite file or a PostgreSQL URL).
fn three_scans(store: &str) {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    let tmp = tempfile::tempdir().unwrap();
    for b in ["inv-kept", "inv-deleted", "inv-unverified"] {
        moto.create_bucket(b);
    }
    moto.create_table("inv-table");
    let table_arn = format!("arn:aws:dynamodb:us-east-1:{MOTO_ACCOUNT}:table/inv-table");
    tag_table(&moto, &table_arn, "prod");

    // 1: everything is added, and the store's current view is the report's items.
    let (out, report) = scan(&moto.url, store, tmp.path(), 1);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        tollgate_testkit::cli::describe(&out)
    );
    assert_eq!(report["store"]["stored"], true, "{}", report["store"]);
    let first = report["store"]["scan"].as_i64().unwrap();
    let rows = read_json(&["resources", "--store", store, "--json"], tmp.path());
    let stored: BTreeMap<String, Value> = rows.iter().map(|r| (key(r), model(r))).collect();
    assert_eq!(
        stored,
        report_items(&report),
        "resources --json is the report"
    );
    assert_eq!(stored.len(), 4, "{stored:?}");
    assert_eq!(
        stored[&format!("AWS::DynamoDB::Table|{MOTO_ACCOUNT}|us-east-1|inv-table")]["tags"],
        json!({"env": "prod"})
    );

    // 2: one bucket deleted, the table's tag changed.
    delete_bucket(&moto, "inv-deleted");
    tag_table(&moto, &table_arn, "staging");
    let (out, report) = scan(&moto.url, store, tmp.path(), 2);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        tollgate_testkit::cli::describe(&out)
    );
    let second = report["store"]["scan"].as_i64().unwrap();
    let since = first.to_string();
    let changes = read_json(
        &["changes", "--store", store, "--since", &since, "--json"],
        tmp.path(),
    );
    let summary: std::collections::BTreeSet<(&str, &str, &str)> = changes
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap(),
                c["resource_type"].as_str().unwrap(),
                c["id"].as_str().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("modified", "AWS::DynamoDB::Table", "inv-table"),
        ("removed", "AWS::S3::Bucket", "inv-deleted"),
    ];
    assert_eq!(
        summary,
        expected.into_iter().collect(),
        "one modification and one removal: {changes:#?}"
    );
    let modified = changes.iter().find(|c| c["kind"] == "modified").unwrap();
    assert!(
        modified["detail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().starts_with("tags")),
        "the tag is what changed: {modified}"
    );
    history_of_the_retagged_table(store, tmp.path(), first, second);

    // 3: another bucket deleted, and every S3 ListBuckets fails at the proxy.
    delete_bucket(&moto, "inv-unverified");
    let proxy = FaultProxy::start(moto.addr(), |head| {
        head.method == "GET" && head.path() == "/" && head.signed_service() == Some("s3")
    });
    let (out, report) = scan(&proxy.url, store, tmp.path(), 3);
    assert!(proxy.failed() > 0, "the proxy failed S3's listing");
    assert_ne!(
        out.status.code(),
        Some(0),
        "S3 failed: {}",
        tollgate_testkit::cli::describe(&out)
    );
    assert_eq!(
        report["datasets"]["s3-buckets"]["status"], "failed",
        "{}",
        report["datasets"]["s3-buckets"]
    );
    assert_eq!(report["store"]["stored"], true, "{}", report["store"]);
    assert_eq!(report["store"]["removed"], 0, "{}", report["store"]);
    let since = second.to_string();
    let changes = read_json(
        &["changes", "--store", store, "--since", &since, "--json"],
        tmp.path(),
    );
    assert!(
        changes.iter().all(|c| c["kind"] != "removed"),
        "nothing is removed on a failed listing: {changes:#?}"
    );
    assert!(
        changes
            .iter()
            .any(|c| c["kind"] == "not_verified" && c["id"] == "inv-unverified"),
        "the bucket that is gone is 'not verified': {changes:#?}"
    );
    let buckets = read_json(
        &[
            "resources",
            "--store",
            store,
            "--types",
            "s3-buckets",
            "--json",
        ],
        tmp.path(),
    );
    let ids: Vec<&str> = buckets.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["inv-kept", "inv-unverified"], "{buckets:#?}");
}

#[test]
fn a_stored_scan_lists_its_items_and_later_scans_show_proven_removals_only_on_sqlite() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("inventory.sqlite");
    three_scans(&format!("sqlite:{}", file.display()));
}

#[test]
fn a_stored_scan_lists_its_items_and_later_scans_show_proven_removals_only_on_postgres() {
    let Some(schema) = PostgresSchema::new() else {
        return;
    };
    three_scans(&schema.url());
}

/// A schema of the test's own on TOLLGATE_TEST_POSTGRES_URL's server, dropped after it;
/// `None` (and a SKIPPED line) when the variable is unset.
struct PostgresSchema {
    base: String,
    name: String,
}

impl PostgresSchema {
    fn new() -> Option<PostgresSchema> {
        let Ok(base) = std::env::var(POSTGRES_URL) else {
            println!("SKIPPED: {POSTGRES_URL} unset");
            return None;
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "cli_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = postgres::Client::connect(&base, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{POSTGRES_URL} is set but unreachable: {e}"));
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .unwrap();
        Some(PostgresSchema { base, name })
    }

    /// The store URL whose connections use this schema.
    fn url(&self) -> String {
        let separator = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.base, self.name
        )
    }
}

impl Drop for PostgresSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name));
        }
    }
}

#[test]
fn a_store_that_cannot_be_written_still_writes_the_report_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let moto = tollgate_testkit::moto::moto();
    // A PostgreSQL URL nothing listens on, with a password that must not be printed.
    let store = "postgres://scanner:hunter2-secret@127.0.0.1:1/inventory";
    let (out, report) = scan(&moto.url, store, tmp.path(), 1);
    let all = tollgate_testkit::cli::describe(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_eq!(report["store"]["stored"], false, "{}", report["store"]);
    assert!(report["datasets"]["s3-buckets"]["items"].is_array());
    let text = serde_json::to_string(&report).unwrap();
    assert!(
        !text.contains("hunter2"),
        "the report holds the password: {text}"
    );
    assert!(
        !all.contains("hunter2"),
        "the output holds the password: {all}"
    );
    assert!(all.contains("was not stored"), "{all}");
}

/// Two `discover --store` processes at once on one store: both scans stored, no error,
/// and no row lost (the current view is every item, each added exactly once).
fn two_writers_at_once(store: &str) {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    for i in 0..6 {
        moto.create_bucket(&format!("inv-two-{i}"));
    }
    moto.create_tables("inv-two-", 4);
    let tmp = tempfile::tempdir().unwrap();
    let children: Vec<(std::process::Child, std::path::PathBuf)> = (0..2)
        .map(|n| {
            let report = tmp.path().join(format!("report-{n}.json"));
            let args = scan_args(&moto.url, store, &report);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let child = command(&args, &tmp.path().join("admission"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (child, report)
        })
        .collect();
    let mut scans = Vec::new();
    let mut items = None;
    for (child, path) in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            tollgate_testkit::cli::describe(&out)
        );
        let report = read_report(&path, &out);
        assert_eq!(report["store"]["stored"], true, "{}", report["store"]);
        scans.push(report["store"]["scan"].as_i64().unwrap());
        items = Some(report_items(&report));
    }
    scans.sort_unstable();
    scans.dedup();
    assert_eq!(scans.len(), 2, "two scans stored: {scans:?}");
    let items = items.unwrap();
    assert_eq!(items.len(), 10, "{items:?}");
    let rows = read_json(&["resources", "--store", store, "--json"], tmp.path());
    let stored: BTreeMap<String, Value> = rows.iter().map(|r| (key(r), model(r))).collect();
    assert_eq!(stored, items, "every item is in the store");
    let changes = read_json(&["changes", "--store", store, "--json"], tmp.path());
    assert_eq!(changes.len(), 10, "each resource added once: {changes:#?}");
    assert!(changes.iter().all(|c| c["kind"] == "added"), "{changes:#?}");
}

#[test]
fn two_processes_store_at_once_on_one_sqlite_file() {
    let tmp = tempfile::tempdir().unwrap();
    two_writers_at_once(&format!(
        "sqlite:{}",
        tmp.path().join("inventory.sqlite").display()
    ));
}

#[test]
fn two_processes_store_at_once_on_one_postgres_database() {
    let Some(schema) = PostgresSchema::new() else {
        return;
    };
    two_writers_at_once(&schema.url());
}
