//! `LocalAdmission`: admission served by quota actors in this process.
//!
//! It is the backend of an [`AdmissionHandle`](crate::AdmissionHandle) in the coordinator
//! process, and what the coordinator's socket server forwards remote requests to. Every
//! operation names the [`Owner`] it acts for, because the server acts for many processes
//! through one set of actors; the in-process handle passes its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use actix::Addr;
use tokio::sync::oneshot;
use tollgate_quota::{
    BreakerScope, Clock, Grant, Outcome, Owner, Passage, Policy, ProbeId, ReservationId, Timestamp,
};

use crate::breaker_board::BreakerBoard;
use crate::key::{AdmitCall, CanonicalKey};
use crate::messages::{
    Admit, BreakerPass, BreakerReport, BreakerStatus, Breakers, CancelScope, Feedback, KeyStatus,
    Pause, Release, Reserve, WaiterTag, IN_PROCESS,
};
use crate::persist::Persister;
use crate::quota_actor::QuotaActor;
use crate::registry::{
    CancelEverywhere, Lookup, Registry, ReleaseOwnerEverywhere, Shutdown, StatusAll,
};
use crate::remote::ClientTable;
use crate::AdmissionError;

pub use crate::wait::DEFAULT_RESERVATION_TTL;

/// The quota actors of this process, reachable from any thread.
pub(crate) struct LocalAdmission {
    registry: Addr<Registry>,
    breakers: Addr<BreakerBoard>,
    actors: Mutex<HashMap<CanonicalKey, Addr<QuotaActor>>>,
    clock: Arc<dyn Clock>,
    owner: Owner,
    persister: Persister,
    /// The socket server's table of connected clients, when this process serves one.
    clients: OnceLock<Arc<ClientTable>>,
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
            actors: Mutex::new(HashMap::new()),
            clock,
            owner,
            persister,
            clients: OnceLock::new(),
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The same actors, clock and store acting for another `owner` (as the socket server
    /// acts for each client process): for in-process simulations of several processes.
    pub(crate) fn for_owner(&self, owner: Owner) -> Self {
        LocalAdmission::new(
            self.registry.clone(),
            self.breakers.clone(),
            self.clock.clone(),
            owner,
            self.persister.clone(),
        )
    }

    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// The tag of this process's own waiters in `scope`.
    pub(crate) fn tag(&self, scope: u64) -> WaiterTag {
        WaiterTag {
            scope,
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
            if let Some(addr) = self.actors.lock().ok().and_then(|m| m.get(key).cloned()) {
                if addr.connected() {
                    return Ok(addr);
                }
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
            m.insert(key.clone(), addr.clone());
        }
        Ok(addr)
    }

    /// Send a waiting request to the key's actor and await the answer. If the actor was
    /// retired between lookup and delivery, look it up again (at most twice).
    async fn ask<T, M>(
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

    /// Take a concurrency slot for `owner`, waiting at most `timeout`.
    pub(crate) async fn reserve(
        &self,
        tag: WaiterTag,
        key: &CanonicalKey,
        policy: Policy,
        timeout: Duration,
    ) -> Result<ReservationId, AdmissionError> {
        let now = self.now();
        self.ask(key, policy, |reply| Reserve {
            policy,
            owner: tag.owner,
            expires_at: now + timeout.max(DEFAULT_RESERVATION_TTL),
            deadline: now + timeout,
            tag,
            reply,
        })
        .await
    }

    /// Final admission under the reservation of `tag.owner`.
    pub(crate) async fn admit(
        &self,
        tag: WaiterTag,
        call: AdmitCall,
    ) -> Result<Grant, AdmissionError> {
        let deadline = self.now() + call.wait.timeout;
        let request = call.request;
        self.ask(&call.key, call.policy, |reply| Admit {
            request,
            deadline,
            tag,
            reply,
        })
        .await
    }

    /// Report an attempt's outcome (or refund its retry unit).
    pub(crate) async fn feedback(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        outcome: Outcome,
        admitted_at: Timestamp,
        refund_retry: bool,
    ) -> Result<(), AdmissionError> {
        self.actor(key, policy, false).await?.do_send(Feedback {
            outcome,
            admitted_at,
            refund_retry,
        });
        Ok(())
    }

    /// Pause the key for a server's Retry-After hint (every process's waiters honour it).
    pub(crate) async fn pause(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        hint: Duration,
    ) -> Result<(), AdmissionError> {
        self.actor(key, policy, false)
            .await?
            .do_send(Pause { hint });
        Ok(())
    }

    /// Passage through the scope's breaker, waiting at most `timeout` for it.
    pub(crate) async fn breaker_pass(
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

    /// Report what the scope's service answered (`None`: the call was never sent).
    pub(crate) fn breaker_report(
        &self,
        scope: BreakerScope,
        outcome: Option<Outcome>,
        probe: Option<ProbeId>,
    ) {
        self.breakers.do_send(BreakerReport {
            scope,
            outcome,
            probe,
        });
    }

    /// Every breaker's state.
    pub(crate) async fn breakers(&self) -> Result<Vec<BreakerStatus>, AdmissionError> {
        self.breakers
            .send(Breakers)
            .await
            .map_err(|_| AdmissionError::Stopped)
    }

    /// Give `owner`'s slot back.
    pub(crate) async fn release(
        &self,
        owner: Owner,
        key: &CanonicalKey,
        policy: Policy,
        reservation: ReservationId,
    ) -> Result<(), AdmissionError> {
        self.actor(key, policy, false)
            .await?
            .do_send(Release { reservation, owner });
        Ok(())
    }

    /// Cancel queued waiters on every key.
    pub(crate) async fn cancel(&self, scope: CancelScope) -> usize {
        self.registry
            .send(CancelEverywhere(scope))
            .await
            .unwrap_or(0)
    }

    /// Drop `owner`'s waiters and release its slots on every live key.
    pub(crate) async fn release_owner(&self, owner: Owner) -> usize {
        self.registry
            .send(ReleaseOwnerEverywhere(owner))
            .await
            .unwrap_or(0)
    }

    pub(crate) async fn status(&self) -> Result<Vec<KeyStatus>, AdmissionError> {
        self.registry
            .send(StatusAll)
            .await
            .map_err(|_| AdmissionError::Stopped)
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
            Ok(Err(reason)) => Err(AdmissionError::Storage(reason)),
            Err(_) => Err(AdmissionError::Stopped),
        }
    }
}
