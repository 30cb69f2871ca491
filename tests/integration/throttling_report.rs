//! The report's `throttling` block against the demo scenario (issue 24, item 3): the
//! demo's throttle storm throttles S3 lifecycle reads and Lambda version listings, so the
//! block names each throttled key in `messages` with the rate tollgate slowed it to, and
//! the stderr summary prints those lines. (A clean scan's `"throttling": null` is checked
//! over the service in tests/integration/service_guard.rs.)

use std::process::Command;

#[test]
fn the_demo_report_names_each_throttled_key_with_its_slowed_rate() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["demo", "--output", report_path.to_str().unwrap()])
        .env_remove("TOLLGATE_QUOTA_OVERRIDES")
        .env_remove("TOLLGATE_POLICY_FILE")
        .env_remove("AWS_PROFILE")
        .env("TOLLGATE_ADMISSION_DIR", dir.path().join("admission"))
        .env("TOLLGATE_STATE_DIR", dir.path().join("state"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let throttling = &report["throttling"];
    assert!(throttling.is_object(), "the storm is eventful: {report}");
    let messages: Vec<&str> = throttling["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let throttled: Vec<&String> = throttling["keys"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, k)| k["throttled_responses"].as_u64().unwrap() > 0)
        .map(|(key, _)| key)
        .collect();
    assert!(!throttled.is_empty(), "{throttling}");
    for key in &throttled {
        let line = messages
            .iter()
            .find(|m| m.starts_with(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no message for {key}: {messages:?}"));
        assert!(line.contains("throttled "), "{line}");
        assert!(
            line.contains("slowed to ") && line.contains("/s (policy "),
            "{line}"
        );
        let slowed = &throttling["slowed"][key.as_str()];
        assert!(
            slowed["effective_rate_per_second"].as_f64().unwrap()
                < slowed["policy_rate_per_second"].as_f64().unwrap(),
            "{slowed}"
        );
        assert!(
            stderr.contains(line),
            "the summary prints {line:?}: {stderr}"
        );
    }
    let totals = &throttling["totals"];
    assert!(totals["throttled"].as_u64().unwrap() >= throttled.len() as u64);
    assert!(totals["calls"].as_u64().unwrap() > 0, "{totals}");
}
