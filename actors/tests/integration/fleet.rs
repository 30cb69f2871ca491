//! Fleet mode in the quota actors, in paused time over an in-memory table: several "hosts"
//! (runtimes with their own host ids) in one actix system share one key through the
//! table. The DynamoDB store itself is tested against dynalite in `tollgate-fleet`.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::fleet::{FleetErrorKind, MemoryFleetStore};
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionError, AdmissionHandle, FleetSetup,
    RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::fleet::{FleetConfig, FleetMode, OnError};
use tollgate_quota::{Outcome, Owner, Policy, QuotaKey, Refusal, Timestamp};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:GetKeyLastUsage"
        .parse()
        .unwrap()
}

fn host(
    store: &Arc<MemoryFleetStore>,
    clock: &Arc<TokioClock>,
    id: u32,
    on_error: OnError,
) -> AdmissionHandle {
    let setup = FleetSetup {
        store: store.clone(),
        config: FleetConfig {
            on_error,
            ..FleetConfig::default()
        },
        host: format!("host-{id}"),
    };
    let config = RuntimeConfig {
        fleet: Some(setup),
        ..RuntimeConfig::simulated(Owner {
            pid: id,
            generation: 1,
        })
    };
    start_in_current_system(config, clock.clone())
}

async fn request(
    handle: &AdmissionHandle,
    policy: Policy,
    retry: bool,
) -> Result<Timestamp, AdmissionError> {
    let slot = handle
        .reserve(&key(), policy, WaitOptions::default())
        .await?;
    let grant = slot.admit(1, retry, WaitOptions::default()).await?;
    slot.feedback(Outcome::Success, &grant);
    Ok(grant.admitted_at)
}

async fn fleet_status(handle: &AdmissionHandle) -> tollgate_quota::fleet::FleetView {
    handle.status().await.unwrap()[0]
        .fleet
        .clone()
        .expect("fleet mode")
}

/// 4 hosts × 2 workers, `each` requests each, on one key at `rate` burst `burst`: checks the
/// bucket bound over every interval; returns (table requests, seconds to finish).
fn shared_run(rate: f64, burst: f64, each: usize) -> (u64, f64) {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(rate, burst, 10, 4).unwrap();
        let hosts: Vec<_> = (1..=4)
            .map(|i| host(&store, &clock, i, OnError::Stop))
            .collect();
        let mut tasks = Vec::new();
        for h in &hosts {
            for _ in 0..2 {
                let h = h.clone();
                tasks.push(actix::spawn(async move {
                    let mut at = Vec::new();
                    for _ in 0..each {
                        at.push(request(&h, policy, false).await.unwrap());
                    }
                    at
                }));
            }
        }
        let mut admitted: Vec<Timestamp> = Vec::new();
        for t in tasks {
            admitted.extend(t.await.unwrap());
        }
        admitted.sort();
        let n_all = admitted.len();
        assert_eq!(n_all, 8 * each);
        for i in 0..admitted.len() {
            for j in i..admitted.len() {
                let t = admitted[j].saturating_since(admitted[i]).as_secs_f64();
                let n = (j - i + 1) as f64;
                assert!(n <= burst + rate * t + 1e-6, "{n} admissions in {t} s");
            }
        }
        let elapsed = admitted[n_all - 1].saturating_since(START).as_secs_f64();
        (store.requests(), elapsed)
    })
}

#[test]
fn hosts_sharing_a_key_stay_within_one_bucket_and_write_per_block_not_per_request() {
    // 200/s burst 200, 1,200 admissions: ideal (1200 − 200) / 200 = 5 s. Issue 13's
    // target: at most 0.125 table requests per admission.
    let (requests, elapsed) = shared_run(200.0, 200.0, 150);
    eprintln!("200/s burst 200: {requests} table requests for 1200 admissions in {elapsed} s");
    assert!(
        requests as f64 <= 0.125 * 1200.0,
        "{requests} table requests for 1200 admissions"
    );
    assert!(elapsed <= 5.0 * 1.25, "{elapsed} s");
}

#[test]
fn a_small_burst_shared_by_four_hosts_keeps_the_bound_within_ten_requests_a_second() {
    // 20/s burst 5, 120 admissions: ideal (120 − 5) / 20 = 5.75 s. Issue 13's target: at
    // most 10 table requests per second for the key. Regression: with level accounting a
    // spent block held refill back and hosts that got nothing polled (406 requests in
    // 8.9 s); future-dated blocks make every write grant useful tokens.
    let (requests, elapsed) = shared_run(20.0, 5.0, 15);
    eprintln!("burst 5: {requests} table requests for 120 admissions in {elapsed} s");
    assert!(
        requests as f64 / elapsed <= 10.0,
        "{requests} table requests in {elapsed} s"
    );
    assert!(elapsed <= 5.75 * 1.25, "{elapsed} s");
}

#[test]
fn an_uncontended_refresh_is_one_request() {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(200.0, 200.0, 10, 4).unwrap();
        let h = host(&store, &clock, 1, OnError::Stop);
        for _ in 0..600 {
            request(&h, policy, false).await.unwrap();
        }
        let writes = store.item(&key().to_string()).unwrap().version;
        // One GetItem for the key's first block (nothing cached yet), then one
        // conditional PutItem per block.
        assert_eq!(store.requests(), writes + 1, "{writes} writes");
        assert!(writes <= 600 / 8, "{writes} writes for 600 admissions");
    });
}

#[test]
fn a_throttle_seen_by_one_host_slows_every_host() {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(20.0, 5.0, 10, 4).unwrap();
        let (a, b) = (
            host(&store, &clock, 1, OnError::Stop),
            host(&store, &clock, 2, OnError::Stop),
        );
        request(&b, policy, false).await.unwrap();
        // A throttle on host a, reported with a's next block.
        let slot = a
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        slot.feedback(Outcome::Throttled, &grant);
        drop(slot);
        // Drain a's block so it asks for the next one (reporting the throttle).
        for _ in 0..6 {
            request(&a, policy, false).await.unwrap();
        }
        let item = store.item(&key().to_string()).unwrap().item;
        assert_eq!(item.penalty.factor, 0.5, "halved once");
        // b's next block carries the factor.
        for _ in 0..6 {
            request(&b, policy, false).await.unwrap();
        }
        assert_eq!(fleet_status(&b).await.factor, 0.5);
    });
}

/// Admissions in `[from, to)`.
fn admitted_between(at: &[Timestamp], from: Timestamp, to: Timestamp) -> usize {
    at.iter().filter(|t| **t >= from && **t < to).count()
}

#[test]
fn a_throttle_storm_at_every_host_halves_the_fleet_rate_once_and_slows_every_host_within_one_cooldown(
) {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let (rate, burst) = (40.0, 10.0);
        let policy = Policy::new(rate, burst, 10, 4).unwrap();
        let hosts: Vec<_> = (1..=4)
            .map(|i| host(&store, &clock, i, OnError::Stop))
            .collect();
        let storm_at = START + Duration::from_secs(3);
        let end = START + Duration::from_secs(9);
        // One worker per host, asking as fast as the fleet allows; each host's first
        // grant from `storm_at` on is answered with a throttle: the key is throttled at
        // every host at once.
        let mut tasks = Vec::new();
        for h in &hosts {
            let (h, clock) = (h.clone(), clock.clone());
            tasks.push(actix::spawn(async move {
                let mut at = Vec::new();
                let mut throttled = false;
                while tollgate_quota::Clock::now(&*clock) < end {
                    let slot = h
                        .reserve(&key(), policy, WaitOptions::default())
                        .await
                        .unwrap();
                    let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
                    let outcome = if !throttled && grant.admitted_at >= storm_at {
                        throttled = true;
                        Outcome::Throttled
                    } else {
                        Outcome::Success
                    };
                    slot.feedback(outcome, &grant);
                    at.push(grant.admitted_at);
                }
                at
            }));
        }
        // Within one cooldown of the storm (sooner: 1.5 s of the 2 s cooldown) every
        // host's block carries the halved factor, and the item was halved once, not once
        // per host (four halvings would leave 1/16).
        let check_at = storm_at + Duration::from_millis(1_500);
        tokio::time::sleep(check_at.saturating_since(START)).await;
        let item = store.item(&key().to_string()).unwrap().item;
        assert_eq!(item.penalty.factor, 0.5, "one storm, one halving");
        for (i, h) in hosts.iter().enumerate() {
            let factor = fleet_status(h).await.factor;
            assert_eq!(factor, 0.5, "host {} is slowed by the fleet factor", i + 1);
        }
        let mut per_host = Vec::new();
        for t in tasks {
            per_host.push(t.await.unwrap());
        }
        // Every host admits less in the 2 s after one cooldown than in the 2 s before the
        // storm (but still admits: slowed, not stopped). The first second is left out:
        // hosts' blocks grow to their share from a slow start, unevenly.
        let cooldown = tollgate_quota::fleet::FLEET_COOLDOWN;
        let before = (START + Duration::from_secs(1), storm_at);
        let after = (
            storm_at + cooldown,
            storm_at + cooldown + Duration::from_secs(2),
        );
        let mut after_total = 0;
        for (i, at) in per_host.iter().enumerate() {
            let b = admitted_between(at, before.0, before.1);
            let a = admitted_between(at, after.0, after.1);
            eprintln!("host {}: {b} admissions before the storm, {a} after", i + 1);
            assert!(a > 0 && a < b, "host {}: {b} before, {a} after", i + 1);
            after_total += a;
        }
        // The fleet as a whole: at most the burst plus 2 s at the penalised rate (the
        // factor is 1/2 and recovers by 1/16 per quiet cooldown: at most 5/8 here), and
        // at least 2 s at a quarter of the rate (the storm did not count four times).
        let most = burst + rate * 0.625 * 2.0;
        let least = rate * 0.25 * 2.0;
        assert!(
            (after_total as f64) <= most && (after_total as f64) >= least,
            "{after_total} admissions in the 2 s after one cooldown, expected {least}..={most}"
        );
    });
}

#[test]
fn fleet_retries_stop_when_the_shared_allowance_is_empty() {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        // Retry capacity 2 for the whole fleet: host a draws both with its first block.
        let policy = Policy::new(20.0, 5.0, 10, 2).unwrap();
        let (a, b) = (
            host(&store, &clock, 1, OnError::Stop),
            host(&store, &clock, 2, OnError::Stop),
        );
        let slot = a
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        slot.admit(1, false, WaitOptions::default()).await.unwrap();
        let slot_b = b
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        slot_b
            .admit(1, false, WaitOptions::default())
            .await
            .unwrap();
        let refused = slot_b.admit(1, true, WaitOptions::default()).await;
        assert!(
            matches!(
                refused,
                Err(AdmissionError::Refused {
                    refusal: Refusal::RetryAllowanceExhausted,
                    ..
                })
            ),
            "b has no units and the item has none: {refused:?}"
        );
        slot.admit(1, true, WaitOptions::default()).await.unwrap();
        slot.admit(1, true, WaitOptions::default()).await.unwrap();
        let third = slot.admit(1, true, WaitOptions::default()).await;
        assert!(
            matches!(third, Err(AdmissionError::Refused { .. })),
            "{third:?}"
        );
        // First attempts still go.
        slot_b
            .admit(1, false, WaitOptions::default())
            .await
            .unwrap();
    });
}

#[test]
fn stop_mode_refuses_naming_the_table_then_rejoins_when_it_answers() {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(20.0, 5.0, 10, 4).unwrap();
        let h = host(&store, &clock, 1, OnError::Stop);
        store.fail_with(Some(FleetErrorKind::Unreachable));
        let refused = request(&h, policy, false).await;
        match refused {
            Err(AdmissionError::Fleet { reason, .. }) => {
                assert!(reason.contains("in-memory test table"), "{reason}");
                assert!(reason.contains("Unreachable"), "{reason}");
            }
            other => panic!("expected a fleet refusal, got {other:?}"),
        }
        assert_eq!(fleet_status(&h).await.mode, FleetMode::Stop);
        store.fail_with(None);
        tokio::time::sleep(Duration::from_secs(6)).await;
        request(&h, policy, false).await.unwrap();
        assert_eq!(fleet_status(&h).await.mode, FleetMode::Fleet);
    });
}

#[test]
fn an_unreachable_table_degrades_to_a_local_share_of_the_rate() {
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(20.0, 5.0, 10, 4).unwrap();
        let hosts: Vec<_> = (1..=4)
            .map(|i| host(&store, &clock, i, OnError::LocalShare))
            .collect();
        // Host 1 writes last, so its last read saw all four hosts.
        for h in hosts.iter().rev() {
            request(h, policy, false).await.unwrap();
        }
        let h = &hosts[0];
        store.fail_with(Some(FleetErrorKind::Throttled));
        // Spend host 1's block, then it must ask the failing table.
        let mut at = Vec::new();
        for _ in 0..12 {
            at.push(request(h, policy, false).await.unwrap());
        }
        let view = fleet_status(h).await;
        assert_eq!(view.mode, FleetMode::LocalShare);
        assert_eq!(
            view.local_share_rate,
            Some(5.0),
            "20/s over the 4 hosts seen"
        );
        assert!(view.last_error.unwrap().contains("Throttled"));
        // Never the full rate: 8 admissions under the share (5/s, burst 1.25) take at
        // least (7 − 1.25)/5 s.
        let span = at[11].saturating_since(at[4]).as_secs_f64();
        assert!(span >= (7.0 - 1.25) / 5.0 - 1e-6, "{span}");
        store.fail_with(None);
        tokio::time::sleep(Duration::from_secs(6)).await;
        request(h, policy, false).await.unwrap();
        assert_eq!(fleet_status(h).await.mode, FleetMode::Fleet, "rejoined");
    });
}

#[test]
fn hosts_pairing_get_metric_data_with_a_datapoint_budget_stay_within_both_buckets() {
    // Issue 22: a datapoint budget is a key like any other, so in fleet mode its blocks
    // come from the table too. 3 hosts × 2 workers, 6 pages of 3,000 datapoints each
    // (108,000) against older-datapoints at 10,000/s burst 10,000, the request key at
    // 50/s burst 5: ideal (108,000 − 10,000) / 10,000 = 9.8 s, the datapoints binding.
    // Both bounds hold across the hosts. Measured: 29.9 s, where the budget key alone
    // (plain admissions of 3,000) takes 12.6 s here: a paired round that misses refunds
    // its lead's tokens to the local bucket, but the fleet tokens it spent from the
    // host's hand are not given back (which token a refund would return is not known
    // exactly, and returning the wrong one could spend one token twice), so contended
    // pairing in fleet mode wastes table capacity, never over-admits.
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let request_key: QuotaKey = "aws/123456789012/eu-west-1/cloudwatch:GetMetricData"
            .parse()
            .unwrap();
        let budget_key: QuotaKey =
            "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:older-datapoints"
                .parse()
                .unwrap();
        let request_policy = Policy::new(50.0, 5.0, 10, 4).unwrap();
        let (rate, burst) = (10_000.0, 10_000.0);
        let budget_policy = Policy::new(rate, burst, 10, 4).unwrap();
        let hosts: Vec<_> = (1..=3)
            .map(|i| host(&store, &clock, i, OnError::Stop))
            .collect();
        let mut tasks = Vec::new();
        for h in &hosts {
            for _ in 0..2 {
                let (h, request_key, budget_key) =
                    (h.clone(), request_key.clone(), budget_key.clone());
                tasks.push(actix::spawn(async move {
                    let mut at = Vec::new();
                    for _ in 0..6 {
                        let slot = h
                            .reserve(&request_key, request_policy, WaitOptions::default())
                            .await
                            .unwrap();
                        let grant = slot
                            .admit_with_budget(
                                1,
                                false,
                                &budget_key,
                                budget_policy,
                                3_000,
                                WaitOptions::default(),
                            )
                            .await
                            .unwrap();
                        slot.feedback(Outcome::Success, &grant);
                        at.push(grant.admitted_at);
                    }
                    at
                }));
            }
        }
        let mut admitted: Vec<Timestamp> = Vec::new();
        for t in tasks {
            admitted.extend(t.await.unwrap());
        }
        admitted.sort();
        assert_eq!(admitted.len(), 36);
        for i in 0..admitted.len() {
            for j in i..admitted.len() {
                let t = admitted[j].saturating_since(admitted[i]).as_secs_f64();
                let n = (j - i + 1) as f64;
                assert!(3_000.0 * n <= burst + rate * t + 1e-6, "{n} pages in {t} s");
                assert!(n <= 5.0 + 50.0 * t + 1e-6, "{n} requests in {t} s");
            }
        }
        let elapsed = admitted[35].saturating_since(START).as_secs_f64();
        assert!((9.8..=9.8 * 3.5).contains(&elapsed), "{elapsed} s");
        let item = store
            .item(&budget_key.to_string())
            .expect("the budget has its own item in the table");
        assert!(item.version > 0);
    });
}
