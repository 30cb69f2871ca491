//! `tollgate bench org` as a real process at a tiny size (3 accounts × 2 regions, two
//! runs): the table has every column in order, a row per run and min / median / max, and
//! the simulator counted exactly one AssumeRole per member and one ListAccounts page; the
//! ratio to the ideal is a number; the plain-SDK floor ran.
//! Benchmark figures are not asserted (speed is for the bench's table in bench-fast).

use std::process::Command;

use crate::support;

/// The header's columns, in order (as `bench/src/org` prints them).
const COLUMNS: &[&str] = &[
    "completion",
    "ideal",
    "×ideal",
    "calls/acct",
    "AssumeRole",
    "ListAccts",
    "throttled",
    "cpu/call scan",
    "cpu/call coord",
    "cpu/call sdk",
    "scan/floor",
    "coord/floor",
    "rss scan",
    "rss coord",
    "peak actors",
    "started",
];

#[test]
fn a_tiny_organization_prints_every_column_and_one_assume_role_per_member() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(support::tollgate_exe())
        .args([
            "bench",
            "org",
            "--accounts",
            "3",
            "--regions",
            "2",
            "--runs",
            "2",
        ])
        .arg("--keep")
        .arg(tmp.path())
        .env("TOLLGATE_QUOTA_OVERRIDES", "")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench org failed: {stderr}\n{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines
        .iter()
        .find(|l| l.starts_with("run "))
        .unwrap_or_else(|| panic!("no header in {stdout}"));
    let mut at = 0;
    for c in COLUMNS {
        let found = header[at..]
            .find(c)
            .unwrap_or_else(|| panic!("column {c:?} missing or out of order in {header:?}"));
        at += found + c.len();
    }
    for label in ["1", "2", "min", "median", "max"] {
        let row: Vec<&str> = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(label))
            .unwrap_or_else(|| panic!("no row {label:?} in {stdout}"))
            .split_whitespace()
            .collect();
        assert_eq!(row.len(), 1 + COLUMNS.len(), "{row:?}");
        let cell = |name: &str| row[1 + COLUMNS.iter().position(|c| *c == name).unwrap()];
        assert_eq!(
            cell("AssumeRole"),
            "2",
            "two members, one AssumeRole each: {row:?}"
        );
        assert_eq!(cell("ListAccts"), "1", "3 accounts fit one page: {row:?}");
        assert_ne!(cell("peak actors"), "0", "{row:?}");
        assert!(
            cell("scan/floor").parse::<f64>().is_ok_and(|r| r > 1.0),
            "the floor is below the scanner: {row:?}"
        );
        assert!(
            cell("×ideal").parse::<f64>().is_ok_and(f64::is_finite),
            "the ideal is defined at every size (was 0, the ratio NaN): {row:?}"
        );
        assert!(
            cell("rss scan").ends_with("MB") && cell("rss scan") != "0.0MB",
            "{row:?}"
        );
        assert!(cell("rss coord") != "0.0MB", "{row:?}");
        assert!(
            cell("cpu/call sdk").ends_with("µs") && cell("cpu/call sdk") != "0µs",
            "the plain-SDK floor ran: {row:?}"
        );
    }
    // each run's scan left a report naming every account
    for run in ["run-0", "run-1"] {
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join(run).join("report.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(report["accounts"].as_array().unwrap().len(), 3, "{report}");
    }
}
