//! Property tests for the fleet bound (quota::fleet), with simulated time and skewed
//! host clocks.
//!
//! A small event-driven simulator runs H hosts, each with its own clock offset (pairwise
//! within the skew bound S), its own demand, a `HostLedger`, and requests that land on one
//! shared item some milliseconds after they were sent (writes are serialized, as the
//! conditional write makes them). Some hosts die mid-run with tokens in hand. Checked:
//! - every write's tokens are due after the item's previous `tat`, spaced at least 1/rate
//!   (the due instants of all grants form one increasing sequence);
//! - admissions over any interval T (true time) ≤ burst' + rate·(T + S), burst' =
//!   max(burst, 1 + rate·MIN_TOLERANCE); with S = 0 that is the exact bucket bound.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use tollgate_quota::fleet::{
    take_block, BlockGrant, BlockRequest, FleetConfig, FleetGate, FleetItem, HostLedger, KeyUse,
    OnError, MIN_TOLERANCE,
};
use tollgate_quota::{Outcome, Policy, Timestamp};

#[derive(Debug, Clone)]
struct HostPlan {
    /// The host's clock minus true time, in ms, within ±S/2.
    offset_ms: i64,
    /// (instant, how many requests arrive at once).
    arrivals_ms: Vec<(u64, u64)>,
    dies_at_ms: Option<u64>,
    /// The host sees a throttle then (reported with its next block: the fleet factor
    /// halves, so later grants are spaced wider; the bound must hold across the change).
    throttled_at_ms: Option<u64>,
    /// A new block is first spent this long after it arrives (a slow host: spends late
    /// in its tokens' windows, or lets them lapse).
    lag_ms: u64,
}

#[derive(Debug, Clone)]
struct Plan {
    rate: f64,
    burst: f64,
    skew_ms: u64,
    latency_ms: u64,
    hosts: Vec<HostPlan>,
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop_oneof![Just(2.0), Just(5.0), Just(20.0), Just(100.0)],
        0.0f64..1.0,
        prop_oneof![Just(0u64), Just(200), Just(1_000)],
        0u64..40,
        2usize..=5,
    )
        .prop_flat_map(|(rate, burst_frac, skew_ms, latency_ms, n)| {
            let half = (skew_ms / 2) as i64;
            let host = (
                -half..=half,
                prop::collection::vec((0u64..6_000, 1u64..=4), 0..40),
                prop::option::weighted(0.3, 0u64..6_000),
                prop::option::weighted(0.3, 0u64..6_000),
                // Around a token window's length: some hosts spend late in their tokens'
                // windows, some too late (their tokens lapse).
                prop_oneof![Just(0u64), 0u64..1_500],
            )
                .prop_map(
                    |(offset_ms, mut arrivals_ms, dies_at_ms, throttled_at_ms, lag_ms)| {
                        arrivals_ms.sort_unstable();
                        HostPlan {
                            offset_ms,
                            arrivals_ms,
                            dies_at_ms,
                            throttled_at_ms,
                            lag_ms,
                        }
                    },
                );
            let burst = (1.0 + burst_frac * (rate - 1.0)).floor().max(1.0);
            prop::collection::vec(host, n).prop_map(move |hosts| Plan {
                rate,
                burst,
                skew_ms,
                latency_ms,
                hosts,
            })
        })
}

#[derive(Debug)]
enum Event {
    Arrival(usize, u64),
    Lands(usize, BlockRequest),
    Answer(usize, BlockGrant),
    Wake(usize),
    Throttled(usize),
}

/// Ordered by time, then by insertion (the heap needs a total order; events carry data).
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    events: Vec<Option<Event>>,
}

impl Queue {
    fn push(&mut self, at_us: u64, e: Event) {
        self.heap.push(Reverse((at_us, self.events.len() as u64)));
        self.events.push(Some(e));
    }
    fn pop(&mut self) -> Option<(u64, Event)> {
        let Reverse((at, i)) = self.heap.pop()?;
        Some((at, self.events[i as usize].take().unwrap()))
    }
}

struct Host {
    offset_us: i64,
    ledger: HostLedger,
    pending: u64,
    dies_at_us: u64,
    wake_at_us: Option<u64>,
    lag_us: u64,
    hold_until_us: u64,
}

impl Host {
    fn local(&self, true_us: u64) -> Timestamp {
        Timestamp::from_micros((true_us as i64 + self.offset_us).max(0) as u64)
    }
    fn true_of(&self, local: Timestamp) -> u64 {
        (local.as_micros() as i64 - self.offset_us).max(0) as u64
    }
}

/// Run `plan`; returns the admissions' true instants (µs) in order, and the writes.
fn simulate(plan: &Plan) -> (Vec<u64>, u64) {
    let policy = Policy::new(plan.rate, plan.burst, 10, 6).unwrap();
    let config = FleetConfig {
        skew: Duration::from_millis(plan.skew_ms),
        refresh: Duration::from_millis(500),
        on_error: OnError::Stop,
    };
    const EPOCH_US: u64 = 10_000_000; // keep skewed clocks positive
    let mut q = Queue {
        heap: BinaryHeap::new(),
        events: Vec::new(),
    };
    let mut hosts: Vec<Host> = plan
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            for (a, n) in &h.arrivals_ms {
                q.push(EPOCH_US + a * 1_000, Event::Arrival(i, *n));
            }
            if let Some(at) = h.throttled_at_ms {
                q.push(EPOCH_US + at * 1_000, Event::Throttled(i));
            }
            Host {
                offset_us: h.offset_ms * 1_000,
                ledger: HostLedger::new(format!("h{i}"), config),
                pending: 0,
                dies_at_us: h.dies_at_ms.map_or(u64::MAX, |d| EPOCH_US + d * 1_000),
                wake_at_us: None,
                lag_us: h.lag_ms * 1_000,
                hold_until_us: 0,
            }
        })
        .collect();
    let mut item: Option<FleetItem> = None;
    let mut admitted = Vec::new();
    let latency = plan.latency_ms * 1_000;
    let mut steps = 0u64;
    let mut writes = 0u64;
    while let Some((t, event)) = q.pop() {
        steps += 1;
        assert!(steps < 1_000_000, "runaway simulation at {t}: {event:?}");
        if t > EPOCH_US + 120_000_000 {
            break; // a host that cannot keep up gives up after two minutes
        }
        let i = match &event {
            Event::Arrival(i, _)
            | Event::Lands(i, _)
            | Event::Answer(i, _)
            | Event::Wake(i)
            | Event::Throttled(i) => *i,
        };
        match event {
            Event::Lands(_, request) => {
                // The write lands whether or not its host has died since.
                let now = hosts[i].local(t);
                let (next, grant) = take_block(item.as_ref(), &request, now);
                let before = item.as_ref().map_or(Timestamp::ZERO, |i| i.tat);
                assert!(next.tat >= before, "tat moved back");
                if grant.run.count > 0 {
                    assert!(grant.run.first_due > before, "due before the previous tat");
                    assert!(grant.run.spacing.as_secs_f64() >= 1.0 / plan.rate - 1e-9);
                    assert_eq!(next.tat, grant.run.last_due());
                }
                writes += 1;
                item = Some(next);
                q.push(t + latency / 2, Event::Answer(i, grant));
                continue;
            }
            _ if t >= hosts[i].dies_at_us => continue,
            Event::Arrival(_, n) => hosts[i].pending += n,
            Event::Throttled(_) => {
                hosts[i].ledger.feedback(Outcome::Throttled);
                continue;
            }
            Event::Answer(_, grant) => {
                hosts[i].ledger.granted(&grant);
                if hosts[i].lag_us > 0 {
                    hosts[i].hold_until_us = t + hosts[i].lag_us;
                    q.push(t + hosts[i].lag_us, Event::Wake(i));
                    continue;
                }
            }
            Event::Wake(_) => {
                if hosts[i].wake_at_us == Some(t) {
                    hosts[i].wake_at_us = None;
                }
            }
        }
        // Serve the host's waiters.
        let host = &mut hosts[i];
        if t < host.hold_until_us {
            continue;
        }
        while host.pending > 0 {
            let local = host.local(t);
            match host.ledger.gate(1, false, local) {
                FleetGate::Go => {
                    host.ledger.charge(1, false, local);
                    host.pending -= 1;
                    admitted.push(t);
                }
                FleetGate::Wait(at) => {
                    let at = host.true_of(at).max(t + 1);
                    if host.wake_at_us.is_none_or(|w| w > at) {
                        host.wake_at_us = Some(at);
                        q.push(at, Event::Wake(i));
                    }
                    break;
                }
                FleetGate::NeedBlock => {
                    if host.ledger.wants_request(KeyUse::NeedsBlock, local) {
                        let r = host.ledger.begin(1, host.pending, &policy, local);
                        q.push(t + latency / 2, Event::Lands(i, r));
                    }
                    break;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    (admitted, writes)
}

fn check_bound(admitted: &[u64], plan: &Plan) -> Result<(), TestCaseError> {
    let skew = plan.skew_ms as f64 / 1_000.0;
    let burst = plan
        .burst
        .max(1.0 + plan.rate * MIN_TOLERANCE.as_secs_f64());
    for i in 0..admitted.len() {
        // Only the last admission at each instant ends a tightest interval.
        for j in (i..admitted.len()).filter(|&j| admitted.get(j + 1) != Some(&admitted[j])) {
            let t = (admitted[j] - admitted[i]) as f64 / 1e6;
            let count = (j - i + 1) as f64;
            let limit = burst + plan.rate * (t + skew) + 1e-6;
            prop_assert!(
                count <= limit,
                "{count} admissions in {t} s exceed burst {burst} + rate {}·(T + S {skew})",
                plan.rate
            );
        }
    }
    Ok(())
}

proptest! {
    // Saved failures (this file's name with the extension `proptest-regressions`, beside
    // it) are re-run before any new case, and new failures are appended there.
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn fleet_admissions_stay_within_burst_plus_rate_times_t_plus_skew(plan in plan()) {
        let (admitted, _) = simulate(&plan);
        check_bound(&admitted, &plan)?;
    }
}

#[test]
fn without_skew_the_fleet_holds_the_exact_bucket_bound_under_saturation() {
    // Four hosts, each with far more demand than the rate: the fleet admits close to the
    // rate and never above burst + rate·T, with about one write per host per refresh
    // (every write grants useful tokens: nobody polls).
    let hosts = (0..4)
        .map(|_| HostPlan {
            offset_ms: 0,
            arrivals_ms: (0..400).map(|k| (k * 10, 1)).collect(),
            dies_at_ms: None,
            throttled_at_ms: None,
            lag_ms: 0,
        })
        .collect();
    let plan = Plan {
        rate: 20.0,
        burst: 5.0,
        skew_ms: 0,
        latency_ms: 4,
        hosts,
    };
    let (admitted, writes) = simulate(&plan);
    check_bound(&admitted, &plan).unwrap();
    let in_4s = admitted
        .iter()
        .filter(|t| **t < 10_000_000 + 4_000_000)
        .count();
    assert!(
        in_4s >= 60,
        "the fleet should use most of 20/s over 4 s, got {in_4s}"
    );
    let span_s = (admitted[admitted.len() - 1] - admitted[0]) as f64 / 1e6;
    assert!(
        writes as f64 / span_s <= 4.0 * 2.0 * 1.5,
        "{writes} writes in {span_s} s: more than about one per host per 500 ms refresh"
    );
}

#[test]
fn a_host_whose_clock_runs_ahead_gains_at_most_rate_times_skew() {
    // One host 500 ms ahead, one 500 ms behind (S = 1 s), both saturated.
    let hosts = [500, -500]
        .into_iter()
        .map(|offset_ms| HostPlan {
            offset_ms,
            arrivals_ms: (0..300).map(|k| (k * 10, 1)).collect(),
            dies_at_ms: None,
            throttled_at_ms: None,
            lag_ms: 0,
        })
        .collect();
    let plan = Plan {
        rate: 10.0,
        burst: 4.0,
        skew_ms: 1_000,
        latency_ms: 2,
        hosts,
    };
    let (admitted, _) = simulate(&plan);
    check_bound(&admitted, &plan).unwrap();
}

#[test]
fn a_fleet_penalty_halving_does_not_let_two_bursts_through() {
    // Regression: windows sized from the penalized rate ((burst − 1)·T at the halved
    // rate) are twice as wide after a throttle, so tokens granted just before and just
    // after the halving could all be spent together. Windows use the policy's rate.
    let hosts = [1_000u64, 1_500]
        .into_iter()
        .map(|throttled_at| HostPlan {
            offset_ms: 0,
            arrivals_ms: (0..300).map(|k| (k * 20, 1)).collect(),
            dies_at_ms: None,
            throttled_at_ms: Some(throttled_at),
            lag_ms: 0,
        })
        .collect();
    let plan = Plan {
        rate: 5.0,
        burst: 4.0,
        skew_ms: 0,
        latency_ms: 0,
        hosts,
    };
    let (admitted, _) = simulate(&plan);
    check_bound(&admitted, &plan).unwrap();
}
