//! Fleet mode as a user runs it: the real `tollgate` binary, a real dynalite
//! (`TOLLGATE_TEST_DYNALITE_URL`, started by scripts/test; these tests fail without it),
//! real admission directories.
//!
//! `fleet init` creates a table; a `tollgate demo` run (the fixture AWS simulator, fake
//! credentials) with `TOLLGATE_FLEET_TABLE` admits every call under blocks from it, which
//! `fleet status` then shows; with the table unreachable, `stop` refuses naming the table
//! and `local-share` warns and goes on, and either way the report's `fleet_degraded`
//! says so; without `TOLLGATE_FLEET_TABLE` nothing of fleet mode runs. `tollgate serve`
//! reads a `[fleet]` section (environment winning value by value).

use std::process::Output;

use tollgate_testkit::cli::{self, describe};
use tollgate_testkit::{dynalite_url, emulator_env, unique_table};

/// The demo's account made small and quick (1 ms per call, quotas that never limit, a
/// few items per dataset), with a short throttle storm at the start as in the bundled
/// scenario, so that some keys are throttled. These tests check fleet mode's wiring, not
/// pacing: the bundled scenario (about 5 s a run, paced by the default policies) still
/// runs in `first_run.rs`, `simulate_cli.rs` and `throttling_report.rs`.
const SMALL_DEMO: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
seed = 7

[latency]
default = { kind = "fixed", ms = 1 }

[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }

[[faults]]
kind = "throttle"
operations = ["s3:GetBucketLifecycleConfiguration", "lambda:ListVersionsByFunction"]
from_ms = 0
until_ms = 300
probability = 0.5
retry_after_ms = 100

[[inventory.bucket_sets]]
count = 6
prefix = "small-"
region = "us-east-1"
lifecycle_rules = 1

[[inventory.function_sets]]
count = 3
prefix = "small-fn-"
region = "us-east-1"
versions = 2

[[inventory.table_sets]]
count = 2
prefix = "small-table-"
region = "us-east-1"
item_count = 10
size_bytes = 100

[[inventory.key_sets]]
count = 2
region = "us-east-1"
"#;

/// `tollgate demo --scenario` of [`SMALL_DEMO`] (written into `dir`), then `args`.
fn small_demo(args: &[&str], env: &[(&str, &str)], dir: &std::path::Path) -> Output {
    let scenario = dir.join("small-demo.toml");
    std::fs::write(&scenario, SMALL_DEMO).unwrap();
    let mut all = vec!["demo", "--scenario", scenario.to_str().unwrap()];
    all.extend_from_slice(args);
    tollgate(&all, env, dir)
}

fn tollgate(args: &[&str], env: &[(&str, &str)], dir: &std::path::Path) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_tollgate"));
    emulator_env(&mut cmd)
        .args(args)
        .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"))
        .env("TOLLGATE_STATE_DIR", dir.join("state"));
    cli::output(cmd.envs(env.iter().copied()))
}

#[test]
fn init_creates_the_table_and_a_demo_admits_under_its_blocks() {
    let url = dynalite_url();
    let dir = tempfile::tempdir().unwrap();
    let t = unique_table("cli");
    let env = [
        ("TOLLGATE_FLEET_ENDPOINT_URL", url.as_str()),
        ("TOLLGATE_FLEET_REGION", "us-east-1"),
    ];
    let init = tollgate(&["fleet", "init", "--table", &t], &env, dir.path());
    assert!(init.status.success(), "{}", describe(&init));
    let out = String::from_utf8_lossy(&init.stdout);
    assert!(out.contains("created"), "{out}");
    assert!(out.contains("dynamodb:PutItem"), "{out}");
    assert!(out.contains(&format!("table/{t}")), "{out}");
    let again = tollgate(&["fleet", "init", "--table", &t], &env, dir.path());
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("exists"),
        "{}",
        describe(&again)
    );

    let mut fleet_env = env.to_vec();
    fleet_env.push(("TOLLGATE_FLEET_TABLE", t.as_str()));
    let demo = small_demo(&[], &fleet_env, dir.path());
    assert!(demo.status.success(), "{}", describe(&demo));
    let status = tollgate(&["fleet", "status", "--json"], &fleet_env, dir.path());
    assert!(status.status.success(), "{}", describe(&status));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let keys = v["keys"].as_array().unwrap();
    assert!(!keys.is_empty(), "the demo's keys have items: {v}");
    let host_id = std::fs::read_to_string(dir.path().join("admission/fleet-host-id")).unwrap();
    assert!(
        keys.iter().all(|k| k["hosts_seen_recently"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| *h == *host_id.trim())),
        "every key was written by this host ({host_id}): {v}"
    );
}

/// `tollgate demo --output DIR/report.json` in fleet mode against a table nobody answers
/// for, with `on_error`: the directory (keep it), the run, the report's path.
fn demo_against_an_unreachable_table(
    on_error: &str,
) -> (tempfile::TempDir, Output, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let url = unreachable_url();
    let env = [
        ("TOLLGATE_FLEET_TABLE", "tg-unreachable"),
        ("TOLLGATE_FLEET_ENDPOINT_URL", url.as_str()),
        ("TOLLGATE_FLEET_ON_ERROR", on_error),
    ];
    let report = dir.path().join("report.json");
    let demo = small_demo(&["--output", report.to_str().unwrap()], &env, dir.path());
    (dir, demo, report)
}

fn unreachable_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn stop_mode_refuses_naming_the_table() {
    let (_dir, demo, report) = demo_against_an_unreachable_table("stop");
    let all = describe(&demo);
    assert!(!demo.status.success(), "{all}");
    assert!(
        all.contains("fleet admission degraded") && all.contains("Stop"),
        "{all}"
    );
    // Each failed dataset's reason names the table and the error.
    let report = std::fs::read_to_string(report).unwrap();
    assert!(
        report.contains("fleet admission is stopped: fleet DynamoDB table tg-unreachable"),
        "{report}"
    );
    // And the report says, once per key, that the key was stopped.
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let degraded = degraded_keys(&report);
    assert!(!degraded.is_empty(), "{report}");
    for d in degraded {
        assert_eq!(d["mode"], "stop", "{d}");
        assert!(
            d["error"].as_str().unwrap().contains("tg-unreachable"),
            "{d}"
        );
    }
}

/// The report's `fleet_degraded` entries (empty when absent).
fn degraded_keys(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report
        .get("fleet_degraded")
        .map(|d| d.as_array().expect("fleet_degraded is a list").clone())
        .unwrap_or_default()
}

#[test]
fn local_share_mode_warns_completes_and_says_so_in_the_report() {
    let (_dir, demo, report) = demo_against_an_unreachable_table("local-share");
    let all = describe(&demo);
    assert!(demo.status.success(), "{all}");
    assert!(all.contains("fleet admission degraded"), "{all}");
    assert!(all.contains("LocalShare"), "{all}");
    assert!(
        all.contains("warning: fleet admission was degraded during this scan"),
        "the summary repeats it: {all}"
    );
    // The report lists every key the scan used, each in local share, naming the table.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let degraded = degraded_keys(&report);
    assert!(!degraded.is_empty(), "{report}");
    for d in &degraded {
        assert_eq!(d["mode"], "local-share", "{d}");
        assert!(
            d["error"].as_str().unwrap().contains("tg-unreachable"),
            "{d}"
        );
        assert!(d["since"].as_str().unwrap().ends_with('Z'), "{d}");
    }
    // `null` when nothing was eventful: no throttled keys.
    let throttled_keys: Vec<&String> = report["throttling"]["keys"]
        .as_object()
        .into_iter()
        .flat_map(|keys| keys.keys())
        .collect();
    for key in throttled_keys {
        assert!(
            degraded.iter().any(|d| d["key"] == key.as_str()),
            "{key} was used by the scan, so it degraded too: {report}"
        );
    }
}

/// A loopback listener that counts the connections made to it.
fn listener_url() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

#[test]
fn without_a_fleet_table_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (table_endpoint, url) = listener_url();
    // Every other fleet variable is set, pointing at a listener: without
    // TOLLGATE_FLEET_TABLE none of them may be read or used.
    let env = [
        ("TOLLGATE_FLEET_ENDPOINT_URL", url.as_str()),
        ("TOLLGATE_FLEET_ON_ERROR", "stop"),
        ("TOLLGATE_FLEET_SKEW_MS", "not-a-number"),
    ];
    let report = dir.path().join("report.json");
    let demo = small_demo(&["--output", report.to_str().unwrap()], &env, dir.path());
    let all = describe(&demo);
    assert!(demo.status.success(), "{all}");
    assert!(!all.contains("fleet"), "no fleet message: {all}");
    assert!(
        matches!(table_endpoint.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing connected to the fleet endpoint"
    );
    assert!(
        !dir.path().join("admission/fleet-host-id").exists(),
        "no fleet host id was created"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    assert!(report.get("fleet_degraded").is_none(), "{report}");
    let status = tollgate(&["status", "--json"], &[], dir.path());
    assert!(status.status.success(), "{}", describe(&status));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let keys = status["keys"].as_array().unwrap();
    assert!(!keys.is_empty(), "the demo's keys are stored: {status}");
    assert!(
        keys.iter()
            .all(|k| k.get("fleet").is_none() && k.get("fleet_degraded").is_none()),
        "{status}"
    );
}

#[test]
fn bad_fleet_settings_fail_before_any_call_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    // A command that coordinates (`policies` no longer reads fleet settings at all).
    let out = tollgate(
        &["discover", "--regions", "us-east-1"],
        &[
            ("TOLLGATE_FLEET_TABLE", "ok-table"),
            ("TOLLGATE_FLEET_SKEW_MS", "soon"),
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOLLGATE_FLEET_SKEW_MS"));
}
