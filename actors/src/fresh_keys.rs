//! Keys without a record: whether a new key's first grant waits for its first record or
//! goes at once under a provisional first lease, and what a crashed predecessor may have
//! left unrecorded.
//!
//! # Why not write every new key's first record ahead?
//! The write-ahead lease rule (`tollgate_quota::lease`) made a brand-new key's first grant
//! wait until its first record was written, flushed and acknowledged. An organization scan
//! touches thousands of keys, most of them once, so that round trip (and the early renewal
//! and periodic save after it: three records per key in its first 100 ms) was the
//! coordinator's largest cost per call. Instead, a coordinator of on-disk state
//! ([`crate::Coordinator`]) lets a key that has no record grant at once, under a
//! provisional lease of two starts and two tokens (`tollgate_quota::lease`: most keys of
//! a scan are used twice in quick succession, a listing and a call on what it found); the
//! key's first record goes with its next periodic save, in the writer's next batch, and
//! every later grant waits for a stored lease as before.
//!
//! # Why that keeps the write-ahead rule
//! The rule is still written ahead, once for every key: the store's `running` marker is
//! written and flushed when a coordinator opens it, before any grant, so a successor
//! opening a store whose previous coordinator did not stop cleanly knows that keys
//! without a record may each hold unrecorded provisional grants (two starts, two tokens at
//! most), made before the successor's own start. It stores that instant
//! ([`FreshKeys::after_open`], `unrecorded_until`, kept across clean shutdowns:
//! [`settle`]) and charges every key it finds without a record a whole provisional lease
//! at that instant (`QuotaState::unrecorded`): what the dead coordinator may have granted
//! on it, so nothing is over-admitted and no grant forgotten. The argument is in
//! `tollgate_quota::unrecorded` and docs/architecture.md ("New keys: the first grant
//! before the first record").
//!
//! Keys that keep the old path: keys with a record (restored from it), keys the charge
//! still weighs on, keys with a calendar (an allowance counts grants in its record), keys
//! in fleet mode, and every key of a runtime not started as a [`crate::Coordinator`]
//! (in-memory state, whose inline writes cost no round trip and survive no crash).

use tollgate_quota::{FirstGrant, Policy, QuotaState, Timestamp};
use tollgate_storage::{OpenedStore, PreviousShutdown, StorageError};

/// How a runtime starts keys that have no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreshKeys {
    /// How such a key's first grant may go, when nothing weighs on it.
    pub first_grant: FirstGrant,
    /// An instant at or after every grant an earlier coordinator of the store may have made
    /// on a key that has no record (`None`: none may have).
    pub unrecorded_until: Option<Timestamp>,
}

impl FreshKeys {
    /// Every key's first grant waits for its first stored record, and no earlier
    /// coordinator granted otherwise.
    pub const fn write_ahead() -> Self {
        FreshKeys {
            first_grant: FirstGrant::WriteAhead,
            unrecorded_until: None,
        }
    }

    /// A coordinator's, having opened its store at `now`: provisional first grants, and
    /// the instant its predecessors' unrecorded grants are charged at: `stored` (what the
    /// store kept), or `now` after an unclean shutdown (the dead coordinator granted
    /// before this one could open its store), whichever is later. Store the result's
    /// `unrecorded_until` before any grant when it differs from `stored`.
    pub fn after_open(
        previous: PreviousShutdown,
        stored: Option<Timestamp>,
        now: Timestamp,
    ) -> Self {
        let unrecorded_until = match previous {
            PreviousShutdown::Unclean => Some(stored.map_or(now, |s| s.max(now))),
            PreviousShutdown::Clean | PreviousShutdown::Fresh => stored,
        };
        FreshKeys {
            first_grant: FirstGrant::Provisional,
            unrecorded_until,
        }
    }

    /// How a key without a record starts at `now` under `policy`, and how its first grant
    /// may go (the actor still keeps keys with a calendar or in fleet mode on the
    /// write-ahead path).
    pub(crate) fn start(&self, policy: Policy, now: Timestamp) -> (QuotaState, FirstGrant) {
        let (state, first) = QuotaState::unrecorded(policy, self.unrecorded_until, now);
        match self.first_grant {
            FirstGrant::Provisional => (state, first),
            FirstGrant::WriteAhead => (state, FirstGrant::WriteAhead),
        }
    }
}

/// The fresh keys of a coordinator that opened `opened` at `now`
/// ([`FreshKeys::after_open`]), with its `unrecorded_until` stored and flushed if it
/// changed. Call it before any grant, and before anything marks the store cleanly shut
/// down (`read_offline` does), which would hide the crash from the next coordinator.
pub(crate) fn settle(opened: &OpenedStore, now: Timestamp) -> Result<FreshKeys, StorageError> {
    let stored = opened
        .store
        .unrecorded_grants_until()?
        .map(Timestamp::from_micros);
    let fresh = FreshKeys::after_open(opened.previous_shutdown, stored, now);
    if let Some(until) = fresh.unrecorded_until.filter(|u| Some(*u) != stored) {
        opened
            .store
            .set_unrecorded_grants_until(until.as_micros())?;
    }
    Ok(fresh)
}

impl Default for FreshKeys {
    fn default() -> Self {
        FreshKeys::write_ahead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64) -> Timestamp {
        Timestamp::from_millis(v * 1_000)
    }

    #[test]
    fn a_coordinator_charges_unrecorded_grants_as_the_table_says() {
        use PreviousShutdown::{Clean, Fresh, Unclean};
        // (case, previous shutdown, stored instant, now) -> unrecorded until
        let table = [
            ("a new store", Fresh, None, s(100), None),
            (
                "a clean hand-over of a store never crashed",
                Clean,
                None,
                s(100),
                None,
            ),
            (
                "a crash: charged at this start",
                Unclean,
                None,
                s(100),
                Some(s(100)),
            ),
            (
                "a crash after an earlier one: the later instant",
                Unclean,
                Some(s(40)),
                s(100),
                Some(s(100)),
            ),
            (
                "a crash with a clock behind the stored instant",
                Unclean,
                Some(s(120)),
                s(100),
                Some(s(120)),
            ),
            (
                "a clean hand-over keeps an earlier crash's instant",
                Clean,
                Some(s(40)),
                s(100),
                Some(s(40)),
            ),
        ];
        for (case, previous, stored, now, until) in table {
            let fresh = FreshKeys::after_open(previous, stored, now);
            assert_eq!(fresh.unrecorded_until, until, "{case}");
            assert_eq!(fresh.first_grant, FirstGrant::Provisional, "{case}");
        }
    }

    #[test]
    fn a_runtime_that_is_not_a_coordinator_writes_every_first_record_ahead() {
        let policy = Policy::new(20.0, 5.0, 10, 3).unwrap();
        let (_, first) = FreshKeys::write_ahead().start(policy, s(5));
        assert_eq!(first, FirstGrant::WriteAhead);
        let coordinator = FreshKeys::after_open(PreviousShutdown::Fresh, None, s(5));
        assert_eq!(coordinator.start(policy, s(5)).1, FirstGrant::Provisional);
        let after_a_crash = FreshKeys::after_open(PreviousShutdown::Unclean, None, s(5));
        let (state, first) = after_a_crash.start(policy, s(5));
        assert_eq!(first, FirstGrant::WriteAhead, "the charge weighs on it");
        assert_eq!(
            state.snapshot(s(5)).window_starts,
            2,
            "two provisional starts"
        );
        assert_eq!(
            state.snapshot(s(5)).tokens,
            3.0,
            "two tokens off a burst of 5"
        );
    }
}
