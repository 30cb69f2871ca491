//! `tollgate-actors-test-child`: the other processes of the actors' multi-process tests
//! (`tests/processes.rs`, `tests/allowance_crash.rs`, `tests/unrecorded_crash.rs`). A
//! helper binary rather than a `#[test]` of the test binary re-run on itself, so that a
//! child's body is not counted, and passed, as a test of its own in every normal run.
//!
//! `tollgate-actors-test-child ROLE DIR KEY POLICY_OR_OVERRIDES`: joins the admission
//! directory `DIR`, does what `ROLE` says with the quota key `KEY`, and prints what it got
//! on stdout for the parent to check. Every value comes from the parent, so each is
//! written once, in the test.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{connect, CoordinatorSpec, Schedules, WaitOptions};
use tollgate_quota::{Outcome, Passage, Policy, PolicyTable, QuotaKey, WallClock};
use tollgate_storage::AdmissionDir;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [role, dir, key, policy] = args.as_slice() else {
        eprintln!("usage: tollgate-actors-test-child ROLE DIR KEY POLICY_OR_OVERRIDES");
        return ExitCode::from(2);
    };
    let key: QuotaKey = key.parse().expect("a quota key");
    let dir = AdmissionDir::at(dir).expect("an admission directory");
    // The tests' children run in real time, on one thread, as `tollgate` does.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match role.as_str() {
        "breaker" | "waiter" => {
            let policy: Policy = serde_json::from_str(policy).expect("a policy as JSON");
            client(role, &dir, &key, policy, &runtime);
        }
        "allowance-coordinator" => allowance_coordinator(&dir, &key, policy, &runtime),
        "fresh-keys-coordinator" => {
            let policy: Policy = serde_json::from_str(policy).expect("a policy as JSON");
            fresh_keys_coordinator(&dir, &key, &policy, &runtime);
        }
        other => panic!("unknown role {other}"),
    }
    ExitCode::SUCCESS
}

/// `breaker`: ask for the breaker's pass (the parent opened it) and, as the probe,
/// answer 500 ms later with a success. `waiter`: reserve, say `READY`, wait for a grant
/// (the parent paused the key). Either way print `RESULT what when` (coordinator clock, µs).
fn client(
    role: &str,
    dir: &AdmissionDir,
    key: &QuotaKey,
    policy: Policy,
    runtime: &tokio::runtime::Runtime,
) {
    let admission = connect(dir, CoordinatorSpec::none()).unwrap();
    assert!(!admission.is_coordinator(), "the parent coordinates");
    let handle = admission.handle();
    runtime.block_on(async {
        let line = if role == "breaker" {
            match handle.breaker_pass(key, Duration::from_secs(120)).await {
                Ok(Passage::Probe(lease)) => {
                    // The probe's call: the service answers after 500 ms, healthy again.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    handle.breaker_report(key, Some(Outcome::Success), Some(lease.id));
                    format!("probe {}", handle.now().as_micros())
                }
                Ok(other) => {
                    format!("{other:?} {}", handle.now().as_micros()).replace("Go ", "go ")
                }
                Err(e) => panic!("{e}"),
            }
        } else {
            let wait = WaitOptions {
                timeout: Duration::from_secs(60),
                scope: None,
            };
            let slot = handle.reserve(key, policy, wait).await.unwrap();
            println!("READY");
            let grant = slot.admit(1, false, wait).await.unwrap();
            format!("admitted {}", grant.admitted_at.as_micros())
        };
        println!("RESULT {line}");
        admission.shutdown().await.unwrap();
    });
}

/// `fresh-keys-coordinator`: become the coordinator of `dir`, grant once under `policy`
/// on `key` and on each key of `TOLLGATE_TEST_CHILD_MORE_KEYS` (comma-separated; none
/// has a record yet), print `spent`, and keep coordinating until killed.
fn fresh_keys_coordinator(
    dir: &AdmissionDir,
    key: &QuotaKey,
    policy: &Policy,
    runtime: &tokio::runtime::Runtime,
) {
    let more = std::env::var("TOLLGATE_TEST_CHILD_MORE_KEYS").unwrap_or_default();
    let more = more.split(',').filter(|k| !k.is_empty());
    let keys: Vec<QuotaKey> = std::iter::once(key.clone())
        .chain(more.map(|k| k.parse().expect("a quota key")))
        .collect();
    let admission = connect(dir, CoordinatorSpec::none()).unwrap();
    assert!(admission.is_coordinator());
    runtime.block_on(async {
        let handle = admission.handle();
        let mut slots = Vec::new();
        for key in &keys {
            let slot = handle.reserve(key, *policy, WaitOptions::default()).await;
            let slot = slot.unwrap();
            slot.admit(1, false, WaitOptions::default()).await.unwrap();
            slots.push(slot);
        }
        println!("spent");
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
}

/// `allowance-coordinator`: become the coordinator of `dir` under `overrides` (a policy
/// table with a calendar allowance), spend `TOLLGATE_TEST_CHILD_SPENDS` starts printing
/// `granted` for each, print `spent`, and keep coordinating until killed.
fn allowance_coordinator(
    dir: &AdmissionDir,
    key: &QuotaKey,
    overrides: &str,
    runtime: &tokio::runtime::Runtime,
) {
    let spends: usize = std::env::var("TOLLGATE_TEST_CHILD_SPENDS")
        .expect("TOLLGATE_TEST_CHILD_SPENDS")
        .parse()
        .expect("a count");
    let table = PolicyTable::with_overrides(overrides, "test overrides").unwrap();
    let policy = table.policy_for_key(key);
    let spec = CoordinatorSpec {
        schedules: Schedules::new(Arc::new(table), WallClock::UNIX_EPOCH),
        fleet: None,
    };
    let admission = connect(dir, spec).unwrap();
    assert!(admission.is_coordinator());
    runtime.block_on(async {
        let handle = admission.handle();
        let slot = handle
            .reserve(key, policy, WaitOptions::default())
            .await
            .unwrap();
        for _ in 0..spends {
            slot.admit(1, false, WaitOptions::default()).await.unwrap();
            println!("granted");
        }
        println!("spent");
        // Keep the coordinator (and its periodic renewals) running until killed.
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
}
