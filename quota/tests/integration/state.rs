//! Table tests for `QuotaState`: refusals, retry allowance, penalty through admission,
//! policy adoption across processes, and recovery from a record.

use tollgate_quota::{
    Admission, AdmitRequest, Handover, Outcome, Owner, Policy, QuotaRecord, QuotaState, Refusal,
    ReservationId, Timestamp, WaitReason,
};

const ME: Owner = Owner {
    pid: 7,
    generation: 1,
};

fn ms(v: u64) -> Timestamp {
    Timestamp::from_millis(v)
}

fn reserve(state: &mut QuotaState, now: Timestamp) -> ReservationId {
    state.reserve(ME, ms(3_600_000), now).unwrap()
}

fn admit(state: &mut QuotaState, r: ReservationId, retry: bool, now: Timestamp) -> Admission {
    state.admit(
        &AdmitRequest {
            reservation: r,
            cost: 1,
            retry,
        },
        now,
    )
}

#[test]
fn refusals_are_final_and_charge_nothing() {
    let mut s = QuotaState::new(Policy::new(10.0, 2.0, 10, 0).unwrap(), ms(0));
    assert_eq!(
        admit(&mut s, ReservationId(99), false, ms(0)),
        Admission::Refused(Refusal::UnknownReservation)
    );
    let r = reserve(&mut s, ms(0));
    let big = AdmitRequest {
        reservation: r,
        cost: 3,
        retry: false,
    };
    assert!(matches!(
        s.admit(&big, ms(0)),
        Admission::Refused(Refusal::CostExceedsBurst { cost: 3, .. })
    ));
    // retry capacity 0: retries never go, first attempts do
    assert_eq!(
        admit(&mut s, r, true, ms(0)),
        Admission::Refused(Refusal::RetryAllowanceExhausted)
    );
    assert!(matches!(
        admit(&mut s, r, false, ms(0)),
        Admission::Granted(_)
    ));
    assert!(matches!(
        admit(&mut s, r, false, ms(0)),
        Admission::Granted(_)
    ));
}

#[test]
fn retry_allowance_drains_and_success_refunds() {
    let mut s = QuotaState::new(Policy::new(100.0, 100.0, 10, 2).unwrap(), ms(0));
    let r = reserve(&mut s, ms(0));
    for _ in 0..2 {
        let Admission::Granted(g) = admit(&mut s, r, true, ms(0)) else {
            panic!("retry should pass")
        };
        assert!(g.retry_spent);
    }
    assert_eq!(
        admit(&mut s, r, true, ms(0)),
        Admission::Refused(Refusal::RetryAllowanceExhausted)
    );
    // time alone does not refill
    assert_eq!(
        admit(&mut s, r, true, ms(3_600_000 - 1)),
        Admission::Refused(Refusal::RetryAllowanceExhausted)
    );
    s.feedback(Outcome::Success, ms(0), ms(10));
    assert_eq!(s.retry_units(), 1);
}

#[test]
fn throttle_starts_cooldown_and_halves_refill() {
    let mut s = QuotaState::new(Policy::new(4.0, 1.0, 10, 5).unwrap(), ms(0));
    let r = reserve(&mut s, ms(0));
    let Admission::Granted(g) = admit(&mut s, r, false, ms(0)) else {
        panic!()
    };
    s.feedback(Outcome::Throttled, g.admitted_at, ms(10));
    assert_eq!(
        admit(&mut s, r, false, ms(10)),
        Admission::NotUntil {
            at: ms(510),
            reason: WaitReason::Cooldown
        }
    );
    // The bucket (empty at 0 ms, 4/s until 10 ms, 2/s after) is full (burst 1) at 510 ms;
    // the next token takes 500 ms at the halved rate.
    assert!(matches!(
        admit(&mut s, r, false, ms(510)),
        Admission::Granted(_)
    ));
    assert_eq!(
        admit(&mut s, r, false, ms(510)),
        Admission::NotUntil {
            at: ms(1_010),
            reason: WaitReason::Tokens
        }
    );
    assert_eq!(s.snapshot(ms(510)).effective_rate_per_second, 2.0);
}

#[test]
fn stricter_policy_applies_at_once_looser_only_after_idle() {
    let loose = Policy::new(10.0, 10.0, 10, 20).unwrap();
    let strict = Policy::new(5.0, 1.0, 3, 10).unwrap();
    let mut s = QuotaState::new(loose, ms(0));
    let r = reserve(&mut s, ms(0));
    assert!(s.adopt_policy(&strict, ms(0)));
    assert_eq!(*s.policy(), strict);
    // still reserved: a looser request does not relax
    assert!(!s.adopt_policy(&loose, ms(120_000)));
    s.release(r, ms(120_000));
    // released, but not yet 60 s idle
    assert!(!s.adopt_policy(&loose, ms(150_000)));
    assert!(s.adopt_policy(&loose, ms(180_000)));
    assert_eq!(*s.policy(), loose);
}

#[test]
fn format_1_periodic_record_recovers_conservatively_and_keeps_penalty_and_allowance() {
    let policy = Policy::new(10.0, 10.0, 10, 5).unwrap();
    let mut s = QuotaState::new(policy, ms(0));
    let r = reserve(&mut s, ms(0));
    s.reserve(
        Owner {
            pid: 4_000_000,
            generation: 1,
        },
        ms(3_600_000),
        ms(0),
    )
    .unwrap();
    let Admission::Granted(g) = admit(&mut s, r, true, ms(0)) else {
        panic!()
    };
    s.feedback(Outcome::Throttled, g.admitted_at, ms(5));
    // What tollgate wrote before leases: no live part, no lease.
    let mut json: serde_json::Value =
        serde_json::to_value(s.to_record(Handover::Graceful, ms(5))).unwrap();
    json["format"] = 1.into();
    json["live"] = serde_json::Value::Null;
    json.as_object_mut().unwrap().remove("lease");
    let record: QuotaRecord = serde_json::from_value(json).unwrap();
    let (mut back, recovery) = QuotaState::from_record(record, ms(10_000), &|pid| pid == ME.pid);
    assert!(recovery.conservative);
    assert_eq!(recovery.reaped, 1, "the dead pid's reservation is reaped");
    assert_eq!(back.retry_units(), 4);
    assert_eq!(back.penalty().steps(), 1);
    let snap = back.snapshot(ms(10_000));
    assert_eq!(snap.tokens, 0.0);
    assert_eq!(snap.window_starts, 10);
    // nothing starts for one full window
    match admit(&mut back, r, false, ms(10_000)) {
        Admission::NotUntil { at, .. } => assert!(at >= ms(11_000)),
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[test]
fn graceful_record_resumes_exactly() {
    let policy = Policy::new(4.0, 2.0, 10, 5).unwrap();
    let mut s = QuotaState::new(policy, ms(0));
    let r = reserve(&mut s, ms(0));
    admit(&mut s, r, false, ms(0));
    let (mut back, recovery) =
        QuotaState::from_record(s.to_record(Handover::Graceful, ms(0)), ms(0), &|_| true);
    assert!(!recovery.conservative);
    assert_eq!(back.snapshot(ms(0)), s.snapshot(ms(0)));
    assert!(matches!(
        admit(&mut back, r, false, ms(0)),
        Admission::Granted(_)
    ));
    assert_eq!(
        admit(&mut back, r, false, ms(0)),
        Admission::NotUntil {
            at: ms(250),
            reason: WaitReason::Tokens
        }
    );
}

#[test]
fn an_unsent_grant_refunded_gives_its_tokens_and_retry_unit_back_but_never_past_burst() {
    // Window limit 10 in a second, so the bucket (burst 5) is what binds.
    let mut s = QuotaState::new(Policy::new(10.0, 5.0, 10, 3).unwrap(), ms(0));
    let r = reserve(&mut s, ms(0));
    let five = AdmitRequest {
        reservation: r,
        cost: 5,
        retry: true,
    };
    let Admission::Granted(g) = s.admit(&five, ms(0)) else {
        panic!("a full bucket admits its burst")
    };
    assert!(g.retry_spent);
    assert_eq!(s.retry_units(), 2);
    assert!(matches!(
        s.admit(&five, ms(0)),
        Admission::NotUntil {
            reason: WaitReason::Tokens,
            ..
        }
    ));
    s.refund_unsent(5, &g, ms(0));
    assert_eq!(s.retry_units(), 3);
    assert_eq!(
        s.snapshot(ms(0)).window_starts,
        0,
        "the unsent start left the window"
    );
    let Admission::Granted(g) = s.admit(&five, ms(0)) else {
        panic!("the refund put the burst back")
    };
    // 200 ms later 2 tokens are back; a refund of 5 tops the bucket up to 5, not 7.
    s.refund_unsent(5, &g, ms(200));
    assert_eq!(s.snapshot(ms(200)).tokens, 5.0);
    assert!(matches!(s.admit(&five, ms(200)), Admission::Granted(_)));
    assert!(matches!(
        s.admit(&five, ms(200)),
        Admission::NotUntil { .. }
    ));
    assert_eq!(s.snapshot(ms(200)).window_starts, 1);
}

#[test]
fn a_refunded_start_leaves_the_rolling_window_so_it_does_not_hold_back_a_sent_one() {
    // 2/s burst 2: the window (2 starts a second) binds as soon as the bucket has refilled.
    let mut s = QuotaState::new(Policy::new(2.0, 2.0, 10, 3).unwrap(), ms(0));
    let r = reserve(&mut s, ms(0));
    let Admission::Granted(first) = admit(&mut s, r, false, ms(0)) else {
        panic!()
    };
    let Admission::Granted(unsent) = admit(&mut s, r, false, ms(100)) else {
        panic!()
    };
    s.refund_unsent(1, &unsent, ms(100));
    assert_eq!(s.snapshot(ms(100)).window_starts, 1);
    assert!(matches!(
        admit(&mut s, r, false, ms(100)),
        Admission::Granted(_)
    ));
    // Two starts sent in the window now: the third waits for the window (at 1,000 ms).
    assert!(matches!(
        admit(&mut s, r, false, ms(600)),
        Admission::NotUntil {
            reason: WaitReason::Window,
            ..
        }
    ));
    assert_eq!(first.admitted_at, ms(0));
}
