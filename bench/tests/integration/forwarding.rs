//! `tollgate bench ...` runs the benchmarks of the separate `tollgate-bench` executable:
//! the user binary forwards its arguments, the bench spawns its workers from its own
//! path and the `tollgate` binary from beside itself, and says how to build what is
//! missing.

use std::process::Command;

use crate::support;

use support::{bench_exe, tollgate_exe};

#[test]
fn bench_help_through_tollgate_lists_the_benchmarks_and_no_worker() {
    let out = Command::new(tollgate_exe())
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for bench in ["admission", "takeover", "fleet"] {
        assert!(stdout.contains(bench), "{bench} missing: {stdout}");
    }
    for internal in ["fleet-worker", "probe-socket", "  worker"] {
        assert!(!stdout.contains(internal), "{internal} listed: {stdout}");
    }
}

/// `--serve` makes every measured admission cross the socket of a `tollgate serve`
/// process, so this one run needs both executables and the worker subcommand.
///
/// The bench also refuses a run whose echo floor came out slower than tollgate (the
/// floor must be a floor). On 100 admissions in a debug build that is a matter of timing
/// noise (seen under load: floor p99 1,473 µs, tollgate's 769 µs), and tests never
/// assert wall-clock speed: that refusal alone is accepted here; every other failure of
/// the run (a window over its limit among them) still fails the test.
#[test]
fn admission_across_processes_runs_through_tollgate_with_a_dedicated_serve() {
    let out = Command::new(tollgate_exe())
        .args(["bench", "admission", "--processes", "2", "--requests", "50"])
        .args(["--rounds", "1", "--serve", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("bench admission: FAILED"))
        .collect();
    let only_timing = !failures.is_empty()
        && failures
            .iter()
            .all(|f| f.contains("is not a floor on this run"));
    assert!(
        out.status.success() || (out.status.code() == Some(1) && only_timing),
        "bench admission failed: {stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["processes"], 2, "{report}");
    assert_eq!(report["admitted"], 100, "{report}");
    assert!(report["coordinator_pid"].is_u64(), "{report}");
}

/// A copy of `exe` alone in a fresh directory of the target's tmp (a hard link where the
/// file system allows), so nothing is found beside it.
fn alone(exe: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let name = std::path::Path::new(exe).file_name().unwrap();
    let copy = dir.join(name);
    if std::fs::hard_link(exe, &copy).is_err() {
        std::fs::copy(exe, &copy).unwrap();
    }
    copy
}

#[test]
fn a_benchmark_needing_tollgate_says_how_to_build_it_when_it_is_missing() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bench = alone(bench_exe(), tmp.path());
    let out = Command::new(bench)
        .args(["admission", "--processes", "2", "--serve"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cargo build -p tollgate -p tollgate-bench --profile bench-fast"),
        "{stderr}"
    );
}
