//! An unclean takeover at the actors level, in paused time: runtime A saturates a key and
//! "dies" mid-run (no shutdown, so its newest stored record is a leased snapshot); runtime
//! B restores from that record and saturates the key again. Across both, the bounds of
//! DESIGN §3 must hold as if one coordinator had served everything, and B must resume
//! within the lease's share of the window, not after a whole window.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionError, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::window::WindowShape;
use tollgate_quota::{Clock, Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::{MemoryStore, QuotaStore};

const START: Timestamp = Timestamp::from_millis(7_000_000);
/// Detecting the death, electing and opening the state (simulated).
const TAKEOVER: Duration = Duration::from_millis(40);

fn key() -> QuotaKey {
    "aws/123456789012/us-east-1/logs:DescribeLogStreams"
        .parse()
        .unwrap()
}

fn config(store: Arc<dyn QuotaStore>, pid: u32) -> RuntimeConfig {
    RuntimeConfig {
        store,
        owner: Owner { pid, generation: 1 },
        pid_alive: Arc::new(move |p| p == pid),
        evict_after: Duration::from_secs(300),
        schedules: tollgate_actors::Schedules::none(),
        fleet: None,
        breakers: None,
        fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
    }
}

/// Admit greedily (cost `cost`) from `from` until `until`, returning the grant instants.
fn saturate(
    store: Arc<dyn QuotaStore>,
    pid: u32,
    policy: Policy,
    from: Timestamp,
    until: Timestamp,
    cost: u32,
) -> Vec<Timestamp> {
    paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(from));
        let handle = start_in_current_system(config(store, pid), clock.clone());
        let slot = handle
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let mut grants = Vec::new();
        while clock.now() < until {
            // Give up at `until`: a grant that would come later never happens.
            let wait = WaitOptions {
                timeout: until - clock.now(),
                scope: None,
            };
            match slot.admit(cost, false, wait).await {
                Ok(g) => grants.push(g.admitted_at),
                Err(AdmissionError::DeadlineExceeded { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        std::mem::forget(slot);
        // No shutdown: the runtime dies with the system, leaving its last leased record.
        std::mem::forget(handle);
        grants
    })
}

/// Assert the bounds of DESIGN §3 over `grants` (sorted) of `cost` each under `policy`.
pub(crate) fn check_bounds(policy: Policy, grants: &[Timestamp], cost: u32) {
    let shape = WindowShape::for_rate(policy.rate_per_second());
    for (i, start) in grants.iter().enumerate() {
        let in_window = grants[i..]
            .iter()
            .take_while(|t| **t < *start + shape.length)
            .count() as u64;
        assert!(
            in_window <= shape.limit,
            "{in_window} starts in the window from {start} (limit {})",
            shape.limit
        );
    }
    for i in 0..grants.len() {
        for j in i..grants.len() {
            let spent = f64::from(cost) * (j - i + 1) as f64;
            let t = (grants[j] - grants[i]).as_secs_f64();
            let bound = policy.burst() + policy.rate_per_second() * t;
            assert!(
                spent <= bound + 1e-6,
                "cost {spent} over {t} s exceeds {bound}"
            );
        }
    }
}

fn crash_and_take_over(policy: Policy, cost: u32, crash_after: Duration) -> Duration {
    let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
    let crash_at = START + crash_after;
    let mut grants = saturate(store.clone(), 1, policy, START, crash_at, cost);
    assert!(!grants.is_empty(), "A granted before it died");
    let record: serde_json::Value =
        serde_json::from_slice(&store.load(&key().to_string()).unwrap().unwrap()).unwrap();
    assert!(
        !record["lease"].is_null(),
        "A's last record is leased: {record}"
    );
    let takeover_at = crash_at + TAKEOVER;
    let after = saturate(
        store,
        2,
        policy,
        takeover_at,
        takeover_at + Duration::from_secs(3),
        cost,
    );
    let resumed = after[0] - crash_at;
    grants.extend(after);
    check_bounds(policy, &grants, cost);
    resumed
}

#[test]
fn a_takeover_from_a_leased_record_keeps_every_bound() {
    let table = [
        // (rate, burst, cost, crash after ms)
        (20.0, 5.0, 1, 1_337),
        (20.0, 5.0, 1, 2_010),
        (100.0, 20.0, 1, 1_505),
        (10.0, 10.0, 3, 1_250),
        (4.0, 2.0, 1, 3_100),
        (0.5, 1.0, 1, 4_500),
    ];
    for (rate, burst, cost, crash_ms) in table {
        let policy = Policy::new(rate, burst, 10, 20).unwrap();
        let resumed = crash_and_take_over(policy, cost, Duration::from_millis(crash_ms));
        println!("rate {rate} burst {burst} cost {cost}: first grant {resumed:?} after the crash");
    }
}

/// Where the format-1 rule (window counted full) made a saturated 20/s key wait a whole
/// second after the crash, the lease charge (2 of 20 starts) costs a fraction of it.
#[test]
fn a_saturated_key_resumes_within_300_ms_of_the_crash() {
    let policy = Policy::new(20.0, 5.0, 10, 20).unwrap();
    for crash_ms in [1_003, 1_337, 1_650, 2_222] {
        let resumed = crash_and_take_over(policy, 1, Duration::from_millis(crash_ms));
        assert!(
            resumed <= Duration::from_millis(300),
            "crash at {crash_ms} ms: first grant {resumed:?} after it"
        );
        assert!(resumed >= TAKEOVER);
    }
}

/// A throttle that deepens the penalty is stored at once: a coordinator killed a moment
/// later (long before its next periodic save) does not take it to the grave, and its
/// successor keeps pacing the key down.
#[test]
fn a_throttle_reported_just_before_a_crash_survives_it() {
    let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
    let policy = Policy::new(10.0, 5.0, 10, 20).unwrap();
    let a_store = store.clone();
    paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(a_store, 1), clock.clone());
        let slot = handle
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        slot.feedback(tollgate_quota::Outcome::Throttled, &grant);
        // Let the feedback reach the actor, then die well within the periodic save.
        tokio::time::sleep(Duration::from_millis(1)).await;
        std::mem::forget(slot);
        std::mem::forget(handle);
    });
    let steps = paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(START + Duration::from_millis(2)));
        let handle = start_in_current_system(config(store, 2), clock);
        // Touch the key so its actor loads the record.
        let slot = handle
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let status = handle.status().await.unwrap();
        drop(slot);
        status[0].state.penalty_steps
    });
    assert!(
        steps >= 1,
        "the successor forgot the throttle (penalty steps {steps})"
    );
}
