//! Property tests for write-ahead leases across a crash (DESIGN §3 bounds, `lease` docs).
//!
//! Coordinator A serves a FIFO of greedy requests in simulated 1 ms steps, granting only
//! what its `LeaseLedger` covers and storing leased records with a random write latency
//! (one at a time, as the actor does: on start, when half a lease is used, and every
//! 100 ms). In half the scenarios the key starts with a provisional first lease
//! (`unrecorded`): its first two grants (two tokens in all) may go before anything is
//! stored, and its first record with the periodic save. At a random instant A dies; a
//! renewal in flight then may or may not have reached the disk. After a random takeover
//! delay, coordinator B restores from whatever record is on disk (or, finding none,
//! charges the key what A may have granted on it unrecorded) and serves the rest of the
//! queue the same way. Over every grant of both, the bounds must hold as if one
//! coordinator had served them all:
//! - in any window, starts ≤ the window limit;
//! - admitted cost over any interval T ≤ burst + rate·T;
//! - when every request is a retry (and no success refunds a unit), retries granted ≤ the
//!   retry capacity;
//! - and where A dies before a new key's first record lands and B takes over at once (a
//!   scenario of its own, some policies with an arrival-jitter allowance): the first two,
//!   and admitted cost over any interval T that ends with an ordinary grant ≤ admission
//!   burst + rate·T.

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use tollgate_quota::lease::{PROVISIONAL_COST, PROVISIONAL_STARTS};
use tollgate_quota::window::WindowShape;
use tollgate_quota::{
    Admission, AdmitRequest, FirstGrant, Handover, Lease, LeaseLedger, Owner, Policy, QuotaRecord,
    QuotaState, Refusal, RenewalTicket, ReservationId, Timestamp,
};

const CLIENT: Owner = Owner {
    pid: 1,
    generation: 1,
};
const FAR: Timestamp = Timestamp::from_millis(1_000_000_000);
const PERIODIC_SAVE_MS: u64 = 100;
const RUN_AFTER_TAKEOVER_MS: u64 = 3_000;

fn ms(v: u64) -> Timestamp {
    Timestamp::from_millis(v)
}

#[derive(Debug, Clone)]
struct Scenario {
    policy: Policy,
    /// (arrival ms, cost)
    arrivals: Vec<(u64, u32)>,
    crash_at_ms: u64,
    takeover_ms: u64,
    write_latency_ms: u64,
    /// B's record write latency (A's is `write_latency_ms`).
    takeover_write_latency_ms: u64,
    in_flight_reaches_disk: bool,
    /// Every request is a retry (the policy's retry capacity is then 1 to 30).
    retries: bool,
    /// A starts the key under a provisional first lease (its coordinator announced
    /// provisional first grants), and B charges a key without a record for a whole one.
    provisional: bool,
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop_oneof![
            Just(0.5),
            Just(1.0),
            Just(1.5),
            Just(2.5),
            Just(4.0),
            Just(10.0),
            Just(20.0),
            Just(50.0),
            Just(100.0)
        ],
        0.0f64..=1.0,
        1u32..=30,
    )
        .prop_map(|(rate, f, retry_capacity): (f64, f64, u32)| {
            let max_burst = rate.max(1.0);
            Policy::new(rate, 1.0 + f * (max_burst - 1.0), 1_000, retry_capacity).unwrap()
        })
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        policy(),
        prop::collection::vec((0u64..4_000, 1u32..=3), 1..120),
        0u64..3_000,
        0u64..200,
        // Slow writes too, so that a key whose window's limit is one (rates below 2/s)
        // can take both provisional starts, a window apart, before its first record lands.
        prop_oneof![0u64..5, 0u64..400, 0u64..2_500],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                policy,
                arrivals,
                crash_at_ms,
                takeover_ms,
                write_latency_ms,
                reaches,
                retries,
                provisional,
            )| {
                Scenario {
                    policy,
                    arrivals,
                    crash_at_ms,
                    takeover_ms,
                    write_latency_ms,
                    takeover_write_latency_ms: write_latency_ms,
                    in_flight_reaches_disk: reaches,
                    retries,
                    provisional,
                }
            },
        )
}

/// A new key whose coordinator A dies before anything of it is stored (A's writes take
/// longer than it lives), with requests from its first instants and a queue waiting at the
/// crash, a successor B that writes at once, and in some policies an arrival-jitter
/// allowance (so a two-token grant may leave A's bucket in debt): the charge for A's
/// provisional grants is all that keeps B's first grants within the bounds.
fn unrecorded_crash() -> impl Strategy<Value = Scenario> {
    (
        scenario(),
        prop::collection::vec((0u64..50, 1u32..=2), 1..4),
        // (crash, takeover delay, requests queued at the crash): often soon after A's
        // first grants, sometimes past a window of one start (its second grant).
        (
            prop_oneof![0u64..100, 0u64..1_500],
            prop_oneof![0u64..20, 0u64..200],
            0usize..60,
        ),
        prop_oneof![Just(0u32), 0u32..=300],
        0u64..5,
    )
        .prop_map(
            |(s, early, (crash_at_ms, takeover_ms, queued), jitter_ms, b_latency)| {
                let mut arrivals = early;
                arrivals.extend(std::iter::repeat_n((crash_at_ms, 1), queued));
                arrivals.extend(s.arrivals);
                Scenario {
                    policy: s.policy.with_arrival_jitter_ms(jitter_ms).unwrap(),
                    arrivals,
                    crash_at_ms,
                    takeover_ms,
                    write_latency_ms: 2_500,
                    takeover_write_latency_ms: b_latency,
                    in_flight_reaches_disk: false,
                    provisional: true,
                    ..s
                }
            },
        )
}

/// One coordinator: state, leases, the record in flight, and the shared disk.
struct Coordinator {
    state: QuotaState,
    ledger: LeaseLedger,
    reservation: ReservationId,
    in_flight: Option<(RenewalTicket, QuotaRecord, Timestamp)>,
    last_save: Timestamp,
}

impl Coordinator {
    fn start(mut state: QuotaState, ledger: LeaseLedger, now: Timestamp) -> Self {
        let reservation = state.reserve(CLIENT, FAR, now).expect("ample concurrency");
        Coordinator {
            state,
            ledger,
            reservation,
            in_flight: None,
            last_save: now,
        }
    }

    fn renew(&mut self, next_cost: f64, latency_ms: u64, now: Timestamp) {
        let lease = Lease::for_policy(self.state.policy(), next_cost, now);
        let ticket = self.ledger.begin(lease);
        let record = self.state.to_record(Handover::Leased(lease), now);
        self.in_flight = Some((
            ticket,
            record,
            now + std::time::Duration::from_millis(latency_ms),
        ));
        self.last_save = now;
    }

    /// One millisecond: land a write, renew if due, grant what the head allows.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        retries: bool,
        queue: &mut Vec<u32>,
        disk: &mut Option<QuotaRecord>,
        latency_ms: u64,
        now: Timestamp,
        grants: &mut Vec<(Timestamp, u32)>,
    ) {
        if let Some((ticket, record, done_at)) = self.in_flight.take() {
            if done_at <= now {
                *disk = Some(record);
                assert!(self.ledger.stored(ticket));
            } else {
                self.in_flight = Some((ticket, record, done_at));
            }
        }
        loop {
            let head = queue.first().map(|&c| f64::from(c));
            let covers = |l: &LeaseLedger, c: f64| match retries {
                true => l.covers_retry(c),
                false => l.covers(c),
            };
            // The actor asks for a renewal for the head only when it waits for a lease.
            let waiting = head.filter(|c| !covers(&self.ledger, *c));
            let periodic =
                now.saturating_since(self.last_save).as_millis() as u64 >= PERIODIC_SAVE_MS;
            if !self.ledger.is_renewing() && (self.ledger.wants_renewal(waiting) || periodic) {
                self.renew(head.unwrap_or(1.0), latency_ms, now);
                if latency_ms == 0 {
                    let (ticket, record, _) = self.in_flight.take().unwrap();
                    *disk = Some(record);
                    self.ledger.stored(ticket);
                }
            }
            let Some(&cost) = queue.first() else {
                return;
            };
            if !covers(&self.ledger, f64::from(cost)) {
                return;
            }
            let request = AdmitRequest {
                reservation: self.reservation,
                cost,
                retry: retries,
            };
            match self.state.admit(&request, now) {
                Admission::Granted(g) => {
                    self.ledger.charge(request.charged_cost());
                    grants.push((g.admitted_at, cost));
                    queue.remove(0);
                }
                Admission::NotUntil { .. } => return,
                Admission::Refused(Refusal::RetryAllowanceExhausted) => {
                    queue.remove(0);
                }
                Admission::Refused(r) => panic!("unexpected refusal {r:?}"),
            }
        }
    }
}

/// The ledger a key without a record starts with.
fn ledger_for(first: FirstGrant, now: Timestamp) -> LeaseLedger {
    match first {
        FirstGrant::Provisional => LeaseLedger::provisional(now),
        FirstGrant::WriteAhead => LeaseLedger::new(),
    }
}

/// Every grant of A then B, in order.
fn run(s: &Scenario) -> Vec<(Timestamp, u32)> {
    let mut arrivals = s.arrivals.clone();
    arrivals.sort_by_key(|a| a.0);
    let burst = s.policy.burst().floor() as u32;
    let mut queue: Vec<u32> = Vec::new();
    let mut next = 0;
    let mut disk: Option<QuotaRecord> = None;
    let mut grants = Vec::new();
    let mut arrive = |queue: &mut Vec<u32>, t: u64| {
        while next < arrivals.len() && arrivals[next].0 <= t {
            queue.push(arrivals[next].1.min(burst));
            next += 1;
        }
    };
    let first_lease = match s.provisional {
        true => LeaseLedger::provisional(ms(0)),
        false => LeaseLedger::new(),
    };
    let mut a = Coordinator::start(QuotaState::new(s.policy, ms(0)), first_lease, ms(0));
    for t in 0..s.crash_at_ms {
        arrive(&mut queue, t);
        a.step(
            s.retries,
            &mut queue,
            &mut disk,
            s.write_latency_ms,
            ms(t),
            &mut grants,
        );
    }
    // A dies. A record in flight may have reached the disk without being acknowledged.
    if let Some((_, record, _)) = a.in_flight.take() {
        if s.in_flight_reaches_disk {
            disk = Some(record);
        }
    }
    let takeover = s.crash_at_ms + s.takeover_ms;
    let (state, ledger) = match disk.clone() {
        Some(record) => (
            QuotaState::from_record(record, ms(takeover), &|_| true).0,
            LeaseLedger::new(),
        ),
        None => {
            let unrecorded = usize::from(s.provisional);
            let cost: u32 = grants.iter().map(|g| g.1).sum();
            assert!(
                grants.len() <= unrecorded * PROVISIONAL_STARTS as usize
                    && f64::from(cost) <= unrecorded as f64 * PROVISIONAL_COST,
                "A granted beyond its first lease unstored"
            );
            let until = s.provisional.then_some(ms(takeover));
            let (state, first) = QuotaState::unrecorded(s.policy, until, ms(takeover));
            match s.provisional {
                true => (state, ledger_for(first, ms(takeover))),
                false => (state, LeaseLedger::new()),
            }
        }
    };
    let mut b = Coordinator::start(state, ledger, ms(takeover));
    for t in takeover..takeover + RUN_AFTER_TAKEOVER_MS {
        arrive(&mut queue, t);
        b.step(
            s.retries,
            &mut queue,
            &mut disk,
            s.takeover_write_latency_ms,
            ms(t),
            &mut grants,
        );
    }
    grants
}

proptest! {
    // Saved failures (this file's name with the extension `proptest-regressions`, beside
    // it) are re-run before any new case, and new failures are appended there.
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn starts_stay_within_the_window_across_a_crash(s in scenario()) {
        starts_within_the_window(&s, &run(&s))?;
    }

    #[test]
    fn retries_stay_within_the_retry_capacity_across_a_crash(
        s in scenario().prop_map(|s| Scenario { retries: true, ..s })
    ) {
        let grants = run(&s);
        let capacity = s.policy.retry_capacity() as usize;
        prop_assert!(grants.len() <= capacity, "{} retries granted, capacity {}, crash at {} ms", grants.len(), capacity, s.crash_at_ms);
    }

    #[test]
    fn cost_stays_within_burst_plus_rate_across_a_crash(s in scenario()) {
        cost_within_burst_plus_rate(&s, &run(&s))?;
    }

    #[test]
    fn a_crash_before_a_new_keys_first_record_keeps_every_bound(s in unrecorded_crash()) {
        let grants = run(&s);
        starts_within_the_window(&s, &grants)?;
        cost_within_burst_plus_rate(&s, &grants)?;
        ordinary_grants_within_the_admission_burst(&s, &grants)?;
    }
}

/// In any window, starts ≤ the window limit.
fn starts_within_the_window(
    s: &Scenario,
    grants: &[(Timestamp, u32)],
) -> Result<(), TestCaseError> {
    let shape = WindowShape::for_rate(s.policy.rate_per_second());
    for (i, (start, _)) in grants.iter().enumerate() {
        let in_window = grants[i..]
            .iter()
            .take_while(|g| g.0 < *start + shape.length)
            .count() as u64;
        prop_assert!(
            in_window <= shape.limit,
            "{} starts in the window from {}, limit {}, crash at {} ms",
            in_window,
            start,
            shape.limit,
            s.crash_at_ms
        );
    }
    Ok(())
}

/// Admitted cost over any interval T ≤ burst + rate·T.
fn cost_within_burst_plus_rate(
    s: &Scenario,
    grants: &[(Timestamp, u32)],
) -> Result<(), TestCaseError> {
    for i in 0..grants.len() {
        let mut cost = 0.0;
        for j in i..grants.len() {
            cost += f64::from(grants[j].1);
            let t = (grants[j].0 - grants[i].0).as_secs_f64();
            let bound = s.policy.burst() + s.policy.rate_per_second() * t;
            prop_assert!(
                cost <= bound + 1e-6,
                "cost {} over {} s exceeds {}, crash at {} ms",
                cost,
                t,
                bound,
                s.crash_at_ms
            );
        }
    }
    Ok(())
}

/// Admitted cost over any interval T that ends with an ordinary grant (one that fits the
/// gate's bucket) ≤ admission burst + rate·T: the gate's own bound under an arrival-jitter
/// allowance, whose debts are repaid, never forgiven (`arrival_jitter` module docs).
fn ordinary_grants_within_the_admission_burst(
    s: &Scenario,
    grants: &[(Timestamp, u32)],
) -> Result<(), TestCaseError> {
    let admission_burst = s.policy.admission_burst();
    for j in 0..grants.len() {
        if f64::from(grants[j].1) > admission_burst {
            continue;
        }
        let mut cost = 0.0;
        for i in (0..=j).rev() {
            cost += f64::from(grants[i].1);
            let t = (grants[j].0 - grants[i].0).as_secs_f64();
            let bound = admission_burst + s.policy.rate_per_second() * t;
            prop_assert!(
                cost <= bound + 1e-6,
                "cost {} over {} s up to an ordinary grant exceeds {}, crash at {} ms",
                cost,
                t,
                bound,
                s.crash_at_ms
            );
        }
    }
    Ok(())
}

/// The point of leases: a saturated 20/s key resumes within a fraction of its window
/// after a crash, where the format-1 rule (window counted full) waited a whole window.
#[test]
fn a_saturated_key_resumes_within_a_quarter_window() {
    let policy = Policy::new(20.0, 5.0, 1_000, 0).unwrap();
    let s = Scenario {
        policy,
        arrivals: (0..200).map(|_| (0, 1)).collect(),
        crash_at_ms: 2_000,
        takeover_ms: 40,
        write_latency_ms: 2,
        takeover_write_latency_ms: 2,
        in_flight_reaches_disk: false,
        retries: false,
        provisional: false,
    };
    let grants = run(&s);
    let first_after = grants
        .iter()
        .map(|g| g.0)
        .find(|t| *t >= ms(s.crash_at_ms))
        .expect("B grants");
    let gap = first_after.saturating_since(ms(s.crash_at_ms));
    assert!(
        gap <= std::time::Duration::from_millis(250),
        "first grant {gap:?} after the crash"
    );
}

/// Serve a greedy queue of `n` one-token requests on `c` from `from` to `until` (ms),
/// each write taking `latency` ms; its record in flight at `until` dies with it.
fn serve_until(
    c: &mut Coordinator,
    (n, latency): (usize, u64),
    disk: &mut Option<QuotaRecord>,
    (from, until): (u64, u64),
    grants: &mut Vec<(Timestamp, u32)>,
) {
    let mut queue = vec![1; n];
    for t in from..until {
        c.step(false, &mut queue, disk, latency, ms(t), grants);
    }
}

/// A new key granted provisionally by A (twice, at once), which dies before its first
/// record lands (slow writes: the third request's record is still in flight); B, started
/// after the crash, first uses the key once the charge has worn off (so it grants
/// provisionally too, twice) and dies the same way, 30 ms later; C then saturates the key.
/// Without the charge, C's first second would hold 20 starts beside B's two, 22 in a window
/// of 20, and C's first instant 5 tokens beside B's 2, 7 where the bucket allows 5.6.
#[test]
fn two_coordinators_in_turn_granting_a_new_key_provisionally_keep_every_bound() {
    let policy = Policy::new(20.0, 5.0, 1_000, 0).unwrap();
    let shape = WindowShape::for_rate(20.0);
    let (b_open, b_first_use, c_open) = (90, 3_400, 3_430);
    let mut disk = None;
    let mut grants = Vec::new();
    let mut a = Coordinator::start(
        QuotaState::new(policy, ms(0)),
        LeaseLedger::provisional(ms(0)),
        ms(0),
    );
    serve_until(&mut a, (10, 500), &mut disk, (0, 50), &mut grants);
    assert_eq!(
        grants,
        vec![(ms(0), 1); 2],
        "two provisional grants, then a wait for the record"
    );
    assert!(disk.is_none(), "A died before its first record landed");

    let (_, first) = QuotaState::unrecorded(policy, Some(ms(b_open)), ms(b_open + 3_100));
    assert_eq!(
        first,
        FirstGrant::WriteAhead,
        "the slowest refill gives A's two tokens back after 3.2 s"
    );
    let (state, first) = QuotaState::unrecorded(policy, Some(ms(b_open)), ms(b_first_use));
    assert_eq!(
        first,
        FirstGrant::Provisional,
        "the charge wore off by B's first use"
    );
    let mut b = Coordinator::start(state, ledger_for(first, ms(b_first_use)), ms(b_first_use));
    serve_until(
        &mut b,
        (10, 500),
        &mut disk,
        (b_first_use, c_open),
        &mut grants,
    );
    assert_eq!(grants.len(), 4);
    assert!(disk.is_none(), "B died before its first record landed too");

    let (state, first) = QuotaState::unrecorded(policy, Some(ms(c_open)), ms(c_open));
    assert_eq!(
        first,
        FirstGrant::WriteAhead,
        "charged: C writes its first record ahead"
    );
    let mut c = Coordinator::start(state, ledger_for(first, ms(c_open)), ms(c_open));
    serve_until(
        &mut c,
        (100, 2),
        &mut disk,
        (c_open, c_open + 3_000),
        &mut grants,
    );
    for (i, (start, _)) in grants.iter().enumerate() {
        let in_window = grants[i..]
            .iter()
            .take_while(|g| g.0 < *start + shape.length)
            .count() as u64;
        assert!(
            in_window <= shape.limit,
            "{in_window} starts in the window from {start}"
        );
    }
    for i in 0..grants.len() {
        for j in i..grants.len() {
            let t = (grants[j].0 - grants[i].0).as_secs_f64();
            let cost = (j - i + 1) as f64;
            assert!(cost <= 5.0 + 20.0 * t + 1e-6, "cost {cost} over {t} s");
        }
    }
}

/// A new key whose gate bucket holds one token (burst 2, less 100 ms of arrival jitter at
/// 10/s) takes a two-token page under its provisional lease: oversize, it leaves the
/// bucket a token in debt. A dies before the key's first record lands; B must charge that
/// debt, not an empty bucket, or its first grant comes 100 ms early, 3 tokens over 115 ms
/// where the gate's bucket allows 2.15.
#[test]
fn a_crash_after_a_new_keys_oversize_first_grant_keeps_its_debt() {
    let policy = Policy::new(10.0, 2.0, 1_000, 0).unwrap();
    let policy = policy.with_arrival_jitter_ms(100).unwrap();
    assert_eq!(policy.admission_burst(), 1.0);
    let mut arrivals = vec![(0, 2)];
    arrivals.extend(std::iter::repeat_n((10, 1), 20));
    let s = Scenario {
        policy,
        arrivals,
        crash_at_ms: 10,
        takeover_ms: 5,
        write_latency_ms: 2_500,
        takeover_write_latency_ms: 1,
        in_flight_reaches_disk: false,
        retries: false,
        provisional: true,
    };
    let grants = run(&s);
    assert_eq!(grants[0], (ms(0), 2), "A's provisional page");
    assert_eq!(
        grants[1].0,
        ms(215),
        "B repays A's debt (100 ms), then waits for its token (100 ms)"
    );
    ordinary_grants_within_the_admission_burst(&s, &grants).unwrap();
}
