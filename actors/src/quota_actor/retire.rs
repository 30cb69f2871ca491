//! Retiring a quota actor: the registry's [`Retire`], and when an idle actor may stop.
//!
//! # Why retire within seconds
//! A live actor costs a few kilobytes (its actix task, mailbox and context, its queues'
//! room, its registry entry and cached address: docs/architecture.md, "Memory per key").
//! An organization scan touches about 89 keys per account (1,000 accounts: ~89,000) and
//! is done with each of them within seconds, so actors kept for minutes after their last
//! use would hold hundreds of megabytes. An actor whose whole state is in its record
//! loses nothing by stopping: the next use of the key restores that record exactly. So
//! such an actor retires after `evict_after` idle (by default a few seconds,
//! [`DEFAULT_EVICT_AFTER`](crate::registry::DEFAULT_EVICT_AFTER)).
//!
//! # Nothing is forgotten ([`decide`])
//! An actor retires only when it is idle (no waiter, no held reservation) and quiet (no
//! record in flight, no periodic save pending), and it stops only once its *graceful*
//! record is acknowledged durable. That record holds everything the key knows: policy,
//! penalty and cooldown, Retry-After pause, retry allowance, reservations' next id, bucket
//! and window exactly, the calendar allowance; the next actor restores it exactly
//! (`QuotaState::from_record`: a graceful record carries no lease, so none is charged).
//! A key used while its graceful record is in flight stays (the use cancels the
//! retirement), and the record ends the leases it held: nothing is granted under them
//! after it, so a grant waits for a new leased record, stored after the graceful one.
//!
//! Two kinds of state live in no record, and keep their actor longer
//! ([`UNSTORED_EVICT_AFTER`], then the actor stops as it always did, storing a graceful
//! record without waiting for it): a fleet key's block, reports and drawn retry units
//! (the fleet table is their home, written with the next block request), and any key
//! while the store refuses writes (the persister keeps retrying what it was handed).
//!
//! # A crash after retiring
//! A successor restores the newest record on disk. If the graceful record is durable, the
//! retired actor granted nothing after it: restoring it exactly is what the actor would
//! have done. If the process dies before it is durable, the actor has not stopped yet, and
//! the newest durable record is a leased one whose lease covers every grant after its
//! snapshot (the actor stops granting under it once the graceful record is handed over):
//! the successor charges that lease, as after any crash.
//!
//! # What it cannot keep
//! Feedback, pauses and releases are sent without waiting for an answer. Whoever holds a
//! slot on the key keeps its actor busy until its release, which it sends after its
//! reports, so those always arrive. A report from someone holding no slot (feedback on a
//! second key of a call) sent in the microseconds in which the actor stops (after its
//! last read of its mailbox, before senders see the mailbox closed) is dropped with the
//! mailbox, as with the 5-minute eviction before; a later one sees the actor gone and
//! goes to the key's next actor. A lost report costs one penalty step's signal, never a
//! bound: the bounds are the bucket's and the window's, which are in the graceful record.
//! Waiting requests are not lost: a reservation or admission dropped with the mailbox is
//! asked again of the key's next actor (`LocalAdmission::ask`).

use std::time::Duration;

use actix::fut::wrap_future;
use actix::{ActorContext, ActorFutureExt, ActorResponse, Context, Handler, Message};
use tollgate_quota::LeaseLedger;

use super::save::Ask;
use super::QuotaActor;
use crate::error::{StoreFailure, StoreFailureKind};
use crate::persist::{StoreResult, Stored, Urgency};
use crate::AdmissionError;

/// The shortest idle time before an actor holding state that no record holds (a fleet
/// key's block and reports, or any key while the store refuses writes) retires: the
/// eviction time every actor had before retiring became exact.
pub const UNSTORED_EVICT_AFTER: Duration = Duration::from_secs(300);

/// Ask the actor to stop. Answers whether it stopped.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "bool")]
pub enum Retire {
    /// Runtime shutdown: stop now, answering every waiter `Stopped`, after handing a
    /// graceful record to the persister (the shutdown flushes it).
    Now,
    /// Stop if idle for `evict_after` and nothing would be lost ([`decide`]), once the
    /// graceful record is durable.
    WhenIdle {
        /// Idle time before an actor whose whole state is in its record retires.
        evict_after: Duration,
    },
}

/// Where the actor stands in retiring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Phase {
    /// Serving (and not retiring).
    #[default]
    Serving,
    /// Its graceful record is with the persister; any use of the key cancels retiring.
    Retiring,
}

/// What an actor knows about itself when asked to retire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Facts {
    /// Time since it last served anything.
    pub(super) idle: Duration,
    /// Waiters queued or slots held: someone will talk to it again.
    pub(super) busy: bool,
    /// Its graceful record is with the persister already.
    pub(super) retiring: bool,
    /// A record is in flight, or the periodic save is pending.
    pub(super) saving: bool,
    /// Its record could not be read: it never writes one, so there is nothing to store.
    pub(super) load_failed: bool,
    /// Part of its state is in no record (fleet mode), or the store refuses writes.
    pub(super) unstored: bool,
}

/// How an actor asked to retire answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retirement {
    /// Keep serving.
    Stay,
    /// Store a graceful record and stop once it is durable.
    WhenStored,
    /// Stop now, handing a graceful record over without waiting for it.
    Now,
}

/// Whether an actor asked to retire after `evict_after` idle does (see the module docs).
pub(super) fn decide(facts: Facts, evict_after: Duration) -> Retirement {
    if facts.busy || facts.retiring || facts.idle < evict_after {
        return Retirement::Stay;
    }
    if facts.load_failed {
        return Retirement::Now;
    }
    if facts.unstored {
        return match facts.idle >= evict_after.max(UNSTORED_EVICT_AFTER) {
            true => Retirement::Now,
            false => Retirement::Stay,
        };
    }
    match facts.saving {
        true => Retirement::Stay,
        false => Retirement::WhenStored,
    }
}

impl QuotaActor {
    fn facts(&self) -> Facts {
        let now = self.deps.clock.now();
        Facts {
            idle: now.saturating_since(self.last_touched),
            busy: !self.is_idle(),
            retiring: self.phase == Phase::Retiring,
            saving: !self.saves.quiet(),
            load_failed: self.load_failure.is_some(),
            unstored: self.fleet.is_some() || self.health.failure().is_some(),
        }
    }

    /// Stop now: waiters are answered `Stopped`, and the graceful record is handed over.
    fn stop_now(&mut self, ctx: &mut Context<Self>) {
        self.fail_all(|| AdmissionError::Stopped);
        // A client that exited while this coordinator retires never had its release read:
        // its slot lapses here, as the successor would reap it on load.
        let now = self.deps.clock.now();
        let pid_alive = self.deps.pid_alive.clone();
        self.state.reap(now, &|pid| pid_alive(pid));
        // Nobody waits for it: shutdown flushes, and the key's next actor reads it from
        // the persister's queue or the store.
        drop(self.save_graceful());
        ctx.stop();
    }

    /// Hand a graceful record over, and stop once it is durable unless the key is used
    /// meanwhile. The record ends the leases: nothing is granted under them after it.
    fn retire_when_stored(&mut self, ctx: &mut Context<Self>) -> ActorResponse<Self, bool> {
        let Some(stored) = self.save_graceful() else {
            return ActorResponse::reply(false);
        };
        // A fresh ledger: nothing stored to grant under. No renewal is in flight (retiring
        // waits for quiet saves), so no late acknowledgement can be taken for a new ticket.
        self.ledger = LeaseLedger::new();
        // The graceful record is the one in flight: a save asked for meanwhile follows it.
        let asked = self.saves.ask();
        debug_assert_eq!(
            asked,
            Ask::Start,
            "an actor retires only when its saves are quiet"
        );
        self.saves.started();
        self.phase = Phase::Retiring;
        match stored {
            Stored::Now(result) => ActorResponse::reply(self.graceful_answered(result, ctx)),
            Stored::Later(ack) => {
                ActorResponse::r#async(wrap_future::<_, Self>(ack).map(|result, act, ctx| {
                    let result = result.unwrap_or_else(|_| {
                        Err(StoreFailure::new(
                            StoreFailureKind::Closed,
                            "the admission state was closed before the record was stored",
                        ))
                    });
                    act.graceful_answered(result, ctx)
                }))
            }
        }
    }

    /// The graceful record was answered: stop if it is durable and the key was not used
    /// meanwhile (answering true), else serve on.
    fn graceful_answered(&mut self, result: StoreResult, ctx: &mut Context<Self>) -> bool {
        let again = self.saves.answered(result.is_ok());
        if result.is_ok() && !again && self.phase == Phase::Retiring {
            ctx.stop();
            return true;
        }
        self.phase = Phase::Serving;
        if let Err(failure) = result {
            self.health.fail(failure.of_key(self.key.clone()));
        }
        if again {
            self.save(1.0, Urgency::Gather, ctx);
        }
        self.lease_arrived(ctx);
        false
    }
}

// The answer is sent as the handler returns, or as its future completes: never from a
// future spawned after `ctx.stop()`, which a stopping actor would not poll.
impl Handler<Retire> for QuotaActor {
    type Result = ActorResponse<Self, bool>;
    fn handle(&mut self, msg: Retire, ctx: &mut Context<Self>) -> Self::Result {
        let retirement = match msg {
            Retire::Now => Retirement::Now,
            Retire::WhenIdle { evict_after } => decide(self.facts(), evict_after),
        };
        match retirement {
            Retirement::Stay => ActorResponse::reply(false),
            Retirement::Now => {
                self.stop_now(ctx);
                ActorResponse::reply(true)
            }
            Retirement::WhenStored => self.retire_when_stored(ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVICT: Duration = Duration::from_secs(5);

    fn idle_for(secs: u64) -> Facts {
        Facts {
            idle: Duration::from_secs(secs),
            busy: false,
            retiring: false,
            saving: false,
            load_failed: false,
            unstored: false,
        }
    }

    #[test]
    fn an_idle_actor_retires_only_when_nothing_it_knows_would_be_lost() {
        use Retirement::{Now, Stay, WhenStored};
        let unstored_limit = UNSTORED_EVICT_AFTER.as_secs();
        #[rustfmt::skip]
        let table = [
            ("idle long enough, all stored: store a graceful record, then stop", idle_for(5), WhenStored),
            ("idle, but not long enough", idle_for(4), Stay),
            ("a waiter or a held slot", Facts { busy: true, ..idle_for(60) }, Stay),
            ("its graceful record is in flight already", Facts { retiring: true, ..idle_for(60) }, Stay),
            ("a record in flight or a periodic save pending", Facts { saving: true, ..idle_for(60) }, Stay),
            ("an unreadable record: nothing to store, stop", Facts { load_failed: true, ..idle_for(5) }, Now),
            ("fleet state or a failing store: not before the long limit", Facts { unstored: true, ..idle_for(unstored_limit - 1) }, Stay),
            ("fleet state or a failing store past the long limit", Facts { unstored: true, ..idle_for(unstored_limit) }, Now),
            ("busy beats everything", Facts { busy: true, load_failed: true, unstored: true, ..idle_for(unstored_limit) }, Stay),
        ];
        for (case, facts, want) in table {
            assert_eq!(decide(facts, EVICT), want, "{case}");
        }
    }

    #[test]
    fn a_longer_evict_after_also_holds_back_the_unstored_limit() {
        let hour = Duration::from_secs(3_600);
        let facts = Facts {
            unstored: true,
            ..idle_for(UNSTORED_EVICT_AFTER.as_secs())
        };
        assert_eq!(decide(facts, hour), Retirement::Stay);
        let facts = Facts {
            unstored: true,
            ..idle_for(3_600)
        };
        assert_eq!(decide(facts, hour), Retirement::Now);
    }
}
