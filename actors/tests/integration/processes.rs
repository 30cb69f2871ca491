//! Breakers and the Retry-After pause across real processes: this test binary starts
//! helper processes (`tollgate-actors-test-child`, tests/bin/child.rs) as clients of the
//! coordinator it runs, so every request crosses the admission socket between separate
//! processes, as `tollgate` processes do.
//!
//! Real time: the breaker test waits out the real 5 s first opening (the constant is not
//! configurable on purpose).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tollgate_actors::{connect, CoordinatorSpec, WaitOptions};
use tollgate_quota::{Outcome, Passage, Policy, QuotaKey, Timestamp};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/ec2:describe".parse().unwrap()
}

fn policy() -> Policy {
    Policy::new(100.0, 100.0, 10, 10).unwrap()
}

/// A `tollgate-actors-test-child` in `role` on `dir`, with this file's key and policy.
fn spawn_child(role: &str, dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tollgate-actors-test-child"))
        .arg(role)
        .arg(dir)
        .arg(key().to_string())
        .arg(serde_json::to_string(&policy()).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The `RESULT` line a child printed: what it got and when (coordinator clock, µs).
fn result_of(child: Child) -> (String, u64) {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "a child failed: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line in {text:?}"))
        .to_owned();
    let (what, at) = line.split_once(' ').unwrap();
    (what.to_owned(), at.parse().unwrap())
}

#[test]
fn one_probe_across_three_processes_and_the_others_go_on_its_success() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(coordinator.is_coordinator());
    let handle = coordinator.handle();
    let rt = runtime();
    let opened = rt.block_on(async {
        for _ in 0..5 {
            assert_eq!(
                handle.breaker_pass(&key(), Duration::ZERO).await.unwrap(),
                Passage::Go
            );
            handle.breaker_report(&key(), Some(Outcome::Transient), None);
        }
        let status = handle.coordination().await.unwrap();
        status.breakers[0].reopens_at.expect("open")
    });
    let children: Vec<Child> = (0..3)
        .map(|_| spawn_child("breaker", tmp.path().join("adm").as_path()))
        .collect();
    let results: Vec<(String, u64)> = children.into_iter().map(result_of).collect();
    let probes: Vec<_> = results.iter().filter(|(w, _)| w == "probe").collect();
    assert_eq!(probes.len(), 1, "exactly one process probes: {results:?}");
    let probe_done = probes[0].1;
    for (what, at) in &results {
        assert!(
            *at >= opened.as_micros(),
            "nobody passes before the opening ends: {results:?}"
        );
        if what != "probe" {
            assert_eq!(what, "go", "{results:?}");
            // Released by the probe's answer (500 ms after the opening), not its lease.
            let after_open = Timestamp::from_micros(*at).saturating_since(opened);
            assert!(after_open < Duration::from_secs(5), "{results:?}");
            assert!(*at <= probe_done + 1_000_000, "{results:?}");
        }
    }
    rt.block_on(coordinator.shutdown()).unwrap();
}

#[test]
fn a_retry_after_pause_holds_back_a_waiter_in_another_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let handle = coordinator.handle();
    let rt = runtime();
    let wait = WaitOptions {
        timeout: Duration::from_secs(60),
        scope: None,
    };
    let (slot, paused_at) = rt.block_on(async {
        let slot = handle.reserve(&key(), policy(), wait).await.unwrap();
        slot.admit(1, false, wait).await.unwrap();
        // The answer was a 503 with Retry-After: 3.
        let at = handle.now();
        slot.pause(Duration::from_secs(3));
        (slot, at)
    });
    let child = spawn_child("waiter", tmp.path().join("adm").as_path());
    let (what, at) = result_of(child);
    assert_eq!(what, "admitted");
    let waited = Timestamp::from_micros(at).saturating_since(paused_at);
    assert!(
        waited >= Duration::from_secs(3),
        "the other process was admitted {waited:?} after the pause began"
    );
    drop(slot);
    rt.block_on(coordinator.shutdown()).unwrap();
}
