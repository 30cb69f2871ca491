//! `tollgate bench hosts` as real processes: hosts each with their own `tollgate serve`
//! and admission directory, the grant logs merged and checked against the token-bucket
//! bound over every interval.
//!
//! The control first: hosts WITHOUT the fleet table each admit at the key's whole rate,
//! and the check must catch it (exit 1, a FAILED line, `bucket_bound_ok: false`). Then the
//! same hosts sharing one table on the dynalite of scripts/test must keep the bound. Speed
//! is not asserted; the bound and the counts are.

// Real processes: the bench's own pacing reads real time.
#![allow(clippy::disallowed_methods)]

use std::process::{Command, Output};

use crate::support;

use tollgate_testkit::dynalite_url;

fn bench_hosts(extra: &[&str], log: &std::path::Path) -> (Output, serde_json::Value) {
    let out = Command::new(support::bench_exe())
        .args(["hosts", "--hosts", "2", "--processes", "1", "--rate", "20"])
        .args(["--burst", "5", "--json", "--log"])
        .arg(log)
        .args(extra)
        // The documented default skew bound, whatever the caller's environment says.
        .env_remove("TOLLGATE_FLEET_SKEW_MS")
        .output()
        .expect("running tollgate-bench hosts");
    let _ = support::tollgate_exe(); // a clear message if the tollgate binary is missing
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bench hosts printed no JSON ({e}); status {}, stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

#[test]
fn hosts_that_do_not_share_the_table_break_the_bucket_bound_and_the_bench_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    // Two hosts with a full budget each: 120 grants in about 2.8 s, where one key at 20/s
    // burst 5 allows 5 + 20·2.8 + 20 (the 1 s skew term) ≈ 81.
    let (out, json) = bench_hosts(&["--requests", "60", "--no-fleet"], tmp.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}\n{json:#}");
    assert!(stderr.contains("bench hosts: FAILED:"), "{stderr}");
    assert_eq!(json["bucket_bound_ok"], false, "{json:#}");
    assert_eq!(json["admissions"], 120, "{json:#}");
    assert_eq!(json["fleet"], false);
    let worst = json["worst_window"].as_f64().unwrap();
    let limit = json["window_limit"].as_f64().unwrap();
    assert!(worst > limit, "{json:#}");
    // One log per worker, one line per admission, each naming its host.
    for h in 0..2 {
        let text =
            std::fs::read_to_string(tmp.path().join(format!("host-{h}-worker-0.jsonl"))).unwrap();
        assert_eq!(text.lines().count(), 60);
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(line["host"], h);
        for field in ["pid", "key", "granted_at_us"] {
            assert!(line.get(field).is_some(), "{field} missing from {line}");
        }
    }
}

#[test]
fn hosts_sharing_one_table_keep_the_bucket_bound() {
    let url = dynalite_url();
    let tmp = tempfile::tempdir().unwrap();
    let (out, json) = bench_hosts(&["--requests", "20", "--endpoint-url", &url], tmp.path());
    assert!(
        out.status.success(),
        "status {}, stderr:\n{}\n{json:#}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for field in [
        "admissions",
        "elapsed_s",
        "ideal_s",
        "bucket_bound_ok",
        "worst_window",
        "window_limit",
        "dynamodb_requests",
        "dynamodb_requests_per_admission",
        "admission_p50_us",
        "admission_p99_us",
    ] {
        assert!(json.get(field).is_some(), "{field} missing from {json:#}");
    }
    assert_eq!(json["fleet"], true);
    assert_eq!(json["bucket_bound_ok"], true, "{json:#}");
    assert_eq!(json["admissions"], 40, "{json:#}");
    let worst = json["worst_window"].as_f64().unwrap();
    assert!(worst <= json["window_limit"].as_f64().unwrap(), "{json:#}");
    // The hosts took their tokens from the table: the proxy saw their requests.
    let requests = json["dynamodb_requests"].as_u64().unwrap();
    assert!(
        requests > 0,
        "no DynamoDB request reached the table: {json:#}"
    );
}

#[test]
fn a_policy_file_sets_the_keys_policy_on_every_host_and_the_bound_is_checked_at_it() {
    let url = dynalite_url();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("slow.toml");
    // The file's 10/s burst 2 wins over --rate 20 --burst 5, and a schedule matching
    // every minute lowers it to 5/s burst 2 on every host: 30 grants take about 5.6 s.
    std::fs::write(
        &file,
        "[\"bench:Shared\"]\nratePerSecond = 10\nburst = 2\n\
         schedule = [{ cron = \"* * * * *\", timezone = \"UTC\", ratePerSecond = 5 }]\n",
    )
    .unwrap();
    let logs = tmp.path().join("logs");
    let (out, json) = bench_hosts(
        &[
            "--requests",
            "15",
            "--endpoint-url",
            &url,
            "--policy-file",
            file.to_str().unwrap(),
        ],
        &logs,
    );
    assert!(
        out.status.success(),
        "status {}, stderr:\n{}\n{json:#}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json["rate_per_second"], 5.0, "{json:#}");
    assert_eq!(json["burst"], 2.0, "{json:#}");
    assert_eq!(json["bucket_bound_ok"], true, "{json:#}");
    assert_eq!(json["admissions"], 30, "{json:#}");
    let elapsed = json["elapsed_s"].as_f64().unwrap();
    assert!(
        elapsed >= (30.0 - 2.0 - 5.0) / 5.0,
        "at most 5/s (and the 1 s skew term): {json:#}"
    );
}
