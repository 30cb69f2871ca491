//! `tollgate bench fleet` as a real process (the user binary forwarding to tollgate-bench,
//! which spawns `tollgate discover` and its own plain-SDK workers) on a tiny account with
//! quotas that never limit: every mode (tollgate's shared admission and the plain-SDK
//! workers) discovers the whole account, the server's counts agree with what the
//! processes report, and the JSON has the fields the README documents. Benchmark figures
//! are not asserted (speed is for the bench's table); this pins that the bench measures
//! what it says.

use std::process::Command;

use crate::support;

const TINY: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
seed = 3

[latency]
default = { kind = "fixed", ms = 1 }

[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }

[[inventory.bucket_sets]]
count = 6
prefix = "tiny-"
region = "us-east-1"
lifecycle_rules = 1
intelligent_tiering_configurations = 1

[[inventory.function_sets]]
count = 3
prefix = "tiny-fn-"
region = "us-east-1"
versions = 2

[[inventory.table_sets]]
count = 2
prefix = "tiny-table-"
region = "us-east-1"
item_count = 10
size_bytes = 100

[[inventory.key_sets]]
count = 2
region = "us-east-1"
"#;

#[test]
fn every_mode_discovers_the_whole_account_and_counts_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("tiny.toml");
    std::fs::write(&scenario, TINY).unwrap();
    let out = Command::new(support::tollgate_exe())
        .args([
            "bench",
            "fleet",
            "--processes",
            "2",
            "--mode",
            "all",
            "--json",
        ])
        .arg("--scenario")
        .arg(&scenario)
        .arg("--keep")
        .arg(tmp.path().join("runs"))
        .env("TOLLGATE_QUOTA_OVERRIDES", "")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench fleet failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let modes = report["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, ["tollgate", "sdk-standard", "sdk-adaptive"]);
    // 6 buckets + 3 functions + 2 tables + 2 keys
    for m in modes {
        let name = m["mode"].as_str().unwrap();
        assert_eq!(m["items_expected_per_process"], 13, "{name}");
        assert_eq!(m["complete_processes"], 2, "{name}: {m}");
        assert_eq!(m["throttled_responses"], 0, "{name}");
        assert_eq!(m["gave_up_calls"], 0, "{name}");
        assert_eq!(m["retries"], 0, "{name}");
        // nothing retried: the server received exactly the processes' logical calls
        assert_eq!(m["physical_attempts"], m["logical_requests"], "{name}: {m}");
        for p in m["per_process"].as_array().unwrap() {
            assert_eq!(p["items_complete"], 13, "{name}: {p}");
        }
        assert!(m.get("outage").is_none(), "no outage in the scenario: {m}");
    }
    // per discovery: S3 1 listing + 6×2 reads; Lambda 1 + 3; DynamoDB 1 + 2; KMS 1 + 2×2;
    // tollgate also resolves the caller (STS) once per process
    let sdk_calls = 1 + 12 + 1 + 3 + 1 + 2 + 1 + 4;
    assert_eq!(modes[1]["logical_requests"], 2 * sdk_calls);
    assert_eq!(modes[0]["logical_requests"], 2 * (sdk_calls + 1));
}

/// TINY with KMS answering 503 for the first 3 s of the scan.
fn tiny_outage() -> String {
    format!(
        "{TINY}\n[[faults]]\nkind = \"server_error\"\nstatus = 503\noperations = [\"kms:*\"]\nuntil_ms = 3000\n"
    )
}

#[test]
fn an_outage_scenario_reports_the_windows_attempts_losses_and_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("outage.toml");
    std::fs::write(&scenario, tiny_outage()).unwrap();
    let out = Command::new(support::tollgate_exe())
        .args(["bench", "fleet", "--processes", "2", "--json"])
        .args(["--mode", "tollgate,sdk-standard"])
        .arg("--scenario")
        .arg(&scenario)
        .env("TOLLGATE_QUOTA_OVERRIDES", "")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench fleet failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for m in report["modes"].as_array().unwrap() {
        let o = &m["outage"];
        assert_eq!(o["from_s"], 0.0, "{m}");
        assert_eq!(o["until_s"], 3.0, "{m}");
        // both processes' first KMS listing went out inside the window
        assert!(o["attempts_during"].as_u64().unwrap() >= 2, "{m}");
        let lost = o["items_lost"].as_u64().unwrap();
        let read: u64 = m["per_process"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["items_complete"].as_u64().unwrap())
            .sum();
        assert_eq!(lost + read, 2 * 13, "{m}");
        let completion = m["completion_s"].as_f64().unwrap();
        let after = o["recovery_to_completion_s"].as_f64().unwrap();
        assert!((completion - 3.0 - after).abs() < 1e-6, "{m}");
    }
    // tollgate waits for the breaker's probe and loses nothing; it ends after the recovery
    let tollgate = &report["modes"][0];
    assert_eq!(tollgate["mode"], "tollgate");
    assert_eq!(tollgate["outage"]["items_lost"], 0, "{tollgate}");
    assert!(
        tollgate["outage"]["recovery_to_completion_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

/// A slow account: every call held 300 ms, so a discovery takes seconds.
const SLOW: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
seed = 5

[latency]
default = { kind = "fixed", ms = 300 }

[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }

[[inventory.bucket_sets]]
count = 40
prefix = "slow-"
region = "us-east-1"
"#;

#[test]
fn a_killed_worker_fails_the_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("slow.toml");
    std::fs::write(&scenario, SLOW).unwrap();
    let runs = tmp.path().join("runs");
    let bench = Command::new(support::bench_exe())
        .args(["fleet", "--processes", "2", "--mode", "sdk-standard"])
        .arg("--scenario")
        .arg(&scenario)
        .arg("--keep")
        .arg(&runs)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The bench writes each worker's pid as it spawns it: kill the second one.
    let pid_file = runs.join("sdk-standard").join("pid-1");
    // Poll for up to 60 s (3,000 × 20 ms).
    let mut polls = 0;
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        polls += 1;
        assert!(polls < 3_000, "no pid file in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let out = bench.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the bench must fail: {stderr}");
    assert!(
        stderr.contains("sdk-standard process 1: crashed"),
        "names the process and why: {stderr}"
    );
    assert!(
        !stderr.contains("process 0:"),
        "the other one ran: {stderr}"
    );
}

#[test]
fn quota_overrides_are_blanked_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("tiny.toml");
    std::fs::write(&scenario, TINY).unwrap();
    let run = |keep: bool| {
        let mut cmd = Command::new(support::tollgate_exe());
        cmd.args(["bench", "fleet", "--processes", "1", "--mode", "tollgate"])
            .arg("--scenario")
            .arg(&scenario)
            // Not a valid override: a tollgate process that reads it refuses to start.
            .env("TOLLGATE_QUOTA_OVERRIDES", "{not json");
        if keep {
            cmd.arg("--keep-overrides");
        }
        cmd.output().unwrap()
    };
    let blanked = run(false);
    assert!(
        blanked.status.success(),
        "{}",
        String::from_utf8_lossy(&blanked.stderr)
    );
    let kept = run(true);
    let stderr = String::from_utf8_lossy(&kept.stderr);
    assert_eq!(kept.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tollgate process 0: "), "{stderr}");
}
