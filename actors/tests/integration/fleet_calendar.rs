//! One calendar across the fleet (issue 23), in paused time over the in-memory table:
//! hosts (runtimes with their own host ids and policy tables) share a key whose
//! allowance or schedule is on its item. An allowance admits at most its amount per
//! period across hosts, a host killed mid-period included, and the next period starts at
//! the reset; a lowered rate at a Berlin boundary holds every host from the boundary on;
//! a host declaring a looser schedule is held to the strictest and told who differs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::fleet::MemoryFleetStore;
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionHandle, FleetSetup, RuntimeConfig, Schedules,
    TokioClock, WaitOptions,
};
use tollgate_quota::fleet::{FleetConfig, FleetView, OnError};
use tollgate_quota::{Clock, Outcome, Owner, Policy, PolicyTable, QuotaKey, Timestamp, WallClock};

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:ListKeys".parse().unwrap()
}

/// The instant of `text` on a clock counting from the Unix epoch.
fn at(text: &str) -> Timestamp {
    WallClock::parse_rfc3339(text)
        .unwrap()
        .to_timestamp(WallClock::UNIX_EPOCH)
}

fn table(overrides: &str) -> Arc<PolicyTable> {
    Arc::new(PolicyTable::with_overrides(overrides, "test overrides").unwrap())
}

/// A host with its own id and policy table on the shared `store`.
fn host(
    store: &Arc<MemoryFleetStore>,
    clock: &Arc<TokioClock>,
    id: u32,
    overrides: &str,
    on_error: OnError,
) -> (AdmissionHandle, Policy) {
    let table = table(overrides);
    let policy = table.policy_for_key(&key());
    let config = RuntimeConfig {
        fleet: Some(FleetSetup {
            store: store.clone(),
            config: FleetConfig {
                on_error,
                skew: Duration::ZERO,
                ..FleetConfig::default()
            },
            host: format!("host-{id}"),
        }),
        schedules: Schedules::new(table, WallClock::UNIX_EPOCH),
        ..RuntimeConfig::simulated(Owner {
            pid: id,
            generation: 1,
        })
    };
    (start_in_current_system(config, clock.clone()), policy)
}

/// Spawn `n` callers on `handle` until `end`; each task returns its admission instants.
fn spawn_callers(
    handle: &AdmissionHandle,
    policy: Policy,
    clock: &Arc<TokioClock>,
    end: Timestamp,
    n: usize,
) -> Vec<tokio::task::JoinHandle<Vec<Timestamp>>> {
    (0..n)
        .map(|_| {
            let (h, clock) = (handle.clone(), clock.clone());
            actix::spawn(async move {
                let mut admitted = Vec::new();
                while clock.now() < end {
                    let slot = match h.reserve(&key(), policy, WaitOptions::default()).await {
                        Ok(slot) => slot,
                        Err(_) => {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            continue;
                        }
                    };
                    match slot.admit(1, false, WaitOptions::default()).await {
                        Ok(grant) => {
                            slot.feedback(Outcome::Success, &grant);
                            if grant.admitted_at < end {
                                admitted.push(grant.admitted_at);
                            }
                        }
                        Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                    }
                }
                admitted
            })
        })
        .collect()
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<Vec<Timestamp>>>) -> Vec<Timestamp> {
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    all
}

async fn fleet_view(handle: &AdmissionHandle) -> FleetView {
    handle.status().await.unwrap()[0]
        .fleet
        .clone()
        .expect("fleet mode")
}

/// The most admissions in any interval `[a, a + L]` minus `rate·L`, over `admitted`.
fn excess_over_rate(admitted: &[Timestamp], rate: f64) -> f64 {
    let mut worst = 0.0f64;
    for i in 0..admitted.len() {
        for j in i..admitted.len() {
            let l = admitted[j].saturating_since(admitted[i]).as_secs_f64();
            worst = worst.max((j - i + 1) as f64 - rate * l);
        }
    }
    worst
}

const ALLOWANCE: &str = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
    "allowance": {"amount": 50, "resets": "* * * * *", "timezone": "UTC"}}}"#;

#[test]
fn an_allowance_admits_at_most_its_amount_per_period_across_hosts_a_host_killed_mid_period_included(
) {
    paused_system().block_on(async {
        let start = at("2026-01-05T10:00:20Z");
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(start));
        let hosts: Vec<_> = (1..=4)
            .map(|i| host(&store, &clock, i, ALLOWANCE, OnError::Stop))
            .collect();
        let end = at("2026-01-05T10:04:30Z");
        // Host 4 dies 1.5 s into the second period, with tokens in hand.
        let killed_at = at("2026-01-05T10:01:01.500Z");
        let mut tasks = Vec::new();
        for (h, policy) in &hosts[..3] {
            tasks.extend(spawn_callers(h, *policy, &clock, end, 2));
        }
        let (h4, p4) = &hosts[3];
        let doomed = spawn_callers(h4, *p4, &clock, killed_at, 2);
        let mut admitted = collect(tasks).await;
        let before_death = collect(doomed).await;
        admitted.extend(before_death.iter().copied());
        admitted.sort();
        let mut per_minute = BTreeMap::<u64, Vec<Timestamp>>::new();
        for t in &admitted {
            per_minute
                .entry(t.as_micros() / 60_000_000)
                .or_default()
                .push(*t);
        }
        let counts: Vec<usize> = per_minute.values().map(Vec::len).collect();
        eprintln!(
            "admissions per minute: {counts:?}; host 4 admitted {}",
            before_death.len()
        );
        assert_eq!(counts.len(), 5, "{counts:?}");
        for (minute, at) in &per_minute {
            assert!(at.len() <= 50, "minute {minute}: {} admissions", at.len());
        }
        // Busy hosts spend whole periods, except the one host 4 died in: its tokens in
        // hand are lost to the period, never given back.
        assert_eq!(counts[2..], [50, 50, 50], "{counts:?}");
        assert!(counts[1] <= 50, "{counts:?}");
        assert!(!before_death.is_empty(), "host 4 took part before it died");
        // Each later period starts at its reset instant.
        for (minute, at) in per_minute.iter().skip(1) {
            let reset = Timestamp::from_micros(minute * 60_000_000);
            let first = at[0].saturating_since(reset);
            assert!(
                first <= Duration::from_millis(5),
                "minute {minute}: first at +{first:?}"
            );
        }
        let item = store.item(&key().to_string()).unwrap().item;
        let counter = item.calendar.unwrap().allowance.unwrap();
        assert!(
            counter.consumed_total() >= admitted.len() as u64,
            "charged at least what was admitted ({} < {})",
            counter.consumed_total(),
            admitted.len()
        );
    });
}

const BERLIN: &str = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
    "schedule": [{"cron": "* 17-23 * * *", "timezone": "Europe/Berlin",
                  "ratePerSecond": 2, "burst": 1}]}}"#;

#[test]
fn a_rate_lowered_at_1700_in_berlin_holds_every_host_from_the_boundary_on() {
    paused_system().block_on(async {
        // 17:00 in Berlin is 16:00Z in winter.
        let boundary = at("2026-01-05T16:00:00Z");
        let start = boundary.saturating_sub(Duration::from_secs(5));
        let end = boundary + Duration::from_secs(20);
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(start));
        let mut tasks = Vec::new();
        for i in 1..=3 {
            let (h, policy) = host(&store, &clock, i, BERLIN, OnError::Stop);
            tasks.extend(spawn_callers(&h, policy, &clock, end, 2));
        }
        let admitted = collect(tasks).await;
        let (before, after): (Vec<_>, Vec<_>) = admitted.iter().partition(|t| **t < boundary);
        eprintln!(
            "{} admissions before 17:00, {} after",
            before.len(),
            after.len()
        );
        assert!(
            before.len() >= 50,
            "20/s before the boundary: {}",
            before.len()
        );
        // From the boundary on, the fleet (not each host) is within 2/s burst 1.
        let excess = excess_over_rate(&after, 2.0);
        assert!(
            excess <= 1.0 + 1e-6,
            "{} after, excess {excess}",
            after.len()
        );
        assert!(after.len() >= 30, "still admits at 2/s: {}", after.len());
    });
}

#[test]
fn a_host_declaring_a_looser_schedule_is_held_to_the_strictest_and_warned() {
    let strict = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
        "schedule": [{"cron": "* * * * *", "timezone": "UTC", "ratePerSecond": 2, "burst": 1}]}}"#;
    let loose = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
        "schedule": [{"cron": "* 0-5 * * *", "timezone": "UTC", "ratePerSecond": 1, "burst": 1}]}}"#;
    paused_system().block_on(async {
        let start = at("2026-01-05T10:00:00Z");
        let end = start + Duration::from_secs(20);
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(start));
        let (a, pa) = host(&store, &clock, 1, strict, OnError::Stop);
        let (b, pb) = host(&store, &clock, 2, loose, OnError::Stop);
        // The strict host writes once; then only the loose one asks, as fast as it may.
        let first = collect(spawn_callers(
            &a,
            pa,
            &clock,
            start + Duration::from_millis(1),
            1,
        ))
        .await;
        assert_eq!(first.len(), 1);
        let admitted = collect(spawn_callers(&b, pb, &clock, end, 4)).await;
        let excess = excess_over_rate(&admitted, 2.0);
        eprintln!(
            "the loose host admitted {} in 20 s, excess {excess}",
            admitted.len()
        );
        assert!(excess <= 1.0 + 1e-6, "held to 2/s burst 1: excess {excess}");
        assert!(admitted.len() >= 30, "{}", admitted.len());
        let view = fleet_view(&b).await;
        assert_eq!(view.declarations_differ, vec!["host-1".to_string()]);
        let item = store.item(&key().to_string()).unwrap().item;
        assert_eq!(
            (item.rate, item.burst),
            (2.0, 1.0),
            "the item's parameters in force"
        );
    });
}

#[test]
fn a_degraded_host_divides_the_allowances_remaining_by_the_hosts_seen_then_each_period() {
    paused_system().block_on(async {
        let start = at("2026-01-05T10:00:20Z");
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(start));
        let hosts: Vec<_> = (1..=4)
            .map(|i| host(&store, &clock, i, ALLOWANCE, OnError::LocalShare))
            .collect();
        // Host 1 writes last, so its last read saw all four hosts.
        for (h, policy) in hosts.iter().rev() {
            let slot = h
                .reserve(&key(), *policy, WaitOptions::default())
                .await
                .unwrap();
            slot.admit(1, false, WaitOptions::default()).await.unwrap();
        }
        let counter = store
            .item(&key().to_string())
            .unwrap()
            .item
            .calendar
            .unwrap();
        let used = counter.allowance.unwrap().used();
        let held = fleet_view(&hosts[0].0).await.block_left;
        store.fail_with(Some(tollgate_actors::fleet::FleetErrorKind::Unreachable));
        let end = at("2026-01-05T10:02:00Z");
        let (h, policy) = &hosts[0];
        let admitted = collect(spawn_callers(h, *policy, &clock, end, 2)).await;
        let view = fleet_view(h).await;
        assert_eq!(view.mode, tollgate_quota::fleet::FleetMode::LocalShare);
        let reset = at("2026-01-05T10:01:00Z");
        let this_period = admitted.iter().filter(|t| **t < reset).count() as u64;
        let next_period = admitted.iter().filter(|t| **t >= reset).count() as u64;
        eprintln!(
            "{used} used on the item, {held} in hand; degraded: {this_period} this period, \
             {next_period} the next"
        );
        let share = (50 - used) / 4;
        assert_eq!(
            this_period,
            held + share,
            "the tokens in hand, then (50 − {used}) / 4 hosts"
        );
        assert_eq!(
            next_period,
            50 / 4,
            "then the amount over the hosts each period"
        );
    });
}

#[test]
fn stop_mode_refuses_an_allowance_key_while_the_table_fails() {
    paused_system().block_on(async {
        let start = at("2026-01-05T10:00:20Z");
        let store = Arc::new(MemoryFleetStore::new());
        let clock = Arc::new(TokioClock::starting_at(start));
        let (h, policy) = host(&store, &clock, 1, ALLOWANCE, OnError::Stop);
        store.fail_with(Some(tollgate_actors::fleet::FleetErrorKind::Unreachable));
        let slot = h
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let refused = slot.admit(1, false, WaitOptions::default()).await;
        assert!(
            matches!(refused, Err(tollgate_actors::AdmissionError::Fleet { .. })),
            "{refused:?}"
        );
    });
}
