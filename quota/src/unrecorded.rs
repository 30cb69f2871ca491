//! Keys without a record: when one may grant under a provisional first lease, and what a
//! successor charges it for one.
//!
//! A coordinator that announced it beforehand, store-wide and write-ahead (the actors'
//! `FreshKeys`), lets a key with no record make its first grants before its first record
//! is stored: the provisional lease ([`Lease::provisional`]: two starts, two tokens in all,
//! never a retry). If it dies before that record lands, the key has no record, and its
//! successor cannot tell it from a key nobody ever used. So a successor told that its
//! predecessors may have granted so (`unrecorded_until`: an instant at or after every such
//! grant) charges every key it finds without a record the whole provisional lease at that
//! instant ([`QuotaState::unrecorded`]): two starts in the window (one where the window's
//! limit is one), and two tokens off a full bucket, refilled since at the slowest
//! (deepest-penalty) rate, as [`crate::lease::restore`] does.
//!
//! # Why this never over-admits
//! The dead coordinator granted on such a key at most twice, costing at most two tokens in
//! all (the provisional lease), at instants `t ≤ until`, from a fresh state (full bucket,
//! empty window: see below why only then).
//! - Window: `min(2, limit)` starts are counted at `until`. A start at `t` lies in every
//!   window that holds `t` and a later instant; such a window holds `until` too, so
//!   counting it at `until` over-counts, never under-counts. Capping at the limit (one
//!   start, for rates below 2/s) loses nothing: a run of `limit` or more starts at one
//!   instant keeps the window shut until that instant plus the window's length however
//!   many it counts, so the successor admits exactly when it would with two counted; and
//!   the dead coordinator could not have granted more than `limit` starts in any window
//!   either (under a limit of one, its two starts were a window's length apart, and only
//!   the later can share a window with an instant after `until`).
//! - Bucket: the dead coordinator's bucket held at least `cap − 2` at `until` (full, less
//!   at most two tokens, plus any refill) and never less than zero, so at least
//!   `max(0, cap − 2)`, and has refilled at least at the slowest rate since. For a burst-1
//!   key that is an empty bucket: conservative, since it may have refilled between its two
//!   grants. The one exception to "never less than zero" is a debt: a single two-token
//!   grant above a bucket of less than two tokens (its arrival-jitter allowance took the
//!   rest, `crate::arrival_jitter`) is admitted from a full bucket and leaves it at
//!   `cap − 2 < 0`; where the policy allows such a grant, the charge keeps that debt.
//!   Costs are whole tokens, so no other grant under the lease can leave a debt.
//!
//! The successor's state is therefore one the dead coordinator could have reached, or a
//! stricter one, and every bound of DESIGN §3 holds across the crash, as from a leased
//! record. Nothing is forgotten either: the grants are charged whether or not they
//! happened. The lease does not depend on the dead coordinator's policy (it is two starts
//! and two tokens for every key), so a successor that knows nothing of the key loses
//! nothing by it.
//!
//! # Why a charged key writes its first record ahead
//! The charge stands for one provisional lease. Were a charged key to grant provisionally
//! itself and its coordinator die too, the next successor would find no record and charge
//! one lease for two. So a key the charge still weighs on at `now` (a start still in the
//! window, or its bucket below full) starts [`FirstGrant::WriteAhead`]: its first grant
//! waits for a stored record, which carries the charge. Once the charge has worn off
//! (after the window's length and the time the slowest rate takes to refill the two
//! tokens, or the one a burst-1 bucket lost: 3.2 s at 20/s burst 5, 32 s at 1/s burst 1),
//! the charged state is the fresh state, so the earlier grants can weigh on no later
//! admission, and the key starts [`FirstGrant::Provisional`] again.

use crate::arrival_jitter::{self, Fit};
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
    /// A key with no record, at `now` under `policy`: fresh, or charged a whole provisional
    /// lease at `unrecorded_until` when earlier coordinators of its store may have made one
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

/// Bucket and window at `now` of a fresh key charged a whole provisional lease at
/// `until`: the lease's grants replayed on a full bucket at `until` (into debt only where
/// one grant of the lease's cost would be oversize), then refilled at the slowest rate
/// (from `until`: a clock behind it refills nothing before it, as the window counts the
/// starts at `until`).
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
    let (cap, slowest) = (policy.admission_burst(), slowest_rate(policy));
    let mut bucket = TokenBucket::full(cap, until);
    match arrival_jitter::fit(lease.cost, cap, policy.burst()) {
        Fit::Oversize => bucket.take_into_debt(lease.cost, cap, slowest, until),
        Fit::Fits | Fit::TooLarge => bucket.take(lease.cost, cap, slowest, until),
    }
    bucket.refill(cap, slowest, now);
    (bucket, window)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Admission, AdmitRequest, Owner};

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    fn policy(rate: f64, burst: f64, jitter_ms: u32) -> Policy {
        let policy = Policy::new(rate, burst, 10, 3).unwrap();
        policy.with_arrival_jitter_ms(jitter_ms).unwrap()
    }

    #[test]
    fn a_key_without_a_record_starts_as_the_table_says() {
        let now = ms(100_000);
        let before = |d: u64| Some(now.saturating_sub(Duration::from_millis(d)));
        let (busy, slow) = (policy(20.0, 5.0, 0), policy(1.0, 1.0, 0));
        // (case, policy, unrecorded until) -> (first grant, starts in the window, tokens
        // at now)
        let table = [
            (
                "no predecessor granted unrecorded",
                busy,
                None,
                (FirstGrant::Provisional, 0, 5.0),
            ),
            (
                "charged at the takeover instant",
                busy,
                Some(now),
                (FirstGrant::WriteAhead, 2, 3.0),
            ),
            (
                "the starts have left the window, the tokens are not back",
                busy,
                before(1_000),
                (FirstGrant::WriteAhead, 0, 3.625),
            ),
            (
                "not worn off: 1 s of window, but 3.1 s of 3.2 s of slowest refill",
                busy,
                before(3_100),
                (FirstGrant::WriteAhead, 0, 4.9375),
            ),
            (
                "worn off: 1 s of window, 3.2 s of slowest refill",
                busy,
                before(3_200),
                (FirstGrant::Provisional, 0, 5.0),
            ),
            (
                "a limit of one counts one start; a burst of one is emptied, not owed",
                slow,
                Some(now),
                (FirstGrant::WriteAhead, 1, 0.0),
            ),
            (
                "a slow key stays charged longer",
                slow,
                before(31_000),
                (FirstGrant::WriteAhead, 0, 0.96875),
            ),
            (
                "a slow key wears it off too",
                slow,
                before(32_000),
                (FirstGrant::Provisional, 0, 1.0),
            ),
            (
                "a bucket below two tokens that one oversize grant of two leaves in debt",
                policy(10.0, 2.0, 100),
                Some(now),
                (FirstGrant::WriteAhead, 2, -1.0),
            ),
            (
                "a clock behind the charge counts it later, not never",
                busy,
                Some(now + Duration::from_millis(500)),
                (FirstGrant::WriteAhead, 2, 3.0),
            ),
        ];
        for (case, policy, until, (first, starts, tokens)) in table {
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

    /// `state` with a reservation taken at `now`, and an admission request of a cost on it.
    fn reserved(
        mut state: QuotaState,
        now: Timestamp,
    ) -> (QuotaState, impl Fn(u32) -> AdmitRequest) {
        let owner = Owner {
            pid: 1,
            generation: 1,
        };
        let reservation = state.reserve(owner, now + Duration::from_secs(600), now);
        let reservation = reservation.unwrap();
        let request = move |cost| AdmitRequest {
            reservation,
            cost,
            retry: false,
        };
        (state, request)
    }

    #[test]
    fn a_charged_key_admits_no_more_than_the_charge_leaves() {
        // Rate 4, burst 3: limit 4 starts per second. Charged at `now`: 2 starts and 1
        // token are left, then the bucket refills at the full rate.
        let policy = policy(4.0, 3.0, 0);
        let now = ms(50_000);
        let (charged, _) = QuotaState::unrecorded(policy, Some(now), now);
        let (mut state, request) = reserved(charged, now);
        assert!(matches!(
            state.admit(&request(1), now),
            Admission::Granted(_)
        ));
        assert!(
            matches!(state.admit(&request(1), now), Admission::NotUntil { .. }),
            "a fresh key would admit its second token now"
        );
    }

    /// Grant `costs` in turn on a fresh key from `start`, each as soon as the state lets
    /// it (what a provisional lease lets through). The state after, and the last grant's
    /// instant; `None` if the state refuses a cost outright.
    fn provisional_grants(
        policy: Policy,
        costs: &[u32],
        start: Timestamp,
    ) -> Option<(QuotaState, Timestamp)> {
        let (mut state, request) = reserved(QuotaState::new(policy, start), start);
        let mut now = start;
        for &cost in costs {
            loop {
                match state.admit(&request(cost), now) {
                    Admission::Granted(_) => break,
                    Admission::NotUntil { at, .. } => now = at,
                    Admission::Refused(_) => return None,
                }
            }
        }
        Some((state, now))
    }

    #[test]
    fn the_charge_is_never_looser_than_what_a_provisional_lease_let_through() {
        let policies = [
            policy(20.0, 5.0, 0),
            policy(4.0, 2.0, 0),
            policy(2.5, 1.0, 0),
            policy(1.0, 1.0, 0),
            policy(0.5, 1.0, 0),
            policy(10.0, 2.0, 100),
            policy(10.0, 3.0, 150),
        ];
        // Everything the lease lets pass: two starts, two tokens in all.
        let patterns: [&[u32]; 3] = [&[1], &[1, 1], &[2]];
        assert_eq!(PROVISIONAL_STARTS, 2);
        assert_eq!(PROVISIONAL_COST, 2.0);
        let start = ms(1_000_000);
        for policy in policies {
            let shape = WindowShape::for_rate(policy.rate_per_second());
            for costs in patterns {
                let Some((granted, last)) = provisional_grants(policy, costs, start) else {
                    continue;
                };
                for until in [last, last + Duration::from_millis(200)] {
                    for after_ms in [0, 10, 300, 999, 1_000, 5_000, 40_000, 100_000] {
                        let now = until + Duration::from_millis(after_ms);
                        let (charged, _) = QuotaState::unrecorded(policy, Some(until), now);
                        let (charged, truth) = (charged.snapshot(now), granted.snapshot(now));
                        let case = format!("{policy:?}, costs {costs:?}, {after_ms} ms after");
                        assert!(charged.tokens <= truth.tokens + EPSILON, "{case}: tokens");
                        assert!(charged.window_starts >= truth.window_starts, "{case}");
                        assert!(charged.window_starts <= shape.limit, "{case}: capped");
                    }
                }
            }
        }
    }
}
