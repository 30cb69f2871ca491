//! Keys without a record: when one may grant under a provisional first lease, and what a
//! successor charges it for one.
//!
//! A coordinator that announced it beforehand, store-wide and write-ahead (the actors'
//! `FreshKeys`), lets a key with no record make one first grant before its first record is
//! stored: the provisional lease ([`Lease::provisional`]: one start, one token, never a
//! retry). If it dies before that record lands, the key has no record, and its successor
//! cannot tell it from a key nobody ever used. So a successor told that its predecessors
//! may have granted so (`unrecorded_until`: an instant at or after every such grant) charges
//! every key it finds without a record one provisional grant at that instant
//! ([`QuotaState::unrecorded`]): one start in the window, and one token off a full bucket,
//! refilled since at the slowest (deepest-penalty) rate, as [`crate::lease::restore`] does.
//!
//! # Why this never over-admits
//! The dead coordinator granted on such a key at most once (the provisional lease covers
//! one start costing at most one token), at an instant `t ≤ until`, from a fresh state
//! (full bucket, empty window: see below why only then).
//! - Window: a start at `t` lies in every window that holds `t` and a later instant; such
//!   a window holds `until` too, so counting it at `until` over-counts, never under-counts.
//! - Bucket: the dead coordinator's bucket held at least `cap − 1` at `until` (full, less
//!   one token, plus any refill), and has refilled at least at the slowest rate since.
//!
//! The successor's state is therefore one the dead coordinator could have reached, or a
//! stricter one, and every bound of DESIGN §3 holds across the crash, as from a leased
//! record. Nothing is forgotten either: the grant is charged whether or not it happened.
//! The charge does not depend on the dead coordinator's policy (one start and one token
//! fit every policy), so a successor that knows nothing of the key loses nothing by it.
//!
//! # Why a charged key writes its first record ahead
//! The charge stands for one provisional grant. Were a charged key to grant provisionally
//! itself and its coordinator die too, the next successor would find no record and charge
//! one grant for two. So a key the charge still weighs on at `now` (its start still in the
//! window, or its bucket below full) starts [`FirstGrant::WriteAhead`]: its first grant
//! waits for a stored record, which carries the charge. Once the charge has worn off
//! (after the window's length and `1 / slowest rate`: 1.6 s at 20/s, 32 s at 1/s), the
//! charged state is the fresh state, so the earlier grant can weigh on no later admission,
//! and the key starts [`FirstGrant::Provisional`] again.

use crate::bucket::{TokenBucket, EPSILON};
use crate::lease::{slowest_rate, Lease, PROVISIONAL_COST, PROVISIONAL_STARTS};
use crate::policy::Policy;
use crate::state::QuotaState;
use crate::time::Timestamp;
use crate::window::{RollingWindow, WindowShape};

/// How a key without a record may make its first grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstGrant {
    /// Under a provisional first lease ([`Lease::provisional`]), before its first record
    /// is stored, where its coordinator announced such grants.
    Provisional,
    /// Under a stored lease only: its first record is written ahead of it.
    WriteAhead,
}

impl QuotaState {
    /// A key with no record, at `now` under `policy`: fresh, or charged one provisional
    /// grant at `unrecorded_until` when earlier coordinators of its store may have made one
    /// (see the module docs). Also says how its first grant may go.
    pub fn unrecorded(
        policy: Policy,
        unrecorded_until: Option<Timestamp>,
        now: Timestamp,
    ) -> (QuotaState, FirstGrant) {
        let fresh = QuotaState::new(policy, now);
        let Some(until) = unrecorded_until else {
            return (fresh, FirstGrant::Provisional);
        };
        let shape = WindowShape::for_rate(policy.rate_per_second());
        let (bucket, mut window) = charge_provisional(&policy, until, now);
        let worn_off =
            window.count(shape, now) == 0 && bucket.tokens() + EPSILON >= policy.admission_burst();
        match worn_off {
            true => (fresh, FirstGrant::Provisional),
            false => (fresh.with_charge(bucket, window), FirstGrant::WriteAhead),
        }
    }
}

/// Bucket and window at `now` of a fresh key charged one provisional grant at `until`.
fn charge_provisional(
    policy: &Policy,
    until: Timestamp,
    now: Timestamp,
) -> (TokenBucket, RollingWindow) {
    let shape = WindowShape::for_rate(policy.rate_per_second());
    let lease = Lease::provisional(until);
    debug_assert_eq!(
        (lease.starts, lease.cost),
        (PROVISIONAL_STARTS, PROVISIONAL_COST)
    );
    let mut window = RollingWindow::default();
    window.record_many(shape, until, lease.starts.min(shape.limit));
    let cap = policy.admission_burst();
    let gained = slowest_rate(policy) * now.saturating_since(until).as_secs_f64();
    let tokens = (cap - lease.cost + gained).min(cap);
    (TokenBucket::with_tokens(tokens, now), window)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn a_key_without_a_record_starts_as_the_table_says() {
        let now = ms(100_000);
        let before = |d: u64| Some(now.saturating_sub(Duration::from_millis(d)));
        // (case, rate, burst, unrecorded until) -> (first grant, starts in the window,
        // tokens at now)
        let table = [
            (
                "no predecessor granted unrecorded",
                20.0,
                5.0,
                None,
                (FirstGrant::Provisional, 0, 5.0),
            ),
            (
                "charged at the takeover instant",
                20.0,
                5.0,
                Some(now),
                (FirstGrant::WriteAhead, 1, 4.0),
            ),
            (
                "the start has left the window, the token is not back",
                20.0,
                5.0,
                before(1_000),
                (FirstGrant::WriteAhead, 0, 4.625),
            ),
            (
                "worn off: 1 s of window, 1.6 s of slowest refill",
                20.0,
                5.0,
                before(1_600),
                (FirstGrant::Provisional, 0, 5.0),
            ),
            (
                "a slow key stays charged longer",
                1.0,
                1.0,
                before(31_000),
                (FirstGrant::WriteAhead, 0, 0.96875),
            ),
            (
                "a slow key wears it off too",
                1.0,
                1.0,
                before(32_000),
                (FirstGrant::Provisional, 0, 1.0),
            ),
            (
                "a clock behind the charge counts it later, not never",
                20.0,
                5.0,
                Some(now + Duration::from_millis(500)),
                (FirstGrant::WriteAhead, 1, 4.0),
            ),
        ];
        for (case, rate, burst, until, (first, starts, tokens)) in table {
            let policy = Policy::new(rate, burst, 10, 3).unwrap();
            let (state, got) = QuotaState::unrecorded(policy, until, now);
            let snapshot = state.snapshot(now);
            assert_eq!(got, first, "{case}");
            assert_eq!(snapshot.window_starts, starts, "{case}");
            assert!(
                (snapshot.tokens - tokens).abs() < 1e-9,
                "{case}: {} tokens",
                snapshot.tokens
            );
            assert_eq!(
                snapshot.retry_units, 3,
                "{case}: a provisional grant is never a retry"
            );
            assert_eq!(snapshot.penalty_steps, 0, "{case}");
        }
    }

    #[test]
    fn a_charged_key_admits_no_more_than_the_charge_leaves() {
        // Rate 4, burst 2: limit 4 starts per second. Charged at `now`: 3 starts and 1
        // token are left, then the bucket refills at the full rate.
        let policy = Policy::new(4.0, 2.0, 10, 0).unwrap();
        let now = ms(50_000);
        let (mut state, _) = QuotaState::unrecorded(policy, Some(now), now);
        let id = state
            .reserve(
                crate::Owner {
                    pid: 1,
                    generation: 1,
                },
                now + Duration::from_secs(60),
                now,
            )
            .unwrap();
        let request = crate::AdmitRequest {
            reservation: id,
            cost: 1,
            retry: false,
        };
        assert!(matches!(
            state.admit(&request, now),
            crate::Admission::Granted(_)
        ));
        assert!(
            matches!(
                state.admit(&request, now),
                crate::Admission::NotUntil { .. }
            ),
            "a fresh key would admit its second token now"
        );
    }
}
