//! `BreakerBoard`: the circuit breakers of every scope, in the coordinator.
//!
//! One actor per coordinator holds one [`Breaker`] per [`BreakerScope`] (service, region
//! and account) and is reached by every process: in process through `LocalAdmission`,
//! from clients through the socket (`breaker_pass`, `breaker_report`). That is what makes
//! the probe lease exactly one for the whole scope: there is one breaker to take it from.
//!
//! Callers that may not pass yet wait in a FIFO per scope ([`WaitQueue`]): for the
//! opening to end, or for the probe's report, which polls the scope at once (so waiters
//! go as soon as the probe succeeds, not at its lease's end). A caller whose deadline
//! falls before the opening ends is answered [`AdmissionError::BreakerOpen`] at once; one
//! whose deadline passes while the probe is out, at its deadline.
//!
//! In fleet mode ([`fleet`]) the board also shares each failing scope with the other
//! hosts through the fleet table: openings are published and adopted, and the half-open
//! probe is claimed from the table first, so there is one probe for the whole fleet.
//!
//! A scope is held while it matters and forgotten after: a closed breaker nobody waits
//! for is the default and is dropped at the next poll, and a scope nobody has passed or
//! reported on for [`FORGET_IDLE`] is dropped whatever its state (an organization scan
//! that met an outage in one region would otherwise keep a half-open breaker for every
//! account's service there for the coordinator's life). [`FORGET_IDLE`] is longer than
//! the longest opening, so no opening is cut short; a forgotten failing scope costs what a new
//! coordinator's does (below). The board polls every [`SWEEP_EVERY`] so that idle scopes
//! go even when nothing else happens.
//!
//! Breakers live in the coordinator's memory only (not persisted): a new coordinator
//! starts every breaker closed, which costs at most [`FAILURE_THRESHOLD`] transient
//! answers per failing scope to re-learn; storing them would add a record write to every
//! opening for a state that a minute-long outage re-creates anyway.
//!
//! [`FAILURE_THRESHOLD`]: tollgate_quota::breaker::FAILURE_THRESHOLD

mod fleet;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, MessageResult, SpawnHandle};
use tollgate_quota::{
    Breaker, BreakerScope, BreakerWait, Clock, Exit, Passage, Step, Timestamp, WaitQueue,
};

use self::fleet::{FleetLink, FleetScope};
use crate::fleet::BreakerLink;
use crate::footprint::CountScopes;
use crate::messages::{BreakerPass, BreakerReport, BreakerStatus, Breakers};
use crate::AdmissionError;

pub use self::fleet::RECHECK;

/// How long a scope nobody passes or reports on is kept: a minute past the longest
/// opening ([`tollgate_quota::breaker::MAX_OPEN`]), so forgetting never shortens one.
pub const FORGET_IDLE: Duration =
    Duration::from_secs(tollgate_quota::breaker::MAX_OPEN.as_secs() + 60);

/// How often the board polls without an event, to forget idle scopes.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Whether the board keeps a scope at `now` (see the module docs).
fn keep(entry: &Scope, now: Timestamp) -> bool {
    let in_use = !entry.waiting.is_empty() || entry.fleet.busy(now);
    let remembered =
        entry.breaker != Breaker::default() && now.saturating_since(entry.used_at) < FORGET_IDLE;
    in_use || remembered
}

/// One scope: its breaker, who waits for it, its standing with the fleet.
#[derive(Default)]
struct Scope {
    breaker: Breaker,
    waiting: WaitQueue<BreakerPass>,
    fleet: FleetScope,
    /// The last pass or report on the scope.
    used_at: Timestamp,
}

/// The breakers of every scope this coordinator has seen.
pub struct BreakerBoard {
    clock: Arc<dyn Clock>,
    scopes: HashMap<BreakerScope, Scope>,
    next_waiter: u64,
    wake: Option<(Timestamp, SpawnHandle)>,
    /// The fleet's breaker table, in fleet mode.
    fleet: Option<FleetLink>,
}

impl std::fmt::Debug for BreakerBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerBoard")
            .field("scopes", &self.scopes.len())
            .finish()
    }
}

impl BreakerBoard {
    /// An empty board reading `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        BreakerBoard {
            clock,
            scopes: HashMap::new(),
            next_waiter: 0,
            wake: None,
            fleet: None,
        }
    }

    /// Share the breakers with the fleet through `link` (fleet mode).
    pub fn with_fleet(mut self, link: Option<BreakerLink>) -> Self {
        self.fleet = link.map(FleetLink::new);
        self
    }

    /// Serve every scope's waiters; wake again at the earliest instant worth it.
    fn poll(&mut self, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let mut next: Option<Timestamp> = None;
        let sharing = Sharing::of(self.fleet.as_ref());
        for (scope, entry) in &mut self.scopes {
            let wake = serve(scope, entry, sharing, now);
            next = match (next, wake) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        // A closed breaker nobody waits for is the default, and an idle scope is
        // forgotten: see the module docs.
        self.scopes.retain(|_, e| keep(e, now));
        crate::sparse::shrink_if_sparse(&mut self.scopes);
        self.start_claims(ctx);
        match (next, self.wake) {
            (Some(at), Some((scheduled, _))) if scheduled <= at && scheduled > now => {}
            (next, current) => {
                if let Some((_, handle)) = current {
                    ctx.cancel_future(handle);
                }
                self.wake = next.map(|at| {
                    let handle = ctx.run_later(at.saturating_since(now), |act, ctx| {
                        act.wake = None;
                        act.poll(ctx);
                    });
                    (at, handle)
                });
            }
        }
    }
}

/// Whether the board's breakers are shared with the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// This host's breakers are its own.
    HostOnly,
    /// Fleet mode: openings and the half-open probe are shared through the table.
    Fleet,
}

impl Sharing {
    fn of(link: Option<&FleetLink>) -> Self {
        match link {
            Some(_) => Sharing::Fleet,
            None => Sharing::HostOnly,
        }
    }

    /// The scope's fleet standing, when it counts.
    fn standing(self, fleet: &mut FleetScope) -> Option<&mut FleetScope> {
        match self {
            Sharing::Fleet => Some(fleet),
            Sharing::HostOnly => None,
        }
    }
}

/// Let through whoever may pass in one scope; returns the next instant worth waking at.
fn serve(
    scope: &BreakerScope,
    entry: &mut Scope,
    sharing: Sharing,
    now: Timestamp,
) -> Option<Timestamp> {
    let Scope {
        breaker,
        waiting,
        fleet: standing,
        used_at,
    } = entry;
    let refused = |at| AdmissionError::BreakerOpen {
        scope: scope.to_string(),
        reopens_at: at,
    };
    let mut exits = Vec::new();
    let next = waiting.poll(
        now,
        |w| {
            if w.reply.is_closed() {
                return Step::Drop;
            }
            match fleet::pass(breaker, sharing.standing(standing), now) {
                Passage::Wait {
                    at,
                    reason: BreakerWait::Open,
                } if at > w.deadline => Step::Refuse(at),
                Passage::Wait { at, .. } => Step::Wait(at),
                pass => Step::Grant(pass),
            }
        },
        |w, exit| exits.push((w, exit)),
    );
    if !exits.is_empty() {
        // A waiter let through (or turned away) is a use of the scope.
        *used_at = now;
    }
    let mut abandoned = false;
    for (w, exit) in exits {
        let answer = match exit {
            Exit::Granted(pass) => Ok(pass),
            Exit::Refused(at) => Err(refused(at)),
            Exit::DeadlineExceeded => Err(refused(breaker.reopens_at(now).unwrap_or(now))),
            Exit::Dropped => continue,
        };
        if let Err(Ok(Passage::Probe(lease))) = w.reply.send(answer) {
            // The caller left before it could probe: the next waiter probes instead.
            abandoned |= breaker.abandon(lease.id, now);
        }
    }
    if abandoned {
        Some(now)
    } else {
        next
    }
}

impl Actor for BreakerBoard {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |act, ctx| act.poll(ctx));
    }
}

impl Handler<BreakerPass> for BreakerBoard {
    type Result = ();
    fn handle(&mut self, msg: BreakerPass, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let sharing = Sharing::of(self.fleet.as_ref());
        let entry = self.scopes.entry(msg.scope.clone()).or_default();
        entry.used_at = now;
        // Nobody ahead: answer at once when the breaker can (a closed breaker always
        // can, whatever the deadline, even one that is already due).
        if entry.waiting.is_empty() {
            let answer =
                match fleet::pass(&mut entry.breaker, sharing.standing(&mut entry.fleet), now) {
                    Passage::Wait {
                        at,
                        reason: BreakerWait::Open,
                    } if at > msg.deadline => Some(Err(AdmissionError::BreakerOpen {
                        scope: msg.scope.to_string(),
                        reopens_at: at,
                    })),
                    Passage::Wait { .. } => None,
                    pass => Some(Ok(pass)),
                };
            if let Some(answer) = answer {
                if let Err(Ok(Passage::Probe(lease))) = msg.reply.send(answer) {
                    entry.breaker.abandon(lease.id, now);
                }
                return;
            }
        }
        let id = self.next_waiter;
        self.next_waiter += 1;
        let deadline = msg.deadline;
        entry.waiting.push(id, deadline, msg);
        self.poll(ctx);
    }
}

impl Handler<BreakerReport> for BreakerBoard {
    type Result = ();
    fn handle(&mut self, msg: BreakerReport, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let entry = self.scopes.entry(msg.scope.clone()).or_default();
        entry.used_at = now;
        let before = self.fleet.as_ref().map(|_| entry.breaker.clone());
        let changed = match (msg.outcome, msg.probe) {
            (Some(outcome), probe) => entry.breaker.record(outcome, probe, now),
            (None, Some(probe)) => entry.breaker.abandon(probe, now),
            (None, None) => false,
        };
        if changed {
            tracing::info!(scope = %msg.scope, state = ?entry.breaker.state(now), "circuit breaker changed");
        }
        if let Some(before) = before {
            let what = fleet::what_to_publish(
                &before,
                &entry.breaker,
                msg.outcome,
                msg.probe,
                entry.fleet.consulted_at(),
                now,
            );
            self.publish(&msg.scope, what, ctx);
        }
        if changed {
            self.poll(ctx);
        }
    }
}

impl Handler<CountScopes> for BreakerBoard {
    type Result = usize;
    fn handle(&mut self, _: CountScopes, _: &mut Context<Self>) -> usize {
        self.scopes.len()
    }
}

impl Handler<Breakers> for BreakerBoard {
    type Result = MessageResult<Breakers>;
    fn handle(&mut self, _: Breakers, _: &mut Context<Self>) -> Self::Result {
        let now = self.clock.now();
        let mut list: Vec<BreakerStatus> = self
            .scopes
            .iter()
            .map(|(scope, e)| BreakerStatus {
                scope: scope.to_string(),
                state: e.breaker.state(now),
                reopens_at: e.breaker.reopens_at(now),
                // a failed probe at the end of this opening re-opens for this long
                next_open_secs: e
                    .breaker
                    .opening_at(e.breaker.reopens_at(now).unwrap_or(now))
                    .as_secs(),
                waiting: e.waiting.len(),
                from_fleet: e.fleet.from_fleet,
            })
            .collect();
        list.sort_by(|a, b| a.scope.cmp(&b.scope));
        MessageResult(list)
    }
}
