//! Saving a quota actor's state: when records go to the persister, one at a time.
//!
//! Serving the FIFO queues (`super`) only asks for saves; this file decides whether a
//! save starts now, waits behind the record in flight, or is already covered, and drives
//! the [`PERSIST_INTERVAL`] timer. Each stored record is a lease renewal
//! (`tollgate_quota::lease`), and renewals must be acknowledged in the order they were
//! issued, so at most one record is in flight; a save asked for meanwhile is remembered
//! (however many are asked for, one more record covers them all, since it snapshots the
//! state when it starts) and started when the record in flight is acknowledged.
//!
//! The bookkeeping is [`SaveBook`], a small state machine with no I/O (unit-tested below);
//! the actor methods here apply it.

use actix::fut::wrap_future;
use actix::{ActorFutureExt, AsyncContext, Context};
use tollgate_quota::{Handover, Lease, RenewalTicket};

use super::{QuotaActor, PERSIST_INTERVAL};
use crate::error::{StoreFailure, StoreFailureKind};
use crate::key::CanonicalKey;
use crate::persist::{StoreResult, Stored, Urgency};

/// Where the key's records stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Record {
    /// Nothing is with the persister.
    #[default]
    Idle,
    /// A record is with the persister, not yet acknowledged.
    InFlight,
    /// As `InFlight`, and another save was asked for meanwhile: start it on the
    /// acknowledgement.
    InFlightThenAgain,
}

/// Whether the periodic save is pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Periodic {
    /// No timer runs: the next poll schedules one.
    #[default]
    Unscheduled,
    /// A timer fires within [`PERSIST_INTERVAL`].
    Scheduled,
}

/// What a save request should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    /// Nothing is in flight: encode and hand a record over now (then call
    /// [`SaveBook::started`]).
    Start,
    /// A record is in flight: the save is remembered and runs after its acknowledgement.
    Queued,
}

/// The save bookkeeping of one actor: the record in flight and the periodic timer.
#[derive(Debug, Default)]
pub(super) struct SaveBook {
    record: Record,
    periodic: Periodic,
}

impl SaveBook {
    /// A save is asked for.
    pub(super) fn ask(&mut self) -> Ask {
        match self.record {
            Record::Idle => Ask::Start,
            Record::InFlight | Record::InFlightThenAgain => {
                self.record = Record::InFlightThenAgain;
                Ask::Queued
            }
        }
    }

    /// The record of an [`Ask::Start`] was handed to the persister.
    pub(super) fn started(&mut self) {
        debug_assert_eq!(self.record, Record::Idle, "one record in flight at a time");
        self.record = Record::InFlight;
    }

    /// The record in flight was acknowledged (`stored`) or failed. Returns whether a save
    /// asked for meanwhile should start now: only after a stored record, since a failed
    /// one stops the key's dispatch until the persister's retry stores it and clears
    /// `StoreHealth` (the next poll then saves afresh).
    pub(super) fn answered(&mut self, stored: bool) -> bool {
        let again = self.record == Record::InFlightThenAgain;
        self.record = Record::Idle;
        again && stored
    }

    /// Whether to schedule the periodic timer now (false while one is pending).
    pub(super) fn schedule_periodic(&mut self) -> bool {
        match self.periodic {
            Periodic::Scheduled => false,
            Periodic::Unscheduled => {
                self.periodic = Periodic::Scheduled;
                true
            }
        }
    }

    /// The periodic timer fired.
    pub(super) fn periodic_fired(&mut self) {
        self.periodic = Periodic::Unscheduled;
    }

    /// Nothing is with the persister and no periodic save is pending: the newest record
    /// handed over is acknowledged, and no other is on its way (what retiring asks).
    pub(super) fn quiet(&self) -> bool {
        self.record == Record::Idle && self.periodic == Periodic::Unscheduled
    }
}

/// What asking for a save did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Saving {
    /// Stored and acknowledged already (inline store).
    Stored,
    /// Handed to the writer thread, or queued behind the record in flight.
    InFlight,
    /// Not stored: the key or the store failed.
    Failed,
}

impl QuotaActor {
    /// Store the state within [`PERSIST_INTERVAL`] (a renewal: it also keeps the lease
    /// fresh and persists reservations, penalty and retry allowance).
    pub(super) fn schedule_save(&mut self, ctx: &mut Context<Self>) {
        if !self.saves.schedule_periodic() {
            return;
        }
        ctx.run_later(PERSIST_INTERVAL, |act, ctx| {
            act.saves.periodic_fired();
            if act.save(1.0, Urgency::Gather, ctx) == Saving::Stored {
                act.lease_arrived(ctx);
            }
        });
    }

    /// Store a snapshot of the state with a fresh lease (large enough for `next_cost`), or
    /// note that one more is wanted once the record in flight is acknowledged. `urgency`:
    /// whether anything waits for it (`persist` module docs); an urgent save behind a
    /// record in flight hurries that record's write.
    pub(super) fn save(
        &mut self,
        next_cost: f64,
        urgency: Urgency,
        ctx: &mut Context<Self>,
    ) -> Saving {
        if self.load_failure.is_some() {
            return Saving::Failed; // never overwrite a record we could not read
        }
        if self.saves.ask() == Ask::Queued {
            if urgency == Urgency::Now {
                self.deps.persister.hurry();
            }
            return Saving::InFlight;
        }
        let now = self.deps.clock.now();
        let lease = Lease::for_policy(self.state.policy(), next_cost, now);
        let record = self.state.to_record(Handover::Leased(lease), now);
        let bytes = match serde_json::to_vec(&self.calendar.record(&record)) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.health.fail(encoding_failed(&self.key, &e));
                return Saving::Failed;
            }
        };
        let ticket = self.ledger.begin(lease);
        self.saves.started();
        match self.deps.persister.save(self.key.as_str(), bytes, urgency) {
            Stored::Now(result) => {
                let ok = result.is_ok();
                self.stored(ticket, result, ctx);
                if ok {
                    Saving::Stored
                } else {
                    Saving::Failed
                }
            }
            Stored::Later(ack) => {
                let answered = wrap_future::<_, Self>(ack).map(move |result, act, ctx| {
                    let result = result.unwrap_or_else(|_| {
                        Err(StoreFailure::new(
                            StoreFailureKind::Closed,
                            "the admission state was closed before the record was stored",
                        ))
                    });
                    act.stored(ticket, result, ctx);
                    act.lease_arrived(ctx);
                });
                ctx.spawn(answered);
                Saving::InFlight
            }
        }
    }

    /// A save was answered: serve admissions that waited for its lease (or answer them
    /// with the storage failure). Nothing else waits for a save, and an idle key must stay
    /// idle (so it can be evicted), so only then.
    pub(super) fn lease_arrived(&mut self, ctx: &mut Context<Self>) {
        if !self.admitting.is_empty() {
            self.poll(ctx);
        }
    }

    /// The record of `ticket` is durable (or failed, which stops dispatch).
    fn stored(&mut self, ticket: RenewalTicket, result: StoreResult, ctx: &mut Context<Self>) {
        let again = self.saves.answered(result.is_ok());
        match result {
            Ok(()) => {
                self.ledger.stored(ticket);
                if again {
                    // Whoever waits for it hurries it from `poll` (`lease_arrived`).
                    self.save(1.0, Urgency::Gather, ctx);
                }
            }
            Err(failure) => self.health.fail(failure.of_key(self.key.clone())),
        }
    }

    /// Hand a graceful record to the persister: the actor grants nothing after it under
    /// the leases it holds. Returns when it is durable, or `None` if nothing was handed
    /// over (the key's record could not be read, or the state could not be encoded).
    pub(super) fn save_graceful(&self) -> Option<Stored> {
        if self.load_failure.is_some() {
            return None;
        }
        let now = self.deps.clock.now();
        let record = self.state.to_record(Handover::Graceful, now);
        match serde_json::to_vec(&self.calendar.record(&record)) {
            // Nobody waits for it at shutdown (which flushes); a retiring actor stops only
            // on its acknowledgement (`retire`).
            Ok(bytes) => Some(
                self.deps
                    .persister
                    .save(self.key.as_str(), bytes, Urgency::Gather),
            ),
            Err(e) => {
                self.health.fail(encoding_failed(&self.key, &e));
                None
            }
        }
    }
}

/// `key`'s state could not be encoded as a record.
fn encoding_failed(key: &CanonicalKey, e: &serde_json::Error) -> StoreFailure {
    StoreFailure::new(
        StoreFailureKind::Encode,
        format!("encoding quota state failed: {e}"),
    )
    .of_key(key.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_asked_for_when_nothing_is_in_flight_starts_at_once() {
        let mut book = SaveBook::default();
        assert_eq!(book.ask(), Ask::Start);
        book.started();
        assert_eq!(book.record, Record::InFlight);
    }

    #[test]
    fn a_save_that_never_started_leaves_the_next_one_free_to_start() {
        // Encoding failed between `ask` and `started`: nothing is in flight.
        let mut book = SaveBook::default();
        assert_eq!(book.ask(), Ask::Start);
        assert_eq!(book.ask(), Ask::Start);
    }

    #[test]
    fn a_save_asked_for_while_a_record_is_in_flight_waits_for_its_acknowledgement() {
        let mut book = SaveBook::default();
        book.ask();
        book.started();
        assert_eq!(book.ask(), Ask::Queued);
        assert!(
            book.answered(true),
            "the queued save starts on the acknowledgement"
        );
        assert_eq!(book.ask(), Ask::Start);
    }

    #[test]
    fn many_saves_asked_for_during_one_flight_make_one_more_record() {
        let mut book = SaveBook::default();
        book.ask();
        book.started();
        for _ in 0..5 {
            assert_eq!(book.ask(), Ask::Queued);
        }
        assert!(book.answered(true));
        book.ask();
        book.started();
        assert!(
            !book.answered(true),
            "nothing was asked during the second flight"
        );
    }

    #[test]
    fn an_acknowledged_record_with_nothing_queued_asks_for_no_further_save() {
        let mut book = SaveBook::default();
        book.ask();
        book.started();
        assert!(!book.answered(true));
        assert_eq!(book.record, Record::Idle);
    }

    #[test]
    fn a_failed_record_drops_the_save_queued_behind_it() {
        let mut book = SaveBook::default();
        book.ask();
        book.started();
        book.ask();
        assert!(!book.answered(false));
        assert_eq!(book.record, Record::Idle);
    }

    #[test]
    fn the_periodic_save_is_scheduled_once_until_its_timer_fires() {
        let mut book = SaveBook::default();
        assert!(book.schedule_periodic());
        assert!(!book.schedule_periodic());
        book.periodic_fired();
        assert!(book.schedule_periodic());
    }

    #[test]
    fn a_book_is_quiet_only_with_no_record_in_flight_and_no_periodic_save_pending() {
        let mut book = SaveBook::default();
        assert!(book.quiet());
        book.ask();
        book.started();
        assert!(!book.quiet(), "a record in flight");
        book.answered(true);
        assert!(book.quiet());
        book.schedule_periodic();
        assert!(!book.quiet(), "a periodic save pending");
        book.periodic_fired();
        assert!(book.quiet());
    }

    #[test]
    fn the_periodic_timer_is_independent_of_the_record_in_flight() {
        let mut book = SaveBook::default();
        book.ask();
        book.started();
        assert!(book.schedule_periodic());
        assert!(!book.answered(true));
        assert!(
            !book.schedule_periodic(),
            "still pending after the acknowledgement"
        );
    }
}
