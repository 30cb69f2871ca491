//! `tollgate replay` as a user runs it: the real binary on the bundled seed 000 scripts.

use std::collections::BTreeSet;
use std::process::Output;

use tollgate_testkit::cli;

fn tollgate(args: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cli::output(cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(args))
}

fn keys(value: &serde_json::Value) -> BTreeSet<&str> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn json_output_has_exactly_the_documented_shape() {
    let out = tollgate(&["replay", "fixtures/replay/fast-responses.json", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(keys(&report), BTreeSet::from(["requests", "elapsed_ms"]));
    assert_eq!(report["elapsed_ms"], 1_500);
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 8);
    let mut dispatched = Vec::new();
    for r in requests {
        assert_eq!(keys(r), BTreeSet::from(["id", "result", "attempts"]));
        assert_eq!(r["result"], "success");
        for a in r["attempts"].as_array().unwrap() {
            assert_eq!(
                keys(a),
                BTreeSet::from(["attempt", "dispatched_at_ms", "outcome"])
            );
            assert_eq!(a["attempt"], 1);
            assert_eq!(a["outcome"], "success");
            dispatched.push(a["dispatched_at_ms"].as_u64().unwrap());
        }
    }
    assert_eq!(dispatched, [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]);
    assert_eq!(requests[0]["id"], "r1");
}

#[test]
fn the_table_shows_requests_and_totals() {
    let out = tollgate(&["replay", "fixtures/replay/sustained-throttling.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "r1        1  retry_exhausted         2  0 (throttle), 1000 (throttle)",
        "physical attempts           4 (2 retries)",
        "exhausted retry admissions  2",
        "elapsed (simulated)         3000 ms",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn a_malformed_script_exits_1_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"requests": [{"id": "first", "service": "logs", "operation": "DescribeLogStreams"},
            {"id": "second", "service": "logs", "operation": "DescribeLogStreams",
             "responses": [{"outcome": "success"}, {"outcome": "throttled"}]}]}"#,
    )
    .unwrap();
    let out = tollgate(&["replay", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"requests[1] (id "second").responses[1]: unknown variant `throttled`"#),
        "{err}"
    );
    assert!(err.contains("bad.json"), "{err}");

    let out = tollgate(&["replay", "no/such/script.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/script.json"));
}

#[test]
fn get_metric_data_attempts_carry_their_datapoint_budget_and_cost_in_json() {
    let out = tollgate(&[
        "replay",
        "fixtures/replay/metric-data-datapoints.json",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 10);
    for r in requests {
        for a in r["attempts"].as_array().unwrap() {
            assert_eq!(
                keys(a),
                BTreeSet::from(["attempt", "dispatched_at_ms", "outcome", "datapoints"]),
                "{a}"
            );
            assert_eq!(keys(&a["datapoints"]), BTreeSet::from(["budget", "cost"]));
        }
    }
    let attempts = |id: &str| {
        requests
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))["attempts"]
            .clone()
    };
    assert_eq!(
        attempts("lambda-activity-1")[0]["datapoints"],
        serde_json::json!({"budget": "older-datapoints", "cost": 6720})
    );
    assert_eq!(
        attempts("recent-errors")[0]["datapoints"],
        serde_json::json!({"budget": "recent-datapoints", "cost": 1000})
    );
    let edge = attempts("three-hours-old");
    assert_eq!(edge[0]["datapoints"]["budget"], "recent-datapoints");
    assert_eq!(edge[1]["datapoints"]["budget"], "older-datapoints");
}
