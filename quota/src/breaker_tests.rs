//! Table and property tests of the breaker state machine, on simulated time.

use super::*;
use proptest::prelude::*;

fn at(secs: u64) -> Timestamp {
    Timestamp::from_millis(secs * 1_000)
}

fn fail_n(b: &mut Breaker, n: u32, now: Timestamp) {
    for _ in 0..n {
        b.record(Outcome::Transient, None, now);
    }
}

fn probe(b: &mut Breaker, now: Timestamp) -> ProbeLease {
    match b.pass(now) {
        Passage::Probe(lease) => lease,
        other => panic!("expected a probe lease at {now}, got {other:?}"),
    }
}

#[test]
fn five_consecutive_transient_answers_open_the_breaker_for_five_seconds() {
    let mut b = Breaker::default();
    fail_n(&mut b, FAILURE_THRESHOLD - 1, at(1));
    assert_eq!(b.pass(at(1)), Passage::Go, "four failures keep it closed");
    fail_n(&mut b, 1, at(2));
    assert_eq!(
        b.pass(at(3)),
        Passage::Wait {
            at: at(7),
            reason: BreakerWait::Open
        }
    );
    assert_eq!(b.reopens_at(at(3)), Some(at(7)));
}

#[test]
fn a_success_between_failures_resets_the_count() {
    let mut b = Breaker::default();
    fail_n(&mut b, 4, at(1));
    b.record(Outcome::Success, None, at(1));
    fail_n(&mut b, 4, at(2));
    assert_eq!(b.pass(at(2)), Passage::Go);
}

#[test]
fn fatal_answers_never_open_the_breaker_and_reset_the_count() {
    let mut b = Breaker::default();
    for _ in 0..100 {
        b.record(Outcome::Fatal, None, at(1));
    }
    assert_eq!(b.pass(at(1)), Passage::Go);
    fail_n(&mut b, 4, at(2));
    b.record(Outcome::Fatal, None, at(2));
    fail_n(&mut b, 4, at(3));
    assert_eq!(b.state(at(3)), BreakerState::Closed { failures: 4 });
}

#[test]
fn throttles_neither_count_nor_reset_while_closed() {
    let mut b = Breaker::default();
    for _ in 0..100 {
        b.record(Outcome::Throttled, None, at(1));
    }
    assert_eq!(b.state(at(1)), BreakerState::Closed { failures: 0 });
    fail_n(&mut b, 3, at(2));
    b.record(Outcome::Throttled, None, at(2));
    fail_n(&mut b, 2, at(2));
    assert!(matches!(b.state(at(2)), BreakerState::Open { .. }));
}

#[test]
fn after_the_opening_exactly_one_caller_probes_and_the_others_wait_for_its_lease() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    let lease = probe(&mut b, at(5));
    assert_eq!(lease.expires_at, at(5) + PROBE_LEASE);
    for _ in 0..10 {
        assert_eq!(
            b.pass(at(6)),
            Passage::Wait {
                at: lease.expires_at,
                reason: BreakerWait::ProbeInFlight
            }
        );
    }
}

/// Issue 24: re-openings of 5 s were shorter than a failing key's own cooldown (8 s), so
/// in a 90-second outage the breaker held back nothing the cooldown did not (`bench
/// outage` measured 15 attempts with breakers on and off); a re-opening lasts at least
/// 10 s, longer than any cooldown, so the probes of a 90-second outage are 9, not 17.
#[test]
fn a_ninety_second_outage_costs_nine_probes_spaced_longer_than_the_keys_cooldown() {
    let mut b = Breaker::default();
    let openings = failed_probes(&mut b, at(0), Duration::from_secs(90));
    assert!(openings[1..]
        .iter()
        .all(|o| *o >= MIN_REOPEN && *o > crate::penalty::MAX_COOLDOWN));
    // probes at 5, 15, ..., 85 s fail; the one at 95 s is the first after the end
    let probes_inside = openings.len() - 1;
    assert_eq!(probes_inside, 10, "{openings:?}");
    let sent_inside: Vec<u64> = openings
        .iter()
        .scan(0u64, |t, o| {
            *t += o.as_secs();
            Some(*t)
        })
        .take_while(|t| *t < 90)
        .collect();
    assert_eq!(sent_inside, [5, 15, 25, 35, 45, 55, 65, 75, 85]);
}

#[test]
fn a_successful_probe_closes_the_breaker_and_restores_the_base_opening() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    // a long failure: the re-opening at 100 s lasts 10 s
    let lease = probe(&mut b, at(100));
    b.record(Outcome::Transient, Some(lease.id), at(100));
    assert_eq!(b.reopens_at(at(100)), Some(at(110)));
    let lease = probe(&mut b, at(110));
    assert!(b.record(Outcome::Success, Some(lease.id), at(111)));
    assert_eq!(b.pass(at(111)), Passage::Go);
    assert_eq!(b.open_for(), BASE_OPEN);
    // the next failure is a new one: its first opening is the base again
    fail_n(&mut b, 5, at(200));
    assert_eq!(b.reopens_at(at(200)), Some(at(205)));
}

/// Fail every probe from `start` for as long as `until` and return the openings.
fn failed_probes(b: &mut Breaker, start: Timestamp, until: Duration) -> Vec<Duration> {
    let mut now = start;
    fail_n(b, 5, now);
    let mut openings = vec![b.reopens_at(now).unwrap() - now];
    while now - start < until {
        now = b.reopens_at(now).unwrap();
        let lease = probe(b, now);
        b.record(Outcome::Transient, Some(lease.id), now);
        openings.push(b.reopens_at(now).unwrap() - now);
    }
    openings
}

#[test]
fn each_failed_probe_reopens_for_a_tenth_of_the_failures_age_up_to_six_hundred_seconds() {
    let mut b = Breaker::default();
    let openings = failed_probes(&mut b, at(0), Duration::from_secs(3 * 3_600));
    let secs: Vec<f64> = openings.iter().map(Duration::as_secs_f64).collect();
    // the first opening 5 s, then 10 s until the failure is 100 s old (probes at 5, 15,
    // ..., 95 s), then a tenth of its age (×1.1 per probe)
    assert_eq!(secs[0], 5.0);
    assert_eq!(secs[1..11], [10.0; 10]);
    assert!((secs[11] - 10.5).abs() < 1e-9, "{secs:?}");
    assert!((secs[12] - 11.55).abs() < 1e-9, "{secs:?}");
    assert!(secs.windows(2).all(|w| w[0] <= w[1]));
    // after 6000 s (100 minutes) of failure, 600 s and no more
    assert_eq!(*secs.last().unwrap(), 600.0);
    assert_eq!(
        secs.iter().filter(|s| **s == 600.0).count(),
        secs.len() - secs.iter().position(|s| *s == 600.0).unwrap()
    );
}

proptest! {
    /// Whatever the outage's length L (from the opening), the first probe after the
    /// recovery is sent within max(10 s, L / 10) of it, and the probes sent during the
    /// outage stay few: 10 in the first 100 s, then one per 10% of growth.
    #[test]
    fn a_recovery_is_found_within_a_tenth_of_the_outage(outage_ms in 1u64..20_000_000) {
        let outage = Duration::from_millis(outage_ms);
        let mut b = Breaker::default();
        let start = at(1_000);
        fail_n(&mut b, 5, start);
        let mut now = start;
        let mut probes = 0u32;
        loop {
            now = b.reopens_at(now).unwrap();
            let lease = probe(&mut b, now);
            probes += 1;
            if now - start >= outage {
                b.record(Outcome::Success, Some(lease.id), now);
                break;
            }
            b.record(Outcome::Transient, Some(lease.id), now);
        }
        prop_assert_eq!(b.pass(now), Passage::Go);
        let late = (now - start) - outage;
        prop_assert!(late <= MIN_REOPEN.max(outage / OPEN_SHARE), "late {late:?} for {outage:?}");
        // 1 probe at 5 s, 10 at 10 s, then ln(age / 100 s) / ln(1.1), then one per 600 s
        let age = outage.as_secs_f64().max(100.0);
        let growing = ((age.min(6_000.0) / 100.0).ln() / 1.1f64.ln()).ceil();
        let capped = ((age - 6_000.0).max(0.0) / 600.0).ceil();
        prop_assert!(f64::from(probes) <= 11.0 + growing + capped + 1.0, "{probes} probes for {outage:?}");
    }
}

#[test]
fn a_throttled_or_fatal_probe_answer_closes_the_breaker() {
    for outcome in [Outcome::Throttled, Outcome::Fatal] {
        let mut b = Breaker::default();
        fail_n(&mut b, 5, at(0));
        let lease = probe(&mut b, at(60));
        b.record(outcome, Some(lease.id), at(61));
        assert_eq!(b.pass(at(61)), Passage::Go, "{outcome:?}");
    }
}

#[test]
fn answers_of_calls_sent_before_the_opening_do_not_move_an_open_or_half_open_breaker() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    assert!(!b.record(Outcome::Success, None, at(3)));
    assert!(matches!(b.state(at(3)), BreakerState::Open { .. }));
    let lease = probe(&mut b, at(60));
    assert!(!b.record(Outcome::Success, None, at(61)));
    assert!(!b.record(Outcome::Transient, Some(ProbeId(lease.id.0 + 7)), at(61)));
    assert_eq!(
        b.state(at(61)),
        BreakerState::HalfOpen { probe: Some(lease) }
    );
}

#[test]
fn a_probe_that_never_reports_loses_its_lease_and_the_next_caller_probes() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    let first = probe(&mut b, at(60));
    let second = probe(&mut b, first.expires_at);
    assert_ne!(first.id, second.id);
    assert!(
        !b.record(Outcome::Success, Some(first.id), first.expires_at),
        "the expired lease's late answer is ignored"
    );
}

#[test]
fn an_abandoned_probe_hands_the_lease_to_the_next_caller_at_once() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    let first = probe(&mut b, at(60));
    assert!(b.abandon(first.id, at(61)));
    let second = probe(&mut b, at(61));
    assert_ne!(first.id, second.id);
    assert!(
        !b.abandon(first.id, at(61)),
        "only the live lease can be abandoned"
    );
}

#[test]
fn the_scope_is_the_key_without_its_operation_group() {
    let key: QuotaKey = "aws/123456789012/eu-west-1/ec2:describe".parse().unwrap();
    let other: QuotaKey = "aws/123456789012/eu-west-1/ec2:mutating".parse().unwrap();
    assert_eq!(
        BreakerScope::of(&key).as_str(),
        "aws/123456789012/eu-west-1/ec2"
    );
    assert_eq!(BreakerScope::of(&key), BreakerScope::of(&other));
}

#[test]
fn a_breaker_round_trips_through_its_stored_form() {
    let mut b = Breaker::default();
    fail_n(&mut b, 5, at(0));
    let json = serde_json::to_string(&b).unwrap();
    assert_eq!(serde_json::from_str::<Breaker>(&json).unwrap(), b);
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        Just(Outcome::Success),
        Just(Outcome::Throttled),
        Just(Outcome::Transient),
        Just(Outcome::Fatal),
    ]
}

proptest! {
    /// Bounds that hold after any sequence of answers, passes and abandons: the opening
    /// stays within [5 s, 600 s], at most one live probe lease exists, and an open
    /// breaker never lets a caller through before its instant.
    #[test]
    fn openings_stay_between_five_and_six_hundred_seconds_and_only_one_probe_is_live(
        steps in proptest::collection::vec((outcome(), 0u64..200, any::<bool>()), 1..200)
    ) {
        let mut b = Breaker::default();
        let mut now = at(0);
        let mut lease: Option<ProbeLease> = None;
        for (outcome, advance, as_probe) in steps {
            now = now + Duration::from_secs(advance);
            let before = b.state(now);
            match b.pass(now) {
                Passage::Probe(l) => {
                    let was_free = matches!(before, BreakerState::HalfOpen { probe: None });
                    prop_assert!(was_free);
                    lease = Some(l);
                    // A second caller at the same instant must wait.
                    let is_wait = matches!(b.pass(now), Passage::Wait { .. });
                    prop_assert!(is_wait);
                }
                Passage::Wait { at, .. } => prop_assert!(at > now),
                Passage::Go => {
                    let was_closed = matches!(before, BreakerState::Closed { .. });
                    prop_assert!(was_closed);
                }
            }
            let id = if as_probe { lease.map(|l| l.id) } else { None };
            b.record(outcome, id, now);
            prop_assert!(b.open_for() >= BASE_OPEN && b.open_for() <= MAX_OPEN);

            if let BreakerState::Open { until } = b.state(now) {
                prop_assert!(until - now <= MAX_OPEN);
            }
        }
    }
}
