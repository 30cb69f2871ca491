//! The discovery service over real HTTP, against moto: `tollgate serve` as a child
//! process with its own admission and state directories, driven by a plain HTTP/1.1
//! client. Submit, join, queue past the cap, cancel, reports, auth, and a SIGKILL
//! mid-scan followed by a restart.

use crate::service_support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use service_support::{child_env, http, Dirs, Serve};
use tollgate_testkit::moto::{moto, Moto};
use tollgate_testkit::unique_prefix;

/// One DynamoDB control-plane call per second: a scan of the tables this file creates
/// (plus whatever moto already holds) runs for several seconds, long enough to join,
/// queue behind, cancel or kill.
const SLOW_DYNAMODB: &str = r#"{"dynamodb:control-plane-read":{"ratePerSecond":1,"burst":1}}"#;

/// Tables the slow scans have to describe.
const SLOW_TABLES: usize = 8;

const LIMIT: Duration = Duration::from_secs(120);

fn scan_body(moto: &Moto, datasets: &str) -> String {
    format!(
        r#"{{"regions":["us-east-1"],"datasets":[{datasets}],"endpoint_url":"{}","timeout":"100s"}}"#,
        moto.url
    )
}

fn submit(serve: &Serve, body: &str) -> (String, bool) {
    let (code, answer) = serve.json("POST", "/v1/scans", Some(body));
    assert_eq!(code, 202, "{answer}");
    (
        answer["scan_id"].as_str().unwrap().to_string(),
        answer["joined"].as_bool().unwrap(),
    )
}

fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("service.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn requests_without_the_token_are_refused_and_the_cli_client_uses_the_token_file() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let (code, body) = http(&serve.addr, "GET", "/v1/scans", None, None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("\"error\""), "{body}");
    let (code, _) = http(
        &serve.addr,
        "GET",
        "/v1/scans",
        Some("0".repeat(64).as_str()),
        None,
    );
    assert_eq!(code, 401);
    let (code, _) = http(&serve.addr, "POST", "/v1/scans", None, Some("{}"));
    assert_eq!(code, 401);
    assert_eq!(http(&serve.addr, "GET", "/healthz", None, None).0, 200);
    let (code, metrics) = http(&serve.addr, "GET", "/metrics", None, None);
    assert_eq!(code, 200);
    assert!(metrics.contains("tollgate_scans_active"), "{metrics}");
    // With the token: unknown ids are 404, malformed bodies 400 naming the field.
    let (code, body) = serve.json("GET", "/v1/scans/scan-0000000000000001", None);
    assert_eq!(code, 404, "{body}");
    let (code, body) = serve.json("POST", "/v1/scans", Some(r#"{"regions":"us-east-1"}"#));
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().starts_with("regions:"),
        "{body}"
    );
    // A profile that does not exist is refused before any scan, naming it.
    let (code, body) = serve.json(
        "POST",
        "/v1/scans",
        Some(r#"{"regions":["us-east-1"],"datasets":["kms-keys"],"profile":"nope-tollgate-test"}"#),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("nope-tollgate-test"),
        "{body}"
    );
    let (_, list) = serve.json("GET", "/v1/scans", None);
    assert_eq!(list["scans"], serde_json::json!([]), "no scan was queued");
    // The CLI client reads the token from the state directory.
    let scans = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
        cmd.arg("scans")
            .args(args)
            .args(["--url", &format!("http://{}", serve.addr)]);
        child_env(&mut cmd, &Dirs::new(tmp.path()));
        cmd.output().unwrap()
    };
    let out = scans(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["scans"], serde_json::json!([]));
    let out = scans(&["show", "scan-0000000000000001"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("404"),
        "{out:?}"
    );
    let mode = std::os::unix::fs::MetadataExt::mode(
        &std::fs::metadata(tmp.path().join("state/api-token")).unwrap(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn identical_requests_join_and_scans_past_the_cap_wait_then_cancel() {
    let moto = moto();
    moto.create_tables(&unique_prefix("join"), SLOW_TABLES);
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), "[service]\nmax_concurrent_scans = 1\n");
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", &config],
        &[("TOLLGATE_QUOTA_OVERRIDES", SLOW_DYNAMODB)],
    );
    let slow = scan_body(&moto, r#""dynamodb-tables""#);
    let (first, joined) = submit(&serve, &slow);
    assert!(!joined);
    let (again, joined) = submit(&serve, &slow);
    assert_eq!(
        (again.as_str(), joined),
        (first.as_str(), true),
        "an identical request joins"
    );
    assert_eq!(serve.status_of(&first), "running");

    // Past the cap of one: a different scan waits.
    let (second, joined) = submit(&serve, &scan_body(&moto, r#""kms-keys""#));
    assert!(!joined);
    assert_ne!(second, first);
    assert_eq!(serve.status_of(&second), "queued");
    let (code, body) = serve.json("GET", &format!("/v1/scans/{first}/report"), None);
    assert_eq!(code, 409, "no report while running: {body}");
    let (code, list) = serve.json("GET", "/v1/scans", None);
    assert_eq!(code, 200);
    let ids: Vec<&str> = list["scans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scan_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "newest first");

    // Cancel the queued one: it never starts, its report says cancelled.
    let (code, _) = serve.json("DELETE", &format!("/v1/scans/{second}"), None);
    assert_eq!(code, 200);
    assert_eq!(serve.status_of(&second), "cancelled");
    let (code, report) = serve.json("GET", &format!("/v1/scans/{second}/report"), None);
    assert_eq!(code, 200);
    assert_eq!(
        report["datasets"]["kms-keys"]["status"], "cancelled",
        "{report}"
    );

    // Cancel the running one: it stops early and keeps its partial report.
    let (code, _) = serve.json("DELETE", &format!("/v1/scans/{first}"), None);
    assert_eq!(code, 200);
    assert_eq!(serve.wait_for(&first, &["cancelled"], LIMIT), "cancelled");
    let (code, report) = serve.json("GET", &format!("/v1/scans/{first}/report"), None);
    assert_eq!(code, 200);
    assert_eq!(report["scan_id"], first.as_str());
    assert_eq!(
        report["datasets"]["dynamodb-tables"]["status"], "cancelled",
        "{report}"
    );
    let (code, _) = serve.json("DELETE", &format!("/v1/scans/{first}"), None);
    assert_eq!(code, 409, "a finished scan cannot be cancelled again");
    assert!(serve.terminate().success());
}

/// Drop what differs between two scans of one account: ids and timestamps.
fn comparable(mut report: serde_json::Value) -> serde_json::Value {
    let object = report.as_object_mut().unwrap();
    for key in ["scan_id", "started_at", "finished_at"] {
        object.remove(key);
    }
    report
}

#[test]
fn a_service_report_equals_the_report_of_discover() {
    // Lambda only: moto answers KMS GetKeyLastUsage with HTML 500s, which open the KMS
    // circuit breaker in the service's coordinator after five, so a `discover` right after
    // would (correctly) fail fast on KMS instead of scanning under the same conditions.
    let moto = moto();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::new(tmp.path());
    let serve = Serve::start(&dirs, &[], &[]);
    let (scan_id, _) = submit(&serve, &scan_body(&moto, r#""lambda-functions""#));
    let status = serve.wait_for(&scan_id, &["complete", "partial", "failed"], LIMIT);
    assert!(status == "complete" || status == "partial", "{status}");
    let (code, text) = serve.call("GET", &format!("/v1/scans/{scan_id}/report"), None);
    assert_eq!(code, 200);
    let service_report: serde_json::Value = serde_json::from_str(&text).unwrap();
    tollgate_testkit::report_schema::assert_valid(&service_report);
    assert_eq!(service_report["scan_id"], scan_id.as_str());

    // `tollgate discover` of the same account, alongside the service (its client).
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args([
        "discover",
        "--endpoint-url",
        &moto.url,
        "--regions",
        "us-east-1",
    ])
    .args(["--datasets", "lambda-functions", "--timeout", "100s"]);
    child_env(&mut cmd, &dirs);
    let out = cmd.output().unwrap();
    let expected_exit = if status == "complete" { 0 } else { 2 };
    assert_eq!(
        out.status.code(),
        Some(expected_exit),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let discover_report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    tollgate_testkit::report_schema::assert_valid(&discover_report);
    assert_eq!(comparable(service_report), comparable(discover_report));
    // The shapes are the same document: the service serves the bytes discover prints.
    assert!(text.starts_with("{\n  \"scan_id\""), "{text}");
    assert!(serve.terminate().success());
}

#[test]
fn a_scan_killed_mid_run_is_interrupted_after_restart_and_history_survives() {
    let moto = moto();
    moto.create_tables(&unique_prefix("kill"), SLOW_TABLES);
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::new(tmp.path());
    let env = [("TOLLGATE_QUOTA_OVERRIDES", SLOW_DYNAMODB)];
    let serve = Serve::start(&dirs, &[], &env);
    let (done, _) = submit(&serve, &scan_body(&moto, r#""lambda-functions""#));
    assert_eq!(
        serve.wait_for(&done, &["complete", "partial", "failed"], LIMIT),
        "complete"
    );
    let (code, done_report) = serve.call("GET", &format!("/v1/scans/{done}/report"), None);
    assert_eq!(code, 200);
    // Forced: the account's cooldown after `done` (docs/service.md, "Guard rails") is not
    // what this test is about.
    let forced = scan_body(&moto, r#""dynamodb-tables""#)
        .replace(r#""timeout":"100s""#, r#""timeout":"100s","force":true"#);
    let (running, _) = submit(&serve, &forced);
    assert_eq!(serve.status_of(&running), "running");
    drop(serve); // SIGKILL

    let serve = Serve::start(&dirs, &[], &env);
    assert_eq!(serve.status_of(&running), "interrupted");
    let (code, body) = serve.json("GET", &format!("/v1/scans/{running}/report"), None);
    assert_eq!(code, 404, "an interrupted scan has no report: {body}");
    assert_eq!(serve.status_of(&done), "complete");
    let (code, again) = serve.call("GET", &format!("/v1/scans/{done}/report"), None);
    assert_eq!(
        (code, again),
        (200, done_report),
        "the finished report survives SIGKILL"
    );
    let (_, list) = serve.json("GET", "/v1/scans", None);
    assert_eq!(list["scans"].as_array().unwrap().len(), 2, "{list}");
    assert!(serve.terminate().success());
}

#[test]
fn sigterm_stores_running_scans_interrupted_with_what_they_collected() {
    let moto = moto();
    moto.create_tables(&unique_prefix("term"), SLOW_TABLES);
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::new(tmp.path());
    let env = [("TOLLGATE_QUOTA_OVERRIDES", SLOW_DYNAMODB)];
    let serve = Serve::start(&dirs, &[], &env);
    let (running, _) = submit(&serve, &scan_body(&moto, r#""dynamodb-tables""#));
    assert_eq!(serve.status_of(&running), "running");
    assert!(serve.terminate().success());
    let serve = Serve::start(&dirs, &[], &env);
    assert_eq!(serve.status_of(&running), "interrupted");
    let (code, report) = serve.json("GET", &format!("/v1/scans/{running}/report"), None);
    assert_eq!(code, 200, "SIGTERM keeps the partial report: {report}");
    assert_eq!(
        report["datasets"]["dynamodb-tables"]["status"], "cancelled",
        "{report}"
    );
    assert!(serve.terminate().success());
}
