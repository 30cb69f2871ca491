//! The key-wide Retry-After pause: every waiter honours it, it is capped at 300 s, a
//! shorter hint never shortens it, and it survives a record.

use std::time::Duration;

use tollgate_quota::{
    Admission, AdmitRequest, Handover, Owner, Policy, QuotaState, ReservationId, Timestamp,
    WaitReason, MAX_PAUSE,
};

const ME: Owner = Owner {
    pid: 7,
    generation: 1,
};

fn secs(v: u64) -> Timestamp {
    Timestamp::from_millis(v * 1_000)
}

fn admit(state: &mut QuotaState, r: ReservationId, now: Timestamp) -> Admission {
    state.admit(
        &AdmitRequest {
            reservation: r,
            cost: 1,
            retry: false,
        },
        now,
    )
}

fn fresh() -> QuotaState {
    QuotaState::new(Policy::new(100.0, 100.0, 10, 10).unwrap(), secs(0))
}

#[test]
fn a_paused_key_tells_every_waiter_the_pause_end_and_charges_nothing() {
    let mut s = fresh();
    let a = s.reserve(ME, secs(3_600), secs(0)).unwrap();
    let b = s.reserve(ME, secs(3_600), secs(0)).unwrap();
    assert_eq!(s.pause(Duration::from_secs(20), secs(10)), secs(30));
    let tokens = s.snapshot(secs(10)).tokens;
    for r in [a, b] {
        assert_eq!(
            admit(&mut s, r, secs(10)),
            Admission::NotUntil {
                at: secs(30),
                reason: WaitReason::Paused
            }
        );
    }
    assert_eq!(s.snapshot(secs(10)).tokens, tokens);
    assert_eq!(s.snapshot(secs(10)).paused_until, Some(secs(30)));
    assert!(matches!(admit(&mut s, a, secs(30)), Admission::Granted(_)));
    assert_eq!(s.snapshot(secs(30)).paused_until, None);
}

#[test]
fn a_pause_is_capped_at_three_hundred_seconds() {
    let mut s = fresh();
    assert_eq!(MAX_PAUSE, Duration::from_secs(300));
    assert_eq!(s.pause(Duration::from_secs(86_400), secs(5)), secs(305));
    assert_eq!(s.pause(Duration::MAX, secs(5)), secs(305));
}

#[test]
fn a_shorter_hint_never_shortens_the_pause_in_force() {
    let mut s = fresh();
    s.pause(Duration::from_secs(60), secs(0));
    assert_eq!(s.pause(Duration::from_secs(1), secs(10)), secs(60));
    assert_eq!(s.pause(Duration::from_secs(100), secs(10)), secs(110));
}

#[test]
fn a_pause_survives_a_record_and_an_expired_one_is_dropped() {
    let mut s = fresh();
    s.pause(Duration::from_secs(60), secs(0));
    let record = s.to_record(Handover::Graceful, secs(1));
    let (restored, _) = QuotaState::from_record(record.clone(), secs(2), &|_| true);
    assert_eq!(restored.paused_until(secs(2)), Some(secs(60)));
    let (late, _) = QuotaState::from_record(record, secs(61), &|_| true);
    assert_eq!(late.paused_until(secs(61)), None);
}
