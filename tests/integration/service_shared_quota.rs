//! A `tollgate discover` run alongside the service shares the service's quotas: real
//! processes, one admission directory, moto.
//!
//! `tollgate serve` holds the coordinator role; a `tollgate discover` started next becomes
//! the coordinator's client, and once it is granting, the service starts a scan of its
//! own. Both scan DynamoDB tables, so both call `dynamodb:control-plane-read`, which
//! `TOLLGATE_QUOTA_OVERRIDES` (the same in both processes) makes tight: [`RATE`] per
//! second, burst [`BURST`]. Each process writes its attempt telemetry (`serve
//! --telemetry`, `discover --telemetry`); a dispatched attempt's grant instant is
//! `startedAtMs + queueDurationMs` (the admission wait ends just before the request goes
//! out, so the two differ by the send path's microseconds and the millisecond rounding).
//!
//! The check: over the union of both processes' grants of that key, every window of
//! one second holds at most `BURST + RATE` grants. Why this would fail without sharing:
//! two processes that each paced their own bucket at [`RATE`] would together grant about
//! twice that in every second both are busy, and the test first checks that they were
//! busy at the same time (each has grants inside the other's span), so it cannot pass
//! by the two scans merely taking turns.
//!
//! Why the service's scan waits for the first grant of `discover`: a process start can
//! take seconds on a loaded machine, and a scan started before it could be over by then
//! (no overlap, a failed test); the service's own scan starts in-process, at once.
//!
//! Test time: the timing rule itself (one key's window across processes) is checked on
//! real time by `bench/tests/integration/coordination.rs`
//! (`four_processes_share_one_key_and_never_exceed_the_window`) and the bucket's bound by
//! the quota crate's property tests; this test checks the wiring (serve's coordinator,
//! discover as its client, the overrides in both), so its rate is one that keeps the run
//! to seconds while two unshared buckets would still exceed the bound ([`RATE`] > [`BURST`]).

use crate::service_support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use service_support::{child_env, Dirs, Serve};
use tollgate_testkit::moto::moto;
use tollgate_testkit::unique_prefix;

const RATE: f64 = 8.0;
const BURST: f64 = 1.0;
const KEY: &str = "dynamodb:control-plane-read";
/// A region no other test uses, so that both scans describe this test's tables and no
/// others, however many the shared moto holds.
const REGION: &str = "us-west-2";
/// Tables each scan describes: enough calls that each scan alone needs seconds at
/// [`RATE`].
const TABLES: usize = 32;
const LIMIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(100);

fn overrides() -> String {
    format!(r#"{{"{KEY}":{{"ratePerSecond":{RATE},"burst":{BURST}}}}}"#)
}

/// Grant instants (Unix ms) of `KEY` in one telemetry file.
fn grants(path: &Path) -> Vec<u64> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    grants_in(&text)
}

/// Grant instants (Unix ms) of `KEY` in telemetry lines; a line still being written (no
/// newline yet) is left out.
fn grants_in(text: &str) -> Vec<u64> {
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut grants: Vec<u64> = complete
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
        .filter(|e| e["dispatched"] == true)
        .filter(|e| e["quota"].as_str().is_some_and(|q| q.ends_with(KEY)))
        .map(|e| e["startedAtMs"].as_u64().unwrap() + e["queueDurationMs"].as_u64().unwrap())
        .collect();
    grants.sort_unstable();
    grants
}

/// How many of `grants` fall inside `[from, to]`.
fn within(grants: &[u64], from: u64, to: u64) -> usize {
    grants.iter().filter(|g| (from..=to).contains(g)).count()
}

#[test]
fn discover_alongside_the_service_shares_its_quota_window() {
    let moto = moto();
    moto.create_tables_in(REGION, &unique_prefix("shared"), TABLES);
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::new(tmp.path());
    let serve_log = tmp.path().join("serve.jsonl");
    let discover_log = tmp.path().join("discover.jsonl");
    let overrides = overrides();
    let serve = Serve::start(
        &dirs,
        &["--telemetry", serve_log.to_str().unwrap()],
        &[("TOLLGATE_QUOTA_OVERRIDES", &overrides)],
    );

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args([
        "discover",
        "--regions",
        REGION,
        "--datasets",
        "dynamodb-tables",
    ])
    .args(["--endpoint-url", &moto.url, "--timeout", "100s"])
    .arg("--telemetry")
    .arg(&discover_log)
    .arg("--output")
    .arg(tmp.path().join("report.json"));
    child_env(&mut cmd, &dirs);
    let stderr_path = tmp.path().join("discover.stderr");
    let mut discover = cmd
        .env("TOLLGATE_QUOTA_OVERRIDES", &overrides)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("spawning tollgate discover");
    // Wait (bounded) until discover is granting, then start the service's scan.
    let mut polls = 0;
    while !std::fs::read_to_string(&discover_log).is_ok_and(|t| !grants_in(&t).is_empty()) {
        polls += 1;
        if polls > LIMIT.as_millis() / POLL.as_millis() || discover.try_wait().unwrap().is_some() {
            let _ = discover.kill();
            let _ = discover.wait();
            panic!(
                "tollgate discover granted no {KEY} within {LIMIT:?}: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(POLL);
    }
    let (code, answer) = serve.json(
        "POST",
        "/v1/scans",
        Some(&format!(
            r#"{{"regions":["{REGION}"],"datasets":["dynamodb-tables"],"endpoint_url":"{}","timeout":"100s"}}"#,
            moto.url
        )),
    );
    assert_eq!(code, 202, "{answer}");
    let scan_id = answer["scan_id"].as_str().unwrap().to_string();
    let mut status = None;
    for _ in 0..(LIMIT.as_millis() / POLL.as_millis()) {
        status = discover.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(POLL);
    }
    let Some(status) = status else {
        let _ = discover.kill();
        let _ = discover.wait();
        panic!("tollgate discover did not finish within {LIMIT:?}");
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "discover failed: {status}\n{stderr}");
    assert_eq!(serve.wait_for(&scan_id, &["complete"], LIMIT), "complete");

    let mine = grants(&serve_log);
    let theirs = grants(&discover_log);
    assert!(
        mine.len() > TABLES && theirs.len() > TABLES,
        "each process should have described every table: serve {} grants, discover {}",
        mine.len(),
        theirs.len()
    );
    // Busy at the same time: each process has grants inside the other's span.
    let (m0, m1) = (mine[0], *mine.last().unwrap());
    let (t0, t1) = (theirs[0], *theirs.last().unwrap());
    let (shared_in_mine, shared_in_theirs) = (within(&theirs, m0, m1), within(&mine, t0, t1));
    assert!(
        shared_in_mine >= 3 && shared_in_theirs >= 3,
        "the two scans did not overlap enough to test sharing: serve {m0}..{m1}, discover \
         {t0}..{t1}"
    );

    let mut all: Vec<u64> = mine.iter().chain(&theirs).copied().collect();
    all.sort_unstable();
    let bound = (BURST + RATE) as usize;
    let worst = all
        .iter()
        .map(|&start| within(&all, start, start + 999))
        .max()
        .unwrap();
    eprintln!(
        "shared key {KEY}: serve {} grants, discover {}, overlap {shared_in_mine}/{shared_in_theirs}, \
         worst one-second window {worst} (bound {bound})",
        mine.len(),
        theirs.len()
    );
    assert!(
        worst <= bound,
        "{worst} grants of {KEY} in one second across both processes; the shared bound is \
         {bound}: {all:?}"
    );
}
