//! Property tests for the arrival-jitter allowance (`tollgate_quota::arrival_jitter`).
//!
//! The gate's own `QuotaState`, under a policy of rate `r`, burst `B` and arrival jitter
//! `j`, admits a random queue of pages (FIFO, each asked again at the instant the state
//! names). Each admitted page then reaches a brute-force server bucket (rate `r`, burst
//! `B`, starting full, refilled by *arrival* time, exact integer arithmetic in
//! micro-tokens) after a random delay in `[d, d + j]`. The server must never reject.
//! Without the allowance (`j = 0` in the gate, the same delays) a delay pattern that
//! makes the server reject exists, and is shown, so the first property can fail.
//! Last, the fleet path: a host asks the table for the admission burst, and an oversize
//! page spends at most that many fleet tokens.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use tollgate_quota::{Admission, AdmitRequest, Owner, Policy, QuotaState, Timestamp};

const OWNER: Owner = Owner {
    pid: 1,
    generation: 1,
};
const FAR: Timestamp = Timestamp::from_millis(u64::MAX / 4_000);

/// Micro-tokens per token: the server's arithmetic is exact in these units (a rate in
/// whole tokens per second refills `rate` micro-tokens per microsecond).
const MICRO: i128 = 1_000_000;

/// The gate's bucket rounds by at most `bucket::EPSILON` (1e-9 tokens) per grant; the
/// server forgives one micro-token, far below any real shortfall (`r·j` tokens).
const SERVER_SLACK: i128 = 1;

/// Admit `costs` (all queued at `Timestamp::ZERO`, in order) through the gate's state
/// under `policy`; the admission instants.
fn admit_all(policy: Policy, costs: &[u32], queued_at: &[u64]) -> Vec<Timestamp> {
    let mut state = QuotaState::new(policy, Timestamp::ZERO);
    let mut now = Timestamp::ZERO;
    let mut admitted = Vec::with_capacity(costs.len());
    for (i, &cost) in costs.iter().enumerate() {
        now = now.max(Timestamp::from_micros(
            queued_at.get(i).copied().unwrap_or(0),
        ));
        let reservation = state.reserve(OWNER, FAR, now).expect("a free slot");
        let request = AdmitRequest {
            reservation,
            cost,
            retry: false,
        };
        // A page that waits longer than this has deadlocked.
        for _ in 0..64 {
            match state.admit(&request, now) {
                Admission::Granted(g) => {
                    admitted.push(g.admitted_at);
                    break;
                }
                Admission::NotUntil { at, .. } => {
                    assert!(at > now, "asked to come back at {at:?}, not after {now:?}");
                    now = at;
                }
                Admission::Refused(r) => panic!("page {i} of cost {cost} refused: {r}"),
            }
        }
        assert_eq!(
            admitted.len(),
            i + 1,
            "page {i} of cost {cost} never admitted"
        );
        state.release(reservation, now);
    }
    admitted
}

/// The first page (by arrival) a server bucket of `rate` and `burst`, starting full and
/// refilled by arrival time, rejects; `None` if it accepts them all.
fn server_rejects(rate: u32, burst: u32, pages: &[(u64, u32)]) -> Option<usize> {
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&i| pages[i].0);
    let capacity = i128::from(burst) * MICRO;
    let (mut tokens, mut at) = (capacity, 0u64);
    for i in order {
        let (arrives, cost) = pages[i];
        tokens = (tokens + i128::from(rate) * i128::from(arrives - at)).min(capacity);
        at = arrives;
        let cost = i128::from(cost) * MICRO;
        if tokens + SERVER_SLACK < cost {
            return Some(i);
        }
        tokens -= cost;
    }
    None
}

/// Arrival instants (µs): admission + `base` + `spread[i]` (each in `[0, j]`).
fn arrivals(admitted: &[Timestamp], base_us: u64, spread: &[u64]) -> Vec<u64> {
    admitted
        .iter()
        .zip(spread)
        .map(|(t, s)| t.as_micros() + base_us + s)
        .collect()
}

#[derive(Debug, Clone)]
struct Case {
    rate: u32,
    burst: u32,
    jitter_ms: u32,
    costs: Vec<u32>,
    queued_at: Vec<u64>,
    base_us: u64,
    /// Per page, a fraction of `j` in [0, 1]; the extremes 0 and 1 are drawn often.
    spread: Vec<f64>,
}

impl Case {
    fn policy(&self, jitter_ms: u32) -> Policy {
        Policy::new(f64::from(self.rate), f64::from(self.burst), 1_000, 0)
            .and_then(|p| p.with_arrival_jitter_ms(jitter_ms))
            .unwrap()
    }
    fn spread_us(&self) -> Vec<u64> {
        let j = f64::from(self.jitter_ms) * 1_000.0;
        self.spread.iter().map(|f| (f * j).floor() as u64).collect()
    }
}

/// Rates and bursts from small to the datapoint budgets', jitters up to 500 ms, and
/// pages of costs that fit the reduced burst (`oversize` false) or may exceed it.
fn case(oversize: bool) -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(50u32), Just(1_000), Just(8_000), Just(180_000)],
        0.5f64..=1.0,
        1u32..=500,
        2usize..40,
    )
        .prop_filter(
            "the reduced burst holds more than one token",
            |(r, f, j, _)| {
                let burst = (f64::from(*r) * f).floor();
                burst - f64::from(*r) * f64::from(*j) / 1_000.0 >= 2.0
            },
        )
        .prop_flat_map(move |(rate, f, jitter_ms, n)| {
            let burst = (f64::from(rate) * f).floor() as u32;
            let reduced = tollgate_quota::arrival_jitter::admission_burst(
                f64::from(burst),
                f64::from(rate),
                jitter_ms,
            )
            .floor() as u32;
            let top = if oversize { burst } else { reduced };
            (
                Just((rate, burst, jitter_ms)),
                prop::collection::vec(1u32..=top, n),
                prop::collection::vec(0u64..3_000_000, n),
                0u64..2_000_000,
                prop::collection::vec(
                    prop_oneof![2 => Just(0.0), 2 => Just(1.0), 1 => 0.0f64..=1.0],
                    n,
                ),
            )
        })
        .prop_map(
            |((rate, burst, jitter_ms), costs, mut queued_at, base_us, spread)| {
                queued_at.sort_unstable();
                Case {
                    rate,
                    burst,
                    jitter_ms,
                    costs,
                    queued_at,
                    base_us,
                    spread,
                }
            },
        )
}

proptest! {
    // Saved failures (this file's name with the extension `proptest-regressions`, beside
    // it) are re-run before any new case, and new failures are appended there.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_server_bucket_refilled_by_arrival_never_rejects_pages_admitted_with_the_allowance(
        c in case(false)
    ) {
        let admitted = admit_all(c.policy(c.jitter_ms), &c.costs, &c.queued_at);
        let arrive = arrivals(&admitted, c.base_us, &c.spread_us());
        let pages: Vec<(u64, u32)> = arrive.into_iter().zip(c.costs.iter().copied()).collect();
        prop_assert_eq!(server_rejects(c.rate, c.burst, &pages), None, "{:?}", pages);
    }

    #[test]
    fn pages_above_the_reduced_burst_are_admitted_and_overshoot_by_at_most_the_allowance(
        c in case(true)
    ) {
        // Every page is admitted (admit_all panics otherwise); the server could be short
        // by at most r·j on a window ending with an oversize page, so a server with
        // that much more burst never rejects.
        let admitted = admit_all(c.policy(c.jitter_ms), &c.costs, &c.queued_at);
        let arrive = arrivals(&admitted, c.base_us, &c.spread_us());
        let pages: Vec<(u64, u32)> = arrive.into_iter().zip(c.costs.iter().copied()).collect();
        let slack = (f64::from(c.rate) * f64::from(c.jitter_ms) / 1_000.0).ceil() as u32;
        prop_assert_eq!(server_rejects(c.rate, c.burst + slack, &pages), None, "{:?}", pages);
    }

    #[test]
    fn without_the_allowance_delaying_the_first_of_two_back_to_back_pages_makes_the_server_reject(
        rate in prop_oneof![Just(1_000u32), Just(8_000), Just(180_000)],
        jitter_ms in 10u32..=500,
        f1 in 0.0f64..=1.0,
        f2 in 0.0f64..=1.0,
    ) {
        // Two pages that together exceed the burst by at least r·j, so the gate (j = 0)
        // admits the second at least j after the first and exactly when the bucket has
        // refilled it; the first arriving j late leaves the server r·j short.
        let burst = rate;
        let rj = (f64::from(rate) * f64::from(jitter_ms) / 1_000.0) as u32;
        prop_assume!(burst / 2 + rj < burst);
        let lo = burst / 2 + rj;
        let pick = |f: f64| lo + ((f64::from(burst - lo)) * f) as u32;
        let costs = [pick(f1), pick(f2)];
        let policy = Policy::new(f64::from(rate), f64::from(burst), 1_000, 0).unwrap();
        let admitted = admit_all(policy, &costs, &[0, 0]);
        let spread = [u64::from(jitter_ms) * 1_000, 0];
        let pages: Vec<(u64, u32)> = arrivals(&admitted, 0, &spread)
            .into_iter()
            .zip(costs)
            .collect();
        prop_assert_eq!(server_rejects(rate, burst, &pages), Some(1), "{:?}", pages);
        // The same pages through the gate with the allowance: accepted.
        let admitted = admit_all(policy.with_arrival_jitter_ms(jitter_ms).unwrap(), &costs, &[0, 0]);
        let pages: Vec<(u64, u32)> = arrivals(&admitted, 0, &spread)
            .into_iter()
            .zip(costs)
            .collect();
        let fits = costs.iter().all(|&c| f64::from(c) <= policy.with_arrival_jitter_ms(jitter_ms).unwrap().admission_burst());
        if fits {
            prop_assert_eq!(server_rejects(rate, burst, &pages), None, "{:?}", pages);
        }
    }
}

#[test]
fn the_stop_28_pattern_is_throttled_without_the_allowance_and_accepted_with_it() {
    // The bench's budget: 8,000/s burst 8,000 on both sides, pages of 7,000 datapoints
    // (500 daily series over 14 days). The first page arrives 100 ms after its
    // admission, the second at once.
    let costs = [7_000, 7_000];
    let spread = [100_000, 0];
    let plain = Policy::new(8_000.0, 8_000.0, 10, 20).unwrap();
    let admitted = admit_all(plain, &costs, &[0, 0]);
    assert_eq!(admitted[1], Timestamp::from_millis(750));
    let pages: Vec<(u64, u32)> = arrivals(&admitted, 0, &spread)
        .into_iter()
        .zip(costs)
        .collect();
    assert_eq!(server_rejects(8_000, 8_000, &pages), Some(1));

    let jittered = plain.with_arrival_jitter_ms(100).unwrap();
    let admitted = admit_all(jittered, &costs, &[0, 0]);
    assert_eq!(admitted[1], Timestamp::from_millis(850));
    let pages: Vec<(u64, u32)> = arrivals(&admitted, 0, &spread)
        .into_iter()
        .zip(costs)
        .collect();
    assert_eq!(server_rejects(8_000, 8_000, &pages), None);
}

#[test]
fn a_fleet_host_asks_the_table_for_the_admission_burst_and_spends_its_windows() {
    use tollgate_quota::fleet::{take_block, FleetConfig, HostLedger, SpendWindow};
    let policy = Policy::new(8_000.0, 8_000.0, 10, 20)
        .and_then(|p| p.with_arrival_jitter_ms(100))
        .unwrap();
    let mut ledger = HostLedger::new("h1".into(), FleetConfig::default());
    let request = ledger.begin(7_000, 7_000, &policy, Timestamp::ZERO);
    assert_eq!((request.rate, request.burst), (8_000.0, 7_200.0));
    let (item, grant) = take_block(None, &request, Timestamp::ZERO);
    assert_eq!(item.burst, 7_200.0);
    assert_eq!(grant.run.window, SpendWindow::for_policy(8_000.0, 7_200.0));
    // An oversize page (7,500 of the server's 8,000) spends at most the admission burst
    // of fleet tokens, so the hand can hold them; the local bucket charges all 7,500.
    let reservation = QuotaState::new(policy, Timestamp::ZERO)
        .reserve(OWNER, FAR, Timestamp::ZERO)
        .unwrap();
    let oversize = AdmitRequest {
        reservation,
        cost: 7_500,
        retry: false,
    };
    assert_eq!(oversize.fleet_units(&policy), 7_200);
    let fits = AdmitRequest {
        cost: 7_000,
        ..oversize
    };
    assert_eq!(fits.fleet_units(&policy), 7_000);
    let plain = Policy::new(8_000.0, 8_000.0, 10, 20).unwrap();
    assert_eq!(oversize.fleet_units(&plain), 7_500);
}
