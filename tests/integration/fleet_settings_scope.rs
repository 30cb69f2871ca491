//! Which commands read fleet settings, as a user runs them (issue 20): only those that may
//! coordinate (`discover`, `demo`, `serve`, a live `status`) read `TOLLGATE_FLEET_*`, into
//! the spec they join admission with. `policies` and `replay` never coordinate, so a
//! malformed table name cannot break them; a command that coordinates still names it.

use std::process::{Command, Output};

/// Not a DynamoDB table name (a space and a slash).
const MALFORMED_TABLE: &str = "no such/table";

fn tollgate(args: &[&str], admission: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env_remove("TOLLGATE_QUOTA_OVERRIDES")
        .env_remove("TOLLGATE_POLICY_FILE")
        .env("TOLLGATE_ADMISSION_DIR", admission)
        .env("TOLLGATE_FLEET_TABLE", MALFORMED_TABLE)
        .output()
        .expect("running tollgate")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn policies_succeed_with_a_malformed_fleet_table_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tollgate(&["policies"], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("kms"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_replay_succeeds_with_a_malformed_fleet_table_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tollgate(
        &["replay", "fixtures/replay/fast-responses.json", "--json"],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"].as_array().map(Vec::len), Some(8));
}

#[test]
fn a_discover_refuses_a_malformed_fleet_table_name_naming_it_before_any_call() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tollgate(&["discover", "--regions", "us-east-1"], tmp.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TOLLGATE_FLEET_TABLE")
            && stderr.contains(&format!("{MALFORMED_TABLE:?}"))
            && stderr.contains("is not a DynamoDB table name"),
        "{}",
        text(&out)
    );
    assert!(
        !tmp.path().join("coordinator.lock").exists(),
        "refused before joining admission: {}",
        text(&out)
    );
}
