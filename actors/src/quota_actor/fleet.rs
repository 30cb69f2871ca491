//! A quota actor under fleet mode: grants also need the key's fleet block.
//!
//! Mirrors the write-ahead lease (`tollgate_quota::lease`, `save.rs`): a grant spends the
//! next token in hand inside its window ([`HostLedger`]); a host running low, or a head
//! waiter with no token, starts one block request (at most one in flight), whose answer
//! wakes the actor. Only the coordinator's
//! actors talk to the table; processes on the host still talk to their coordinator.
//!
//! When the table fails the key degrades (local share or stop, per the host's on-error
//! mode) with one warning per transition, retries the table with a backoff while the key
//! is in use, and rejoins on the first answer (another warning).

use std::sync::Arc;
use std::time::Duration;

use actix::fut::wrap_future;
use actix::{ActorFutureExt, AsyncContext, Context};
use tollgate_quota::fleet::{BlockGrant, Declared, FleetMode, HostLedger, KeyUse, Transition};
use tollgate_quota::Timestamp;

use super::QuotaActor;
use crate::fleet::{exchange, FleetError, FleetErrorKind, FleetSetup, Versioned};
use crate::messages::FleetDegradedSpell;

/// After a request lost every write to other hosts, ask again this much later.
const CONTENTION_RETRY: Duration = Duration::from_millis(20);

/// The fleet side of one key.
pub(super) struct FleetKey {
    pub(super) setup: FleetSetup,
    pub(super) ledger: HostLedger,
    /// The item as this host last wrote it (saves a read when nobody wrote since).
    cached: Option<Versioned>,
    /// Whether to start from `cached`: not after a write lost to another host (the key
    /// is shared busily; a read first is cheaper than a failed write).
    trust_cache: bool,
    /// The cost of the head waiter that needs a block, set by `serve`.
    pub(super) blocked: Option<u64>,
    /// Set by `serve` when a waiter asked the fleet gate (a degraded key in use retries
    /// the table even when its local share admitted everyone).
    pub(super) asked: bool,
    /// The last grant, for status.
    pub(super) last: Option<BlockGrant>,
    /// The latest degraded spell, for status and scan reports.
    pub(super) spell: Option<FleetDegradedSpell>,
}

impl FleetKey {
    pub(super) fn new(setup: FleetSetup) -> Self {
        let ledger = HostLedger::new(setup.host.clone(), setup.config);
        FleetKey {
            setup,
            ledger,
            cached: None,
            trust_cache: true,
            blocked: None,
            asked: false,
            last: None,
            spell: None,
        }
    }

    /// Send this host's calendar for the key with every block request.
    pub(super) fn declare(&mut self, declared: Declared) {
        self.ledger.declare(declared);
    }

    /// The reason stop mode gives, when the key is stopped.
    pub(super) fn stop_reason(&self) -> Option<String> {
        (self.ledger.mode() == FleetMode::Stop)
            .then(|| self.ledger.view().last_error.unwrap_or_default())
    }
}

impl QuotaActor {
    /// Start a block request if the ledger wants one; returns the next instant the fleet
    /// side wants a poll at (a refused grant's instant to ask again, a rejoin attempt).
    pub(super) fn fleet_poll(
        &mut self,
        now: Timestamp,
        ctx: &mut Context<Self>,
    ) -> Option<Timestamp> {
        let active = !self.admitting.is_empty() || self.fleet.as_ref().is_some_and(|f| f.asked);
        let head = self
            .admitting
            .iter()
            .next()
            .map(|a| u64::from(a.request.cost.max(1)));
        let waiting: u64 = self
            .admitting
            .iter()
            .map(|a| u64::from(a.request.cost.max(1)))
            .sum();
        let policy = *self.state.policy();
        let f = self.fleet.as_mut()?;
        let key_use = match (f.blocked, active) {
            (Some(_), _) => KeyUse::NeedsBlock,
            (None, true) => KeyUse::InUse,
            (None, false) => KeyUse::Idle,
        };
        if f.ledger.wants_request(key_use, now) {
            let request = f
                .ledger
                .begin(f.blocked.or(head).unwrap_or(1), waiting, &policy, now);
            let fut = exchange(
                f.setup.store.clone(),
                self.key.to_string(),
                request,
                Arc::clone(&self.deps.clock),
                f.cached.clone().filter(|_| f.trust_cache),
            );
            let started = now;
            ctx.spawn(wrap_future::<_, Self>(fut).map(move |result, act, ctx| {
                let took = act.deps.clock.now().saturating_since(started);
                if let Some(f) = act.fleet.as_mut() {
                    f.ledger.answered_after(took);
                }
                act.fleet_answered(result);
                act.poll(ctx);
            }));
        }
        if active {
            f.ledger.wake_at(now)
        } else {
            None
        }
    }

    fn fleet_answered(&mut self, result: Result<(BlockGrant, Versioned, bool), FleetError>) {
        let now = self.deps.clock.now();
        let policy = *self.state.policy();
        let key = self.key.to_string();
        let Some(f) = self.fleet.as_mut() else {
            return;
        };
        let transition = match result {
            Ok((grant, item, conflicted)) => {
                // Start from the cache next time (one PutItem) unless this write lost to
                // another host or others wrote since our previous one (the version moved
                // by more than ours; on a first write, unless it created the item): the
                // key is shared busily, and a read first is cheaper than a failed write.
                let previous = f.cached.as_ref().map(|v| v.version);
                f.trust_cache =
                    !conflicted && previous.map_or(item.version == 1, |p| item.version == p + 1);
                f.cached = Some(item);
                if let Some(hosts) = f.ledger.disagreement(&grant) {
                    tracing::warn!(
                        key = %key,
                        hosts = %hosts.join(", "),
                        rate = grant.rate,
                        burst = grant.burst,
                        "fleet calendar: these hosts declare a different schedule, allowance \
                         or policy for this key than this host; the strictest of them is in \
                         force for every host (see `tollgate fleet status`)"
                    );
                }
                let transition = f.ledger.granted(&grant);
                f.last = Some(grant);
                transition
            }
            Err(e) if e.kind == FleetErrorKind::Contention => {
                f.cached = None;
                f.ledger.contended(now + CONTENTION_RETRY);
                None
            }
            Err(e) => {
                f.cached = None;
                f.ledger.failed(e.to_string(), &policy, now)
            }
        };
        match transition {
            Some(Transition::Degraded { mode, error }) => {
                f.spell = Some(FleetDegradedSpell::began(mode, error.clone(), now));
                let view = f.ledger.view();
                tracing::warn!(
                    key = %key,
                    mode = ?mode,
                    local_share_rate = ?view.local_share_rate,
                    hosts_seen = view.hosts_seen,
                    "fleet admission degraded: {error}"
                );
            }
            Some(Transition::Rejoined) => {
                if let Some(spell) = f.spell.as_mut() {
                    spell.rejoined_at = Some(now);
                }
                tracing::warn!(key = %key, table = %f.setup.store.describe(), "fleet admission rejoined: the table answers again");
            }
            None => {}
        }
    }
}
