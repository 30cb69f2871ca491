//! `LocalAdmission`: admission served by quota actors in this process.
//!
//! It is the backend of an [`AdmissionHandle`](crate::AdmissionHandle) in the coordinator
//! process, and what the coordinator's socket server hands every remote operation to.
//! [`LocalAdmission::serve`] is where each [`Operation`] of the operation set is done: the
//! one match over the operations. Every operation names the [`Caller`] it acts for,
//! because the server acts for many processes (and their connections) through one set of
//! actors; the in-process handle passes its own.

pub(crate) mod paired;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use actix::{Addr, ArbiterHandle};
use futures_util::FutureExt;
use tokio::sync::oneshot;
use tollgate_quota::{
    AdmitRequest, BreakerScope, Clock, Owner, Passage, Policy, ReservationId, Timestamp,
};

use crate::actor_cache::ActorCache;
use crate::breaker_board::BreakerBoard;
use crate::footprint::{CountActors, CountScopes, Footprint};
use crate::key::CanonicalKey;
use crate::messages::{
    BreakerPass, BreakerReport, Breakers, CancelScope, Feedback, Pause, Release, Reserve,
    WaiterTag, IN_PROCESS,
};
use crate::ops::{Answer, CoordinationStatus, Operation};
use crate::persist::Persister;
use crate::quota_actor::QuotaActor;
use crate::registry::{
    CancelEverywhere, Lookup, Registry, ReleaseOwnerEverywhere, Shutdown, StatusAll,
};
use crate::remote::ClientTable;
use crate::AdmissionError;
use paired::Pair;

pub use crate::wait::DEFAULT_RESERVATION_TTL;

/// Who an operation acts for: the requesting process, and the coordinator connection it
/// came through ([`IN_PROCESS`] for this process's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The requesting process.
    pub owner: Owner,
    /// Its connection.
    pub connection: u64,
}

impl Caller {
    /// The tag of this caller's waiters in `scope`.
    pub(crate) fn tag(self, scope: Option<u64>) -> WaiterTag {
        WaiterTag {
            scope,
            owner: self.owner,
            connection: self.connection,
        }
    }
}

/// The quota actors of this process, reachable from any thread.
pub(crate) struct LocalAdmission {
    registry: Addr<Registry>,
    breakers: Addr<BreakerBoard>,
    /// Addresses of actors looked up before (they forget evicted ones: `actor_cache`).
    actors: Mutex<ActorCache>,
    clock: Arc<dyn Clock>,
    owner: Owner,
    persister: Persister,
    /// The socket server's table of connected clients, when this process serves one.
    clients: OnceLock<Arc<ClientTable>>,
    /// The actors' arbiter: what a told operation that must wait (its actor is not
    /// known yet) finishes on.
    arbiter: ArbiterHandle,
}

impl LocalAdmission {
    pub(crate) fn new(
        registry: Addr<Registry>,
        breakers: Addr<BreakerBoard>,
        clock: Arc<dyn Clock>,
        owner: Owner,
        persister: Persister,
    ) -> Self {
        LocalAdmission {
            registry,
            breakers,
            actors: Mutex::new(ActorCache::new(clock.now())),
            clock,
            owner,
            persister,
            clients: OnceLock::new(),
            arbiter: actix::Arbiter::current(),
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The store refuses writes (the persister retries them until it takes them again).
    pub(crate) fn store_failing(&self) -> bool {
        self.persister.health().failure().is_some()
    }

    /// The same actors, clock and store acting for another `owner` (as the socket server
    /// acts for each client process): for in-process simulations of several processes.
    pub(crate) fn for_owner(&self, owner: Owner) -> Self {
        LocalAdmission {
            registry: self.registry.clone(),
            breakers: self.breakers.clone(),
            actors: Mutex::new(ActorCache::new(self.clock.now())),
            clock: self.clock.clone(),
            owner,
            persister: self.persister.clone(),
            clients: OnceLock::new(),
            arbiter: self.arbiter.clone(),
        }
    }

    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// This process's own requests.
    pub(crate) fn caller(&self) -> Caller {
        Caller {
            owner: self.owner,
            connection: IN_PROCESS,
        }
    }

    pub(crate) fn attach_clients(&self, clients: Arc<ClientTable>) {
        let _ = self.clients.set(clients);
    }

    pub(crate) fn clients(&self) -> Option<&Arc<ClientTable>> {
        self.clients.get()
    }

    pub(crate) async fn actor(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        fresh: bool,
    ) -> Result<Addr<QuotaActor>, AdmissionError> {
        if !fresh {
            let now = self.now();
            if let Some(addr) = self.actors.lock().ok().and_then(|mut m| m.get(key, now)) {
                return Ok(addr);
            }
        }
        let addr = self
            .registry
            .send(Lookup {
                key: key.clone(),
                policy,
            })
            .await
            .map_err(|_| AdmissionError::Stopped)?;
        if let Ok(mut m) = self.actors.lock() {
            m.insert(key.clone(), addr.clone(), self.now());
        }
        Ok(addr)
    }

    /// Send a waiting request to the key's actor and await the answer. If the actor was
    /// retired between lookup and delivery, look it up again (at most twice).
    pub(crate) async fn ask<T, M>(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        make: impl Fn(oneshot::Sender<Result<T, AdmissionError>>) -> M,
    ) -> Result<T, AdmissionError>
    where
        M: actix::Message<Result = ()> + Send + 'static,
        QuotaActor: actix::Handler<M>,
    {
        for attempt in 0..3 {
            let addr = self.actor(key, policy, attempt > 0).await?;
            let (tx, rx) = oneshot::channel();
            // `do_send` ignores the mailbox capacity: waiting is the FIFO's job, not the
            // mailbox's. A message to a stopped actor is dropped with its reply sender.
            addr.do_send(make(tx));
            match rx.await {
                Ok(answer) => return answer,
                Err(_) => continue, // the actor stopped with our message unanswered
            }
        }
        Err(AdmissionError::Stopped)
    }

    /// Do `op` for `caller` and answer it. `actor`: the key's actor if the caller holds
    /// it already (a reservation guard does), which spares a lookup.
    ///
    /// The operations that may wait ([`Operation::may_wait`]) are done here; the others,
    /// which complete at once, by [`serve_at_once`](Self::serve_at_once).
    pub(crate) async fn serve(
        &self,
        op: Operation,
        caller: Caller,
        actor: Option<Addr<QuotaActor>>,
    ) -> Result<Answer, AdmissionError> {
        let now = self.now();
        Ok(match op {
            Operation::Reserve {
                key,
                policy,
                timeout,
                scope,
            } => Answer::Reserved(
                self.reserve_at(&key, policy, (now, timeout), scope, caller)
                    .await?,
            ),
            Operation::ReservePass {
                key,
                policy,
                timeout,
                scope,
                try_admit,
            } => {
                let first = (caller, scope, try_admit);
                self.reserve_pass(&key, policy, (now, timeout), first)
                    .await?
            }
            Operation::Admit {
                key,
                policy,
                reservation,
                cost,
                retry,
                timeout,
                scope,
            } => {
                let request = AdmitRequest {
                    reservation,
                    cost,
                    retry,
                };
                let (tag, deadline) = (caller.tag(scope), now + timeout);
                let grant = self
                    .admit_on((&key, policy, request), deadline, false, tag)
                    .await?;
                Answer::from(grant)
            }
            Operation::AdmitWithBudget {
                key,
                policy,
                reservation,
                cost,
                retry,
                timeout,
                scope,
                budgets,
            } => {
                let pair = Pair {
                    key,
                    policy,
                    request: AdmitRequest {
                        reservation,
                        cost,
                        retry,
                    },
                    budgets,
                    deadline: now + timeout,
                    scope,
                };
                Answer::from(self.admit_paired(pair, caller).await?)
            }
            Operation::BreakerPass { key, timeout } => {
                let passage = self
                    .breaker_pass(BreakerScope::of(key.quota_key()), timeout)
                    .await?;
                Answer::Passage(passage)
            }
            op => return self.serve_at_once(op, caller, actor).await,
        })
    }

    /// [`Operation::ReservePass`]: a slot, the breaker's passage within what is left of
    /// `timeout`, and, when `try_admit` says so, the first attempt's grant if the key
    /// admits it at once (a `once` try: it never waits, and a refusal leaves the attempt
    /// to ask at dispatch, as it would have). A refused passage gives the slot back
    /// before the caller hears.
    async fn reserve_pass(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        (now, timeout): (Timestamp, Duration),
        (caller, scope, try_admit): (Caller, Option<u64>, Option<u32>),
    ) -> Result<Answer, AdmissionError> {
        let reservation = self
            .reserve_at(key, policy, (now, timeout), scope, caller)
            .await?;
        // Until it is answered the slot is this future's: dropped (its caller gave up) or
        // refused passage, it gives the slot back.
        let unanswered = Unanswered {
            actor: Some(self.actor(key, policy, false).await?),
            reservation,
            owner: caller.owner,
        };
        let deadline = now + timeout;
        let left = deadline.saturating_since(self.now());
        let passage = self
            .breaker_pass(BreakerScope::of(key.quota_key()), left)
            .await?;
        let mut admitted_at = None;
        if let Some(cost) = try_admit {
            let request = AdmitRequest {
                reservation,
                cost,
                retry: false,
            };
            let tried = self
                .admit_on((key, policy, request), deadline, true, caller.tag(scope))
                .await;
            admitted_at = tried.ok().map(|grant| grant.admitted_at);
        }
        unanswered.answered();
        Ok(Answer::ReservedPassed {
            reservation,
            passage,
            admitted_at,
        })
    }

    /// Take a slot of `key` for `caller`, waiting from `now` at most `timeout`.
    async fn reserve_at(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        (now, timeout): (Timestamp, Duration),
        scope: Option<u64>,
        caller: Caller,
    ) -> Result<ReservationId, AdmissionError> {
        let tag = caller.tag(scope);
        self.ask(key, policy, |reply| Reserve {
            policy,
            owner: caller.owner,
            expires_at: now + timeout.max(DEFAULT_RESERVATION_TTL),
            deadline: now + timeout,
            tag,
            reply,
        })
        .await
    }

    /// Do an operation that completes at once (`!op.may_wait()`) for `caller`: a message
    /// to the key's actor or to the breakers, a cancellation, the status.
    async fn serve_at_once(
        &self,
        op: Operation,
        caller: Caller,
        actor: Option<Addr<QuotaActor>>,
    ) -> Result<Answer, AdmissionError> {
        // The key's actor: the one the caller holds while it runs, else looked up.
        let held = actor.filter(Addr::connected);
        Ok(match op {
            Operation::Feedback {
                key,
                policy,
                outcome,
                admitted_at,
                refund_retry,
            } => {
                let feedback = Feedback {
                    outcome,
                    admitted_at,
                    refund_retry,
                };
                self.held_or_looked_up(held, &key, policy)
                    .await?
                    .do_send(feedback);
                Answer::Done
            }
            Operation::Pause { key, policy, hint } => {
                self.held_or_looked_up(held, &key, policy)
                    .await?
                    .do_send(Pause { hint });
                Answer::Done
            }
            Operation::BreakerReport {
                key,
                outcome,
                probe,
            } => {
                self.breakers.do_send(BreakerReport {
                    scope: BreakerScope::of(key.quota_key()),
                    outcome,
                    probe,
                });
                Answer::Done
            }
            Operation::Release {
                key,
                policy,
                reservation,
                feedback,
                breaker,
            } => {
                let owner = caller.owner;
                let actor = self.held_or_looked_up(held, &key, policy).await?;
                // In the order of the separate messages they stand for (`ops`).
                if let Some(f) = feedback {
                    actor.do_send(Feedback {
                        outcome: f.outcome,
                        admitted_at: f.admitted_at,
                        refund_retry: f.refund_retry,
                    });
                }
                if let Some(b) = breaker {
                    self.breakers.do_send(BreakerReport {
                        scope: BreakerScope::of(key.quota_key()),
                        outcome: b.outcome,
                        probe: b.probe,
                    });
                }
                actor.do_send(Release { reservation, owner });
                Answer::Done
            }
            Operation::Cancel { scope } => {
                Answer::Cancelled(self.cancel(CancelScope::Scope(scope)).await?)
            }
            Operation::Status => Answer::Status(self.status().await?),
            // Exhaustive on purpose: a new operation must be placed in one of the two.
            Operation::Reserve { .. }
            | Operation::ReservePass { .. }
            | Operation::Admit { .. }
            | Operation::AdmitWithBudget { .. }
            | Operation::BreakerPass { .. } => {
                unreachable!("`serve` does the operations that may wait")
            }
        })
    }

    /// Who coordinates, who is connected, every key's state and every breaker's.
    async fn status(&self) -> Result<CoordinationStatus, AdmissionError> {
        Ok(CoordinationStatus {
            coordinator_pid: self.owner.pid,
            clients: self.clients().map(|c| c.list()).unwrap_or_default(),
            keys: self
                .registry
                .send(StatusAll)
                .await
                .map_err(|_| AdmissionError::Stopped)?,
            breakers: self
                .breakers
                .send(Breakers)
                .await
                .map_err(|_| AdmissionError::Stopped)?,
        })
    }

    /// `held` if the caller holds the key's live actor, else the key's actor looked up.
    async fn held_or_looked_up(
        &self,
        held: Option<Addr<QuotaActor>>,
        key: &CanonicalKey,
        policy: Policy,
    ) -> Result<Addr<QuotaActor>, AdmissionError> {
        match held {
            Some(addr) => Ok(addr),
            None => self.actor(key, policy, false).await,
        }
    }

    /// Do `op` for this process without waiting for its answer (what feedback, pauses,
    /// releases and breaker reports need; a failure is logged). It is done on the
    /// caller's thread when nothing in it waits (its actor is known: `actor`, or one
    /// looked up before), else finished on the actors' arbiter.
    pub(crate) fn tell(self: &Arc<Self>, op: Operation, actor: Option<&Addr<QuotaActor>>) {
        let (local, actor) = (self.clone(), actor.cloned());
        let mut told = Box::pin(async move {
            let caller = local.caller();
            if let Err(e) = local.serve(op, caller, actor).await {
                tracing::debug!(error = %e, "an admission operation sent without waiting failed");
            }
        });
        if (&mut told).now_or_never().is_none() {
            self.arbiter.spawn(told);
        }
    }

    /// Passage through the scope's breaker, waiting at most `timeout` for it.
    async fn breaker_pass(
        &self,
        scope: BreakerScope,
        timeout: Duration,
    ) -> Result<Passage, AdmissionError> {
        let (reply, rx) = oneshot::channel();
        self.breakers.do_send(BreakerPass {
            scope,
            deadline: self.now() + timeout,
            reply,
        });
        rx.await.map_err(|_| AdmissionError::Stopped)?
    }

    /// The counts of the per-key and per-scope structures now.
    pub(crate) async fn footprint(&self) -> Result<Footprint, AdmissionError> {
        let actors = self.registry.send(CountActors).await;
        let breaker_scopes = self.breakers.send(CountScopes).await;
        let cached_addresses = self.actors.lock().map(|m| m.len()).unwrap_or(0);
        let actors = actors.map_err(|_| AdmissionError::Stopped)?;
        Ok(Footprint {
            live_actors: actors.live,
            peak_live_actors: actors.peak,
            started_actors: actors.started,
            cached_addresses,
            breaker_scopes: breaker_scopes.map_err(|_| AdmissionError::Stopped)?,
        })
    }

    /// Cancel queued waiters on every key.
    pub(crate) async fn cancel(&self, scope: CancelScope) -> Result<usize, AdmissionError> {
        self.registry
            .send(CancelEverywhere(scope))
            .await
            .map_err(|_| AdmissionError::Stopped)
    }

    /// Drop `owner`'s waiters and release its slots on every live key.
    pub(crate) async fn release_owner(&self, owner: Owner) -> usize {
        self.registry
            .send(ReleaseOwnerEverywhere(owner))
            .await
            .unwrap_or(0)
    }

    pub(crate) async fn shutdown(&self) -> Result<(), AdmissionError> {
        let _ = self.registry.send(Shutdown).await;
        let persister = self.persister.clone();
        // Flushing blocks: keep it off whatever thread awaits this.
        let (tx, rx) = oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(persister.stop());
        });
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(failure)) => Err(AdmissionError::Storage(failure)),
            Err(_) => Err(AdmissionError::Stopped),
        }
    }
}

/// A slot [`LocalAdmission::reserve_pass`] took and has not answered yet: released when
/// dropped before [`answered`](Self::answered) (a refused passage, or a caller that gave
/// up while the breaker or the admission try was asked), so no slot waits out its expiry.
struct Unanswered {
    actor: Option<Addr<QuotaActor>>,
    reservation: ReservationId,
    owner: Owner,
}

impl Unanswered {
    /// The slot is the caller's now.
    fn answered(mut self) {
        self.actor = None;
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            actor.do_send(Release {
                reservation: self.reservation,
                owner: self.owner,
            });
        }
    }
}
