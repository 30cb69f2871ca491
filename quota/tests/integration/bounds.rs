//! Property tests for the bounds of DESIGN §3, with simulated time.
//!
//! A small event-driven simulator feeds random arrivals, costs, cancellations and
//! failure feedback through a `WaitQueue` and a `QuotaState`, jumping time to the next
//! event or to the instant the state said to ask again. Then it checks:
//! - in any window, starts ≤ the window limit;
//! - tokens are never negative;
//! - admitted cost over any interval T ≤ burst + rate·T;
//! - FIFO waiters are granted in arrival order and none is starved;
//! - a cancelled waiter never starts.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use tollgate_quota::window::WindowShape;
use tollgate_quota::{
    Admission, AdmitRequest, Exit, Outcome, Owner, Policy, QuotaState, Step, Timestamp, WaitQueue,
};

const OWNER: Owner = Owner {
    pid: 1,
    generation: 1,
};
const FAR: Timestamp = Timestamp::from_millis(u64::MAX / 4_000);

#[derive(Debug, Clone)]
struct Arrival {
    at_ms: u64,
    cost: u32,
    cancel_after_ms: Option<u64>,
    outcome: Outcome,
}

#[derive(Debug, Default)]
struct Trace {
    grants: Vec<(u64, Timestamp, u32)>, // (id, at, cost)
    cancelled: Vec<u64>,
    min_tokens: f64,
}

fn arrival() -> impl Strategy<Value = Arrival> {
    (
        0u64..5_000,
        1u32..=3,
        prop::option::weighted(0.2, 0u64..3_000),
        prop_oneof![
            6 => Just(Outcome::Success),
            1 => Just(Outcome::Throttled),
            1 => Just(Outcome::Transient),
            1 => Just(Outcome::Fatal),
        ],
    )
        .prop_map(|(at_ms, cost, cancel_after_ms, outcome)| Arrival {
            at_ms,
            cost,
            cancel_after_ms,
            outcome,
        })
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop_oneof![
            Just(0.5),
            Just(1.0),
            Just(2.5),
            Just(4.0),
            Just(10.0),
            Just(25.0)
        ],
        0.0f64..=1.0,
    )
        .prop_map(|(rate, f): (f64, f64)| {
            let max_burst = rate.max(1.0);
            let burst = (1.0 + f * (max_burst - 1.0)).max(3.0f64.min(max_burst));
            Policy::new(rate, burst.min(max_burst), 1_000, 20).unwrap()
        })
}

/// Run the simulation to completion; feedback for each grant arrives 20 ms later.
fn simulate(policy: Policy, mut arrivals: Vec<Arrival>) -> Trace {
    arrivals.sort_by_key(|a| a.at_ms);
    let mut state = QuotaState::new(policy, Timestamp::ZERO);
    let mut queue: WaitQueue<(u64, AdmitRequest)> = WaitQueue::default();
    let mut trace = Trace {
        min_tokens: f64::INFINITY,
        ..Trace::default()
    };
    let mut cancels: BTreeMap<Timestamp, Vec<u64>> = BTreeMap::new();
    let mut feedback: BTreeMap<Timestamp, Vec<(Timestamp, Outcome)>> = BTreeMap::new();
    let mut next_arrival = 0;
    let mut wake: Option<Timestamp> = None;
    let mut now = Timestamp::ZERO;
    for _ in 0..1_000_000 {
        let candidates = [
            arrivals
                .get(next_arrival)
                .map(|a| Timestamp::from_millis(a.at_ms)),
            cancels.keys().next().copied(),
            feedback.keys().next().copied(),
            wake,
        ];
        let Some(next) = candidates.into_iter().flatten().min() else {
            return trace;
        };
        assert!(next >= now, "time never goes back");
        now = next;
        while let Some(a) = arrivals
            .get(next_arrival)
            .filter(|a| Timestamp::from_millis(a.at_ms) <= now)
        {
            let id = next_arrival as u64;
            let reservation = state
                .reserve(OWNER, FAR, now)
                .expect("concurrency is ample");
            // A cost above burst is refused outright (tested in `state`); keep costs that fit.
            let cost = a.cost.min(policy.burst().floor() as u32);
            queue.push(
                id,
                FAR,
                (
                    id,
                    AdmitRequest {
                        reservation,
                        cost,
                        retry: false,
                    },
                ),
            );
            if let Some(after) = a.cancel_after_ms {
                cancels
                    .entry(now + Duration::from_millis(after))
                    .or_default()
                    .push(id);
            }
            next_arrival += 1;
        }
        while let Some(entry) = cancels.first_entry().filter(|e| *e.key() <= now) {
            for id in entry.remove() {
                if let Some((_, req)) = queue.cancel(id) {
                    state.release(req.reservation, now);
                    trace.cancelled.push(id);
                }
            }
        }
        while let Some(entry) = feedback.first_entry().filter(|e| *e.key() <= now) {
            for (admitted_at, outcome) in entry.remove() {
                state.feedback(outcome, admitted_at, now);
            }
        }
        let mut granted = Vec::new();
        wake = queue.poll(
            now,
            |(_, req)| match state.admit(req, now) {
                Admission::Granted(g) => Step::Grant(g),
                Admission::NotUntil { at, .. } => {
                    assert!(at > now, "a wait must point into the future");
                    Step::Wait(at)
                }
                Admission::Refused(r) => Step::Refuse(r),
            },
            |(id, req), exit| match exit {
                Exit::Granted(g) => granted.push((id, req, g)),
                other => panic!("unexpected exit {other:?}"),
            },
        );
        for (id, req, g) in granted {
            trace.grants.push((id, g.admitted_at, req.cost));
            state.release(req.reservation, now);
            let outcome = arrivals[id as usize].outcome;
            feedback
                .entry(now + Duration::from_millis(20))
                .or_default()
                .push((g.admitted_at, outcome));
        }
        trace.min_tokens = trace.min_tokens.min(state.snapshot(now).tokens);
    }
    panic!("simulation did not finish");
}

proptest! {
    // Saved failures (this file's name with the extension `proptest-regressions`, beside
    // it) are re-run before any new case, and new failures are appended there.
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn starts_in_any_window_stay_within_the_limit(policy in policy(), arrivals in prop::collection::vec(arrival(), 1..60)) {
        let trace = simulate(policy, arrivals);
        let shape = WindowShape::for_rate(policy.rate_per_second());
        let times: Vec<Timestamp> = trace.grants.iter().map(|g| g.1).collect();
        for (i, start) in times.iter().enumerate() {
            let in_window = times[i..].iter().take_while(|t| **t < *start + shape.length).count() as u64;
            prop_assert!(in_window <= shape.limit, "{in_window} starts in the window from {start}, limit {}", shape.limit);
        }
    }

    #[test]
    fn tokens_never_negative_and_cost_bounded(policy in policy(), arrivals in prop::collection::vec(arrival(), 1..60)) {
        let trace = simulate(policy, arrivals);
        prop_assert!(trace.min_tokens >= 0.0);
        let g = &trace.grants;
        for i in 0..g.len() {
            let mut cost = 0.0;
            for j in i..g.len() {
                cost += f64::from(g[j].2);
                let t = (g[j].1 - g[i].1).as_secs_f64();
                let bound = policy.burst() + policy.rate_per_second() * t;
                prop_assert!(cost <= bound + 1e-6, "cost {cost} over {t}s exceeds {bound}");
            }
        }
    }

    #[test]
    fn fifo_waiters_are_served_in_order_and_cancelled_ones_never_start(policy in policy(), arrivals in prop::collection::vec(arrival(), 1..60)) {
        let n = arrivals.len();
        let trace = simulate(policy, arrivals);
        let ids: Vec<u64> = trace.grants.iter().map(|g| g.0).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        prop_assert_eq!(&ids, &sorted, "grants out of arrival order");
        for c in &trace.cancelled {
            prop_assert!(!ids.contains(c), "cancelled waiter {} started", c);
        }
        // No starvation: everyone not cancelled was granted.
        prop_assert_eq!(ids.len() + trace.cancelled.len(), n);
    }
}

/// Grant instants (ms) of `n` successful requests arriving together at t = 0.
fn starts_of_simultaneous_requests(policy: Policy, n: usize) -> Vec<u64> {
    let arrivals = (0..n)
        .map(|_| Arrival {
            at_ms: 0,
            cost: 1,
            cancel_after_ms: None,
            outcome: Outcome::Success,
        })
        .collect();
    simulate(policy, arrivals)
        .grants
        .iter()
        .map(|g| g.1.as_micros() / 1_000)
        .collect()
}

/// Seed 000 "fast responses": 8 requests at 4/s burst 2 finish at exactly 1.5 s.
#[test]
fn fast_responses_fixture_ends_at_one_and_a_half_seconds() {
    let policy = Policy::new(4.0, 2.0, 10, 2).unwrap();
    assert_eq!(
        starts_of_simultaneous_requests(policy, 8),
        [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]
    );
}

/// Seed 000: a rate of 0.5/s allows one start per 2 s.
#[test]
fn half_rate_spaces_starts_two_seconds_apart() {
    let policy = Policy::new(0.5, 1.0, 10, 2).unwrap();
    assert_eq!(
        starts_of_simultaneous_requests(policy, 3),
        [0, 2_000, 4_000]
    );
}
