//! `QuotaActor`: one per canonical quota key, owning that key's `QuotaState`.
//!
//! It serves `Reserve`, `Admit`, `Feedback`, `Release`, `Cancel` and `Status` in FIFO
//! order, wakes itself at the next instant the state says a waiter can pass (or a
//! deadline falls), and hands its state to the persister off-thread. Storage failures
//! stop dispatch: every waiter is answered with the storage error rather than admitted
//! without coordination.
//!
//! Grants are write-ahead leased (`tollgate_quota::lease`): the actor grants only what the
//! lease of its newest *stored* record covers, charging each grant to it and to a renewal
//! in flight. It stores a renewal (a snapshot of its state plus a fresh lease) when it has
//! none, when half a lease is used, when the head waiter does not fit, and every
//! [`PERSIST_INTERVAL`] while busy (which also persists reservations, penalty and retry
//! allowance); one record at a time, so acknowledgements arrive in order. A coordinator
//! killed at any instant thus leaves a record whose lease bounds what it granted after
//! it, and its successor charges that lease instead of assuming a full window.
//!
//! A key's first grants are the exception: a key with no record, on a coordinator that
//! announced it write-ahead for the whole store (`crate::fresh_keys`), starts with a
//! *provisional* first lease ([`QuotaActor::with_first_grant`]: two starts, two tokens in
//! all, no retry) and grants its first two admissions as its bucket and window allow,
//! before anything of it is stored. Its first record goes with the periodic save (or at
//! once if an admission does not fit: a third, a larger one, or a retry), in the
//! persister's next batch, and every later grant needs a stored lease as above. A
//! coordinator killed before that record lands leaves no record of the key, and its
//! successor charges every key without a record the whole provisional lease
//! (`tollgate_quota::unrecorded`), so the bound is the same.
//!
//! What a SIGKILL can still cost (never over-admission; each bounded and left as is):
//! - a reservation granted but not yet answered when the coordinator died is in the stored
//!   state, while its client takes a fresh slot from the successor (`ReservationGuard`):
//!   it holds a second slot until its owner exits (reaped) or the reservation expires;
//! - feedback re-sent after a failover may be counted twice: a repeated throttle is the
//!   same failure event (admitted before the latest failure) and deepens nothing, but a
//!   repeated success may take one more step off the penalty and refund one more retry
//!   unit (up to capacity).
//!
//! Retry units spent after the newest record's snapshot are charged on restore (as many as
//! the lease has starts, a conservative count), and a failure that deepens the penalty is
//! stored at once, so neither the retry allowance nor the penalty is looser after a crash
//! (short of a failure reported within one record write of the kill).
//!
//! A key with a schedule or a calendar allowance carries a `Calendar` (`calendar`): the
//! policy in force with its valid-until stamp, or the allowance counter stored with the
//! key's record. Other keys pay one timestamp comparison for it per poll (and a branch on
//! the calendar's kind per admission).
//!
//! This file polls the FIFO queues and serves reservations; `admit` serves admissions,
//! each through `gate`, the admission gate chain (its reservation, the calendar
//! allowance, the lease, the fleet block: a pure function with a table of cases) before
//! the quota state; `save` holds the save bookkeeping (when records go to the persister,
//! one at a time), `handlers` the message handlers, `retire` when an idle actor stops
//! (once its graceful record is durable), `calendar` the schedule and allowance, and
//! `fleet` the key's fleet block.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, SpawnHandle};
use tollgate_quota::fleet::{Declaration, Declared};
use tollgate_quota::{
    Clock, Exit, FirstGrant, LeaseLedger, QuotaState, ReservationId, Step, Timestamp, WaitQueue,
};

use crate::error::{StoreFailure, StoreFailureKind};
use crate::fleet::FleetSetup;
use crate::fresh_keys::FreshKeys;
use crate::key::CanonicalKey;
use crate::messages::{Admit, KeyStatus, Reserve};
use crate::persist::{Persister, StoreHealth, Urgency};
use crate::schedules::Schedules;
use crate::AdmissionError;

mod admit;
mod calendar;
mod fleet;
mod gate;
mod handlers;
mod retire;
mod save;

use calendar::Calendar;
use fleet::FleetKey;
use retire::Phase;
pub use retire::{Retire, UNSTORED_EVICT_AFTER};
use save::{SaveBook, Saving};

/// How often a busy key's state is stored (as a lease renewal) at most, besides the
/// renewals its grants ask for.
pub const PERSIST_INTERVAL: Duration = Duration::from_millis(100);

/// Whether a process is still alive (injected so tests can simulate deaths).
pub type PidAlive = Arc<dyn Fn(u32) -> bool + Send + Sync>;

/// What every quota actor needs from its surroundings.
#[derive(Clone)]
pub struct ActorDeps {
    /// The clock (real or simulated).
    pub clock: Arc<dyn Clock>,
    /// Where records go.
    pub persister: Persister,
    /// Process liveness, for reaping reservations.
    pub pid_alive: PidAlive,
    /// The keys' schedules and allowances, and the clock's anchor on the calendar.
    pub schedules: Schedules,
    /// Fleet mode (`None`: this host's quota is its own).
    pub fleet: Option<FleetSetup>,
    /// How keys without a record start.
    pub fresh_keys: FreshKeys,
}

impl std::fmt::Debug for ActorDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActorDeps")
            .field("persister", &self.persister)
            .finish()
    }
}

/// The actor of one key.
pub struct QuotaActor {
    key: CanonicalKey,
    state: QuotaState,
    reserving: WaitQueue<Reserve>,
    admitting: WaitQueue<Admit>,
    next_waiter: u64,
    /// Shared by every actor (one pointer each, not a copy of every field).
    deps: Arc<ActorDeps>,
    health: Arc<StoreHealth>,
    /// Set when the key's record could not be loaded: the key fails closed.
    load_failure: Option<String>,
    wake: Option<(Timestamp, SpawnHandle)>,
    /// Leases of the stored record and of the renewal in flight.
    ledger: LeaseLedger,
    /// Whether a record is in flight, another is wanted, the periodic save is scheduled.
    saves: SaveBook,
    last_touched: Timestamp,
    /// Whether its graceful record is on its way (`retire`).
    phase: Phase,
    /// The key's schedule or allowance (`Calendar::plain` for most keys).
    calendar: Calendar,
    /// Fleet mode's block and mode for this key (`None` without fleet mode). Boxed: it is
    /// over a kilobyte, which every actor would carry inline without fleet mode.
    fleet: Option<Box<FleetKey>>,
}

impl QuotaActor {
    /// An actor for `key` starting from `state`.
    pub fn new(
        key: CanonicalKey,
        state: QuotaState,
        deps: Arc<ActorDeps>,
        load_failure: Option<String>,
    ) -> Self {
        let now = deps.clock.now();
        let fleet = deps
            .fleet
            .clone()
            .map(|setup| Box::new(FleetKey::new(setup)));
        QuotaActor {
            key,
            state,
            reserving: WaitQueue::default(),
            admitting: WaitQueue::default(),
            next_waiter: 0,
            health: deps.persister.health(),
            deps,
            load_failure,
            wake: None,
            ledger: LeaseLedger::new(),
            saves: SaveBook::default(),
            last_touched: now,
            phase: Phase::Serving,
            calendar: Calendar::plain(),
            fleet,
        }
    }

    /// Give the actor its key's schedule or allowance (restored from `stored`, the key's
    /// record, if any), when `deps.schedules` has one for the key.
    pub fn with_calendar(mut self, stored: Option<&[u8]>) -> Self {
        if let Some((base, read_time)) = self.deps.schedules.for_key(&self.key) {
            let (anchor, now) = (self.deps.schedules.anchor(), self.deps.clock.now());
            if let Some(f) = self.fleet.as_mut() {
                // Fleet mode: the calendar goes on the key's item too (issue 23), where
                // the strictest of the hosts' declarations is in force for every host.
                f.declare(Declared {
                    declaration: Declaration::new(base, Some(read_time.clone())),
                    anchor,
                });
            }
            self.calendar = Calendar::load(anchor, base, read_time, stored, now);
        }
        self
    }

    /// Let a key without a record make its first grants under a provisional lease, when
    /// `first` says it may (`crate::fresh_keys`) and the key has no calendar (an
    /// allowance counts its grants in the record) and is not in fleet mode. Call after
    /// [`Self::with_calendar`].
    pub fn with_first_grant(mut self, first: FirstGrant) -> Self {
        let plain = self.calendar.is_plain() && self.fleet.is_none();
        if first == FirstGrant::Provisional && plain && self.load_failure.is_none() {
            self.ledger = LeaseLedger::provisional(self.deps.clock.now());
        }
        self
    }

    fn failure(&self) -> Option<StoreFailure> {
        let unreadable = self.load_failure.clone().map(|reason| {
            StoreFailure::keyed(StoreFailureKind::Unreadable, self.key.clone(), reason)
        });
        unreadable.or_else(|| self.health.failure())
    }

    fn waiter_id(&mut self) -> u64 {
        self.next_waiter += 1;
        self.next_waiter
    }

    /// Answer every waiter that can be answered now, renew the lease if due, and schedule
    /// the next wake-up.
    fn poll(&mut self, ctx: &mut Context<Self>) {
        let now = self.deps.clock.now();
        self.poll_at(now, ctx);
    }

    /// [`Self::poll`] at `now`, an instant just read from the actor's clock.
    fn poll_at(&mut self, now: Timestamp, ctx: &mut Context<Self>) {
        self.last_touched = now;
        // In use: a retirement under way is cancelled (its record stays valid).
        self.phase = Phase::Serving;
        let mut next;
        loop {
            if let Some(reason) = self.failure() {
                self.fail_all(|| AdmissionError::Storage(reason.clone()));
                return;
            }
            let (wake, blocked_on_lease) = self.serve(now);
            next = wake;
            if !self.ledger.wants_renewal(blocked_on_lease) {
                break;
            }
            let urgency = match blocked_on_lease {
                Some(_) => Urgency::Now,
                None => Urgency::Gather,
            };
            let saved = self.save(blocked_on_lease.unwrap_or(1.0), urgency, ctx);
            // An inline store has answered already: serve whoever waited for it.
            if !(saved == Saving::Stored && blocked_on_lease.is_some()) {
                break;
            }
        }
        if let Some(at) = self.fleet_poll(now, ctx) {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        self.schedule_wake(next, now, ctx);
        self.schedule_save(ctx);
    }

    /// Run both queues once. Returns the next instant worth waking at, and the cost of the
    /// head admission if it waits for a lease.
    fn serve(&mut self, now: Timestamp) -> (Option<Timestamp>, Option<f64>) {
        if self.calendar.due(now) {
            self.calendar.refresh(&mut self.state, now);
        }
        if let Some(f) = self.fleet.as_mut() {
            f.blocked = None;
            f.asked = false;
        }
        let reserve_wake = self.serve_reservations(now);
        let (admit_wake, blocked_on_lease) = self.serve_admissions(now);
        let next = match (reserve_wake, admit_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (self.calendar.wake(next), blocked_on_lease)
    }

    /// Run the reservation queue once: grant whoever fits (reaping dead owners' slots
    /// when the key is full). Returns the next instant worth waking at.
    fn serve_reservations(&mut self, now: Timestamp) -> Option<Timestamp> {
        let key = &self.key;
        let state = &mut self.state;
        let callers_set_policy = !self.calendar.sets_policy();
        let pid_alive = &self.deps.pid_alive;
        let mut orphaned: Vec<ReservationId> = Vec::new();
        let wake = self.reserving.poll(
            now,
            |r| {
                if r.reply.is_closed() {
                    return Step::Drop;
                }
                if callers_set_policy {
                    state.adopt_policy(&r.policy, now);
                }
                match state.reserve(r.owner, r.expires_at, now) {
                    Ok(id) => Step::<_, ()>::Grant(id),
                    Err(at) => {
                        if state.reap(now, &|pid| pid_alive(pid)) == 0 {
                            return Step::Wait(at);
                        }
                        match state.reserve(r.owner, r.expires_at, now) {
                            Ok(id) => Step::Grant(id),
                            Err(at) => Step::Wait(at),
                        }
                    }
                }
            },
            |r, exit| match exit {
                Exit::Granted(id) => {
                    if r.reply.send(Ok(id)).is_err() {
                        orphaned.push(id);
                    }
                }
                Exit::DeadlineExceeded => {
                    let _ = r
                        .reply
                        .send(Err(AdmissionError::DeadlineExceeded { key: key.clone() }));
                }
                Exit::Refused(()) | Exit::Dropped => {}
            },
        );
        for id in orphaned {
            state.release(id, now);
        }
        wake
    }

    fn schedule_wake(&mut self, next: Option<Timestamp>, now: Timestamp, ctx: &mut Context<Self>) {
        match (next, self.wake) {
            (None, Some((_, handle))) => {
                ctx.cancel_future(handle);
                self.wake = None;
            }
            (Some(at), Some((scheduled, _))) if scheduled <= at => {}
            (Some(at), current) => {
                if let Some((_, handle)) = current {
                    ctx.cancel_future(handle);
                }
                let handle = ctx.run_later(at.saturating_since(now), |act, ctx| {
                    act.wake = None;
                    act.poll(ctx);
                });
                self.wake = Some((at, handle));
            }
            (None, None) => {}
        }
    }

    fn fail_all(&mut self, error: impl Fn() -> AdmissionError) {
        for r in self.reserving.cancel_where(|_| true) {
            let _ = r.reply.send(Err(error()));
        }
        for a in self.admitting.cancel_where(|_| true) {
            let _ = a.reply.send(Err(error()));
        }
    }

    /// Whether `owner` holds reservation `id` (an unknown id counts as held, so releasing it
    /// stays the harmless no-op it always was).
    fn held_by(&self, id: ReservationId, owner: tollgate_quota::Owner, now: Timestamp) -> bool {
        self.state
            .reservations()
            .get(id, now)
            .is_none_or(|r| r.owner == owner)
    }

    fn is_idle(&self) -> bool {
        self.reserving.is_empty()
            && self.admitting.is_empty()
            && self.state.reservations().is_empty()
    }

    /// The key's status now.
    fn status(&self) -> KeyStatus {
        let now = self.deps.clock.now();
        KeyStatus {
            key: self.key.to_string(),
            state: self.state.snapshot(now),
            waiting_for_reservation: self.reserving.len(),
            waiting_for_admission: self.admitting.len(),
            storage_failure: self.failure().map(|f| f.to_string()),
            calendar: self.calendar.status(now),
            fleet: self.fleet.as_ref().map(|f| f.ledger.view()),
            fleet_degraded: self.fleet.as_ref().and_then(|f| f.spell.clone()),
        }
    }
}

impl Actor for QuotaActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.fail_all(|| AdmissionError::Stopped);
    }
}
