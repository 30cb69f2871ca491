//! `tollgate-bench outage` as a real process, on a short outage: real moto, the fault
//! proxy, three real `tollgate discover` processes on one admission directory. Benchmark
//! figures are not asserted (the count depends on timing); this pins that the bench
//! measures what it says: the scans met the outage, the proxy counted the DescribeTable
//! calls it failed and attributed them to processes, the recovery was found, and every
//! table was described in the end with every report complete.

use std::process::Command;

use crate::support;

#[test]
fn a_three_second_outage_is_met_counted_and_recovered_from_with_nothing_lost() {
    let _ = support::tollgate_exe(); // fail early, with the build hint, if absent
    let out = Command::new(support::bench_exe())
        .args(["outage", "--outage", "3", "--outage-start", "0.3"])
        .args(["--tables", "100", "--json"])
        .output()
        .expect("running tollgate-bench outage");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let json = &stdout[stdout.find("\n[").expect("the JSON array") + 1..];
    let runs: serde_json::Value = serde_json::from_str(json).expect("the results as JSON");
    let run = &runs[0];
    assert_eq!(run["breakers"], "on", "{run}");
    let inside = run["into_outage"].as_u64().unwrap();
    assert!(inside >= 1, "the scans met the outage: {run}");
    let per_process: u64 = run["into_outage_per_process"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(per_process, inside, "every arrival has its process: {run}");
    assert_eq!(run["into_outage_per_process"].as_array().unwrap().len(), 3);
    // each failed DescribeTable was seen as a 500 by the process that sent it
    let failed_seen: u64 = run["failed_by_attempt"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(failed_seen, inside, "{run}");
    assert!(run["recovery_found_after_s"].as_f64().is_some(), "{run}");
    assert_eq!(run["items_lost"], 0, "{run}");
    assert_eq!(run["complete_reports"], 3, "{run}");
    // 100 tables described by each of 3 processes, plus the attempts that failed
    assert_eq!(
        run["describe_tables"].as_u64().unwrap(),
        300 + inside,
        "{run}"
    );
}
