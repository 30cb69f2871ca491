//! Write-ahead admission leases: how a coordinator that may be SIGKILLed at any instant
//! lets its successor resume within a fraction of a window, and never over-admit.
//!
//! Without them, a successor knows nothing about the dead coordinator's last grants and
//! must assume the worst: an empty bucket and a window full for a whole window (a second
//! of silence for a 1 s window). A lease bounds what "the worst" can be.
//!
//! # The rule (enforced by [`LeaseLedger`], used by the quota actor)
//! A grant happens only under a *stored lease* (a new key's provisional first grant aside:
//! below): a record holding a snapshot of the key's live state (bucket, window) taken at
//! instant `s`, plus a [`Lease`] "at most K more starts and C more cost after `s`", has
//! been written and flushed before the grant. Every
//! grant after `s` is charged to that lease; one that does not fit waits until a renewal
//! (a newer snapshot with a fresh lease) is stored. A renewal in flight may reach the disk
//! at any moment, so from its snapshot on, grants are charged to it as well and must fit
//! both. Renewal starts once half a lease is used, so the hot path rarely waits for it.
//!
//! # Why restoring from a lease never over-admits ([`restore`])
//! Let `R` be the newest record on disk when the coordinator died: snapshot at `s`,
//! lease (K, C). Every grant of the dead coordinator after `s` was charged to `R` (it was
//! stored or in flight when the grant was made), so there were at most K of them, costing
//! at most C in all, all at instants in `[s, now]`, `now` being the restore instant. The
//! successor restores:
//! - window: the snapshot's starts at their own instants, plus min(K, limit) starts at
//!   `now`. A start at `t ≤ now` lies in every later window that contains `t`, and such a
//!   window contains `now` too: counting it at `now` over-counts, never under-counts.
//! - bucket: `max(0, min(burst, tokens(s) + r_min·(now − s)) − C)` tokens at `now`, where
//!   `r_min` is the deepest penalised rate. The dead coordinator's own bucket at `now`
//!   holds at least that much: if it never reached `burst` after `s` it gained at least
//!   `r_min·(now − s)` and lost at most C; if it did, it lost at most C since.
//!
//! The restored state is therefore one the dead coordinator could have reached, or a
//! stricter one, so every bound of DESIGN §3 that holds for one coordinator (starts per
//! window, cost ≤ burst + rate·T) holds across the crash. The price of a crash is at most
//! one lease of capacity: K starts and C cost.
//!
//! # The provisional first lease ([`Lease::provisional`], `crate::unrecorded`)
//! A key that has no record anywhere may make its first grants before its first record is
//! stored, under a *provisional* lease of two starts costing two tokens in all
//! ([`LeaseLedger::provisional`]), provided its coordinator announced, write-ahead and
//! store-wide, that keys without a record may hold such grants. Its first record then
//! goes with the next periodic save (or at once if an admission does not fit), and only
//! the first lease is provisional: every later grant needs a stored one, as above. A
//! successor finding no record for a key charges it the whole provisional lease
//! (`QuotaState::unrecorded`), exactly what the dead coordinator may have granted on it.
//! Retries never pass under a provisional lease ([`LeaseLedger::covers_retry`]), so that
//! charge takes no retry unit. The window and the bucket still gate each of the two
//! grants: a burst-1 key's second waits for a token (not for a record), and the lease only
//! bounds what may pass before anything of the key is stored.
//!
//! # Sizing
//! A larger lease means fewer flushes but more capacity charged on a crash, and (because
//! the K starts are charged at `now`) a longer pause after it when the window was busy:
//! about `K / limit` of a window. [`Lease::for_policy`] takes 1/8 of the window limit and
//! 1/4 of the burst (at least one start and the cost asked for), so a saturated key
//! renews every K/2 grants: at most ~16 flushes per window, and a 1 s window pauses about
//! 125 ms after a crash.

use serde::{Deserialize, Serialize};

use crate::bucket::{TokenBucket, EPSILON};
use crate::penalty::MAX_PENALTY_STEPS;
use crate::policy::Policy;
use crate::time::Timestamp;
use crate::window::{RollingWindow, WindowShape};

/// Starts of a provisional first lease: two, whatever the policy, so a successor that
/// knows nothing of a record-less key's policy charges exactly what it may have granted.
///
/// Why two: an organization scan uses most new keys twice in quick succession (a listing,
/// then a call on what it found: `ListFunctions` then `ListVersionsByFunction`,
/// `ListTables` then `DescribeTable`). Under a one-start lease the second admission found
/// it used up and forced an urgent write of the key's first record (issue 35: 1,700 of
/// `bench org`'s 1,749 urgent writes, about half the coordinator's CPU); under two, both
/// go before the record, which joins the next gathered batch. A crash costs each
/// record-less key a successor uses two starts and two tokens instead of one of each. For
/// a slow key (0.5/s, burst 1: its own leases are one start and one token) that is more
/// than its own lease, but the charge counts at most the window's limit of starts and
/// only empties a burst-1 bucket (`crate::unrecorded`).
pub const PROVISIONAL_STARTS: u64 = 2;
/// Cost of a provisional first lease: two tokens in all (a policy's burst holds at least
/// one; a burst-1 key takes its two one at a time, as its bucket refills).
pub const PROVISIONAL_COST: f64 = 2.0;

/// A lease takes `limit / LEASE_WINDOW_DIVISOR` starts (at least one).
pub const LEASE_WINDOW_DIVISOR: u64 = 8;
/// A lease takes `burst / LEASE_BURST_DIVISOR` cost (at least one, and at least the
/// cost of the request that asks for it).
pub const LEASE_BURST_DIVISOR: f64 = 4.0;

/// What a stored record allows its writer to grant after its snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// The instant of the snapshot stored with the lease.
    pub snapshot_at: Timestamp,
    /// Most starts granted after the snapshot.
    pub starts: u64,
    /// Most cost granted after the snapshot.
    pub cost: f64,
}

impl Lease {
    /// The lease for `policy`, taken at `snapshot_at`, large enough for a request of
    /// `at_least_cost` (see the module docs on sizing).
    pub fn for_policy(policy: &Policy, at_least_cost: f64, snapshot_at: Timestamp) -> Lease {
        let limit = WindowShape::for_rate(policy.rate_per_second()).limit;
        Lease {
            snapshot_at,
            starts: (limit / LEASE_WINDOW_DIVISOR).max(1),
            cost: (policy.burst() / LEASE_BURST_DIVISOR)
                .max(1.0)
                .max(at_least_cost),
        }
    }

    /// The provisional first lease of a key without a record, taken at `at` (the fresh
    /// state's instant): [`PROVISIONAL_STARTS`] and [`PROVISIONAL_COST`] (see the module
    /// docs).
    pub fn provisional(at: Timestamp) -> Lease {
        Lease {
            snapshot_at: at,
            starts: PROVISIONAL_STARTS,
            cost: PROVISIONAL_COST,
        }
    }
}

/// Grants charged to one lease so far.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Usage {
    lease: Lease,
    starts: u64,
    cost: f64,
}

impl Usage {
    fn new(lease: Lease) -> Self {
        Usage {
            lease,
            starts: 0,
            cost: 0.0,
        }
    }

    fn fits(&self, cost: f64) -> bool {
        self.starts < self.lease.starts && self.cost + cost <= self.lease.cost + EPSILON
    }

    fn half_used(&self) -> bool {
        self.starts * 2 >= self.lease.starts || self.cost * 2.0 >= self.lease.cost
    }
}

/// Names one renewal, so a late acknowledgement is not taken for a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenewalTicket(u64);

/// What the lease in hand rests on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Footing {
    /// A stored record (or nothing yet).
    #[default]
    Record,
    /// Nothing of the key is stored: a provisional first lease, charged to the key by any
    /// successor that finds no record of it.
    Provisional,
}

/// The leases of one key in its coordinator: the newest stored one and at most one
/// renewal in flight. Pure bookkeeping; the actor does the storing.
#[derive(Debug, Clone, Default)]
pub struct LeaseLedger {
    stored: Option<Usage>,
    footing: Footing,
    pending: Option<(RenewalTicket, Usage)>,
    issued: u64,
}

impl LeaseLedger {
    /// A ledger with nothing stored: the first grant waits for a lease.
    pub fn new() -> Self {
        LeaseLedger::default()
    }

    /// A ledger holding a key's provisional first lease from `at` (see the module docs):
    /// up to two first grants, two tokens in all, pass before anything is stored. Only for
    /// a key without a record whose coordinator announced provisional grants write-ahead.
    pub fn provisional(at: Timestamp) -> Self {
        LeaseLedger {
            stored: Some(Usage::new(Lease::provisional(at))),
            footing: Footing::Provisional,
            ..LeaseLedger::default()
        }
    }

    /// True while the lease in hand is the provisional first lease (nothing stored yet).
    pub fn is_provisional(&self) -> bool {
        self.footing == Footing::Provisional
    }

    /// True if a grant of `cost` fits the stored lease and the renewal in flight.
    pub fn covers(&self, cost: f64) -> bool {
        self.stored.is_some_and(|u| u.fits(cost)) && self.pending.is_none_or(|(_, u)| u.fits(cost))
    }

    /// As [`LeaseLedger::covers`], for a retry: never under a provisional lease, whose
    /// charge on a successor takes no retry unit.
    pub fn covers_retry(&self, cost: f64) -> bool {
        !self.is_provisional() && self.covers(cost)
    }

    /// Charge a grant; the caller checked [`LeaseLedger::covers`].
    pub fn charge(&mut self, cost: f64) {
        for u in self
            .stored
            .iter_mut()
            .chain(self.pending.iter_mut().map(|(_, u)| u))
        {
            u.starts += 1;
            u.cost += cost;
        }
    }

    /// True if a renewal should start now: none is in flight, and nothing is stored, half
    /// the stored lease is used, or the next request (of `next_cost`) does not fit. Under
    /// a provisional lease, only when an admission waits for a lease (`next_cost` is
    /// `Some`: it does not fit, or is a retry): otherwise the first record waits for the
    /// periodic save, one record where an early renewal and the periodic save made two.
    pub fn wants_renewal(&self, next_cost: Option<f64>) -> bool {
        if self.pending.is_some() {
            return false;
        }
        match (self.stored, self.footing) {
            (None, _) => true,
            (Some(_), Footing::Provisional) => next_cost.is_some(),
            (Some(u), Footing::Record) => u.half_used() || next_cost.is_some_and(|c| !u.fits(c)),
        }
    }

    /// True while a renewal is in flight.
    pub fn is_renewing(&self) -> bool {
        self.pending.is_some()
    }

    /// A renewal with `lease` was handed to storage (its snapshot is the state now).
    /// Replaces any renewal still in flight: the caller stores one record at a time.
    pub fn begin(&mut self, lease: Lease) -> RenewalTicket {
        self.issued += 1;
        let ticket = RenewalTicket(self.issued);
        self.pending = Some((ticket, Usage::new(lease)));
        ticket
    }

    /// Storage confirmed the renewal `ticket`: it becomes the stored lease, with what
    /// was charged to it while in flight. False if `ticket` is not the one in flight.
    pub fn stored(&mut self, ticket: RenewalTicket) -> bool {
        match self.pending {
            Some((t, usage)) if t == ticket => {
                self.stored = Some(usage);
                self.footing = Footing::Record;
                self.pending = None;
                true
            }
            _ => false,
        }
    }

    /// Starts and cost still grantable before the next renewal must be stored.
    pub fn remaining(&self) -> (u64, f64) {
        let left = |u: &Usage| (u.lease.starts - u.starts, (u.lease.cost - u.cost).max(0.0));
        match (
            self.stored.as_ref().map(left),
            self.pending.as_ref().map(|(_, u)| left(u)),
        ) {
            (Some(a), Some(b)) => (a.0.min(b.0), a.1.min(b.1)),
            (Some(a), None) => a,
            _ => (0, 0.0),
        }
    }
}

/// The bucket and window to resume with at `now`, from a snapshot stored with `lease`
/// (the bucket and window as they were at `lease.snapshot_at`): charge the whole lease
/// as if granted at `now`. See the module docs for why this never over-admits.
pub fn restore(
    lease: &Lease,
    policy: &Policy,
    bucket: TokenBucket,
    mut window: RollingWindow,
    now: Timestamp,
) -> (TokenBucket, RollingWindow) {
    let shape = WindowShape::for_rate(policy.rate_per_second());
    window.record_many(shape, now, lease.starts.min(shape.limit));
    let at_snapshot = bucket.tokens();
    let gained = slowest_rate(policy) * now.saturating_since(lease.snapshot_at).as_secs_f64();
    let tokens = ((at_snapshot + gained).min(policy.admission_burst()) - lease.cost).max(0.0);
    (TokenBucket::with_tokens(tokens, now), window)
}

/// The slowest a key's bucket can refill under `policy`: its rate at the deepest penalty,
/// what a restore assumes for the time nobody knows about.
pub(crate) fn slowest_rate(policy: &Policy) -> f64 {
    policy.rate_per_second() / f64::from(1u32 << MAX_PENALTY_STEPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn sizes_follow_the_policy() {
        let table = [
            // (rate, burst, cost asked) -> (starts, cost)
            ((20.0, 5.0, 1.0), (2, 1.25)),
            ((100.0, 20.0, 1.0), (12, 5.0)),
            ((0.5, 1.0, 1.0), (1, 1.0)),
            ((4.0, 2.0, 2.0), (1, 2.0)),
            ((1e9, 1e9, 1.0), (125_000_000, 2.5e8)),
        ];
        for ((rate, burst, asked), (starts, cost)) in table {
            let lease = Lease::for_policy(&Policy::new(rate, burst, 1, 0).unwrap(), asked, ms(7));
            assert_eq!((lease.starts, lease.cost), (starts, cost), "rate {rate}");
            assert_eq!(lease.snapshot_at, ms(7));
        }
    }

    fn lease(starts: u64, cost: f64) -> Lease {
        Lease {
            snapshot_at: ms(0),
            starts,
            cost,
        }
    }

    #[test]
    fn nothing_is_granted_before_a_lease_is_stored() {
        let mut l = LeaseLedger::new();
        assert!(!l.covers(1.0));
        assert!(l.wants_renewal(Some(1.0)));
        let t = l.begin(lease(4, 4.0));
        assert!(!l.covers(1.0), "in flight is not stored");
        assert!(!l.wants_renewal(Some(1.0)), "one renewal at a time");
        assert!(l.stored(t));
        assert!(l.covers(1.0));
        assert!(!l.stored(t), "a ticket is confirmed once");
    }

    #[test]
    fn grants_are_charged_to_the_stored_lease_and_the_one_in_flight() {
        let mut l = LeaseLedger::new();
        let t = l.begin(lease(4, 4.0));
        l.stored(t);
        l.charge(1.0);
        assert!(!l.wants_renewal(Some(1.0)));
        l.charge(1.0);
        assert!(l.wants_renewal(Some(1.0)), "half used");
        let t2 = l.begin(lease(4, 4.0));
        l.charge(1.0);
        l.charge(1.0);
        assert_eq!(l.remaining(), (0, 0.0), "the stored lease is used up");
        assert!(!l.covers(1.0), "wait for the renewal");
        l.stored(t2);
        assert_eq!(
            l.remaining(),
            (2, 2.0),
            "the renewal keeps what it was charged"
        );
    }

    #[test]
    fn a_large_request_asks_for_a_renewal_that_fits_it() {
        let mut l = LeaseLedger::new();
        let t = l.begin(lease(4, 2.0));
        l.stored(t);
        assert!(!l.covers(3.0));
        assert!(l.wants_renewal(Some(3.0)));
    }

    #[test]
    fn a_provisional_lease_is_two_starts_of_two_tokens_whatever_the_policy() {
        assert_eq!(
            Lease::provisional(ms(7)),
            Lease {
                snapshot_at: ms(7),
                starts: 2,
                cost: 2.0
            }
        );
    }

    #[test]
    fn a_provisional_ledger_answers_as_the_table_says() {
        // (case, ledger, cost) -> (covers, covers a retry, wants a renewal with nobody
        // waiting, wants one for a waiting admission of `cost`)
        let fresh = LeaseLedger::provisional(ms(0));
        let used = |grants: u32| {
            let mut l = fresh.clone();
            (0..grants).for_each(|_| l.charge(1.0));
            l
        };
        let (used_once, used_twice) = (used(1), used(2));
        let first_in_flight = {
            let mut l = fresh.clone();
            l.begin(lease(4, 4.0));
            l
        };
        let first_stored = {
            let mut l = fresh.clone();
            let t = l.begin(lease(4, 4.0));
            l.stored(t);
            l
        };
        let table = [
            (
                "a fresh key's first grant",
                &fresh,
                1.0,
                (true, false, false, true),
            ),
            (
                "a first grant of two tokens",
                &fresh,
                2.0,
                (true, false, false, true),
            ),
            (
                "a first grant above two tokens",
                &fresh,
                3.0,
                (false, false, false, true),
            ),
            (
                "a second grant before any record",
                &used_once,
                1.0,
                (true, false, false, true),
            ),
            (
                "a second grant above the token the first left",
                &used_once,
                2.0,
                (false, false, false, true),
            ),
            (
                "a third grant before any record",
                &used_twice,
                1.0,
                (false, false, false, true),
            ),
            (
                "a grant while the first record is in flight",
                &first_in_flight,
                1.0,
                (true, false, false, false),
            ),
            (
                "after the first record is stored",
                &first_stored,
                1.0,
                (true, true, false, false),
            ),
        ];
        for (case, l, cost, (covers, covers_retry, renew_idle, renew_waiting)) in table {
            assert_eq!(l.covers(cost), covers, "{case}: covers");
            assert_eq!(l.covers_retry(cost), covers_retry, "{case}: covers a retry");
            assert_eq!(l.wants_renewal(None), renew_idle, "{case}: renews unasked");
            assert_eq!(
                l.wants_renewal(Some(cost)),
                renew_waiting,
                "{case}: renews for a waiter"
            );
        }
    }

    #[test]
    fn grants_on_a_provisional_lease_with_its_first_record_in_flight_are_charged_to_both() {
        let mut l = LeaseLedger::provisional(ms(0));
        let t = l.begin(lease(6, 6.0));
        l.charge(1.0);
        assert!(l.covers(1.0), "the provisional lease has a second start");
        l.charge(1.0);
        assert!(
            !l.covers(1.0),
            "the provisional lease is used up until the record lands"
        );
        assert!(l.is_provisional());
        assert!(l.stored(t));
        assert!(!l.is_provisional(), "only the first lease is provisional");
        assert_eq!(
            l.remaining(),
            (4, 4.0),
            "the record keeps what it was charged"
        );
        assert!(!l.wants_renewal(None));
        l.charge(1.0);
        assert!(
            l.wants_renewal(None),
            "half used: renewed as any stored lease"
        );
    }

    #[test]
    fn restore_charges_the_lease_at_now() {
        let policy = Policy::new(10.0, 4.0, 1, 0).unwrap();
        let shape = WindowShape::for_rate(10.0);
        let mut window = RollingWindow::default();
        for t in [100, 200, 300] {
            window.record(shape, ms(t));
        }
        let bucket = TokenBucket::with_tokens(3.0, ms(300));
        let l = Lease {
            snapshot_at: ms(300),
            starts: 2,
            cost: 2.0,
        };
        let (bucket, mut window) = restore(&l, &policy, bucket, window, ms(1_900));
        // 3 + (10/32)·1.6 = 3.5 tokens, minus the leased 2.
        assert!((bucket.tokens() - 1.5).abs() < 1e-9, "{}", bucket.tokens());
        assert_eq!(
            window.count(shape, ms(1_900)),
            2,
            "old starts left; the lease's remain"
        );
        assert_eq!(window.count(shape, ms(2_899)), 2);
        assert_eq!(window.count(shape, ms(2_900)), 0);
    }
}
