//! `AdmissionHandle`: the `Send + Clone` door to admission, usable from any tokio runtime.
//!
//! Embedders, the engine and the CLI call these async methods; the actors run elsewhere
//! (on the admission thread, or in the caller's actix system in tests). A
//! [`ReservationGuard`] holds one concurrency slot; dropping it releases the slot, so a
//! cancelled or panicking caller cannot leak capacity.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use tokio::sync::oneshot;
use tollgate_quota::key::QuotaKey;
use tollgate_quota::{
    AdmitRequest, Clock, Grant, Outcome, Owner, Policy, ReservationId, Timestamp,
};

use crate::messages::{Admit, CancelScope, Feedback, KeyStatus, Release, Reserve, WaiterTag};
use crate::persist::Persister;
use crate::quota_actor::QuotaActor;
use crate::registry::{CancelEverywhere, Lookup, Registry, Shutdown, StatusAll};
use crate::AdmissionError;

/// Default reservation lifetime: the default discovery deadline (seed 000: 5 minutes).
pub const DEFAULT_RESERVATION_TTL: Duration = Duration::from_secs(300);

/// How a caller waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// Give up after waiting this long.
    pub timeout: Duration,
    /// The scan (or other cancellation scope) the request belongs to; 0 for none.
    pub scope: u64,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: DEFAULT_RESERVATION_TTL,
            scope: 0,
        }
    }
}

struct Inner {
    registry: Addr<Registry>,
    actors: Mutex<HashMap<String, Addr<QuotaActor>>>,
    clock: Arc<dyn Clock>,
    owner: Owner,
    persister: Persister,
}

/// The door to admission. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct AdmissionHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AdmissionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionHandle")
            .field("owner", &self.inner.owner)
            .finish()
    }
}

impl AdmissionHandle {
    pub(crate) fn new(
        registry: Addr<Registry>,
        clock: Arc<dyn Clock>,
        owner: Owner,
        persister: Persister,
    ) -> Self {
        AdmissionHandle {
            inner: Arc::new(Inner {
                registry,
                actors: Mutex::new(HashMap::new()),
                clock,
                owner,
                persister,
            }),
        }
    }

    /// The admission clock's current instant.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// The process identity reservations are recorded under.
    pub fn owner(&self) -> Owner {
        self.inner.owner
    }

    async fn actor(
        &self,
        key: &str,
        policy: Policy,
        fresh: bool,
    ) -> Result<Addr<QuotaActor>, AdmissionError> {
        if !fresh {
            if let Some(addr) = self
                .inner
                .actors
                .lock()
                .ok()
                .and_then(|m| m.get(key).cloned())
            {
                if addr.connected() {
                    return Ok(addr);
                }
            }
        }
        let addr = self
            .inner
            .registry
            .send(Lookup {
                key: key.to_owned(),
                policy,
            })
            .await
            .map_err(|_| AdmissionError::Stopped)?;
        if let Ok(mut m) = self.inner.actors.lock() {
            m.insert(key.to_owned(), addr.clone());
        }
        Ok(addr)
    }

    /// Send a waiting request to the key's actor and await the answer. If the actor was
    /// retired between lookup and delivery, look it up again (at most twice).
    async fn ask<T, M>(
        &self,
        key: &str,
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

    /// Take a concurrency slot for `key`, waiting in FIFO order.
    pub async fn reserve(
        &self,
        key: &QuotaKey,
        policy: Policy,
        wait: WaitOptions,
    ) -> Result<ReservationGuard, AdmissionError> {
        let key = key.to_string();
        let now = self.now();
        let owner = self.inner.owner;
        let id = self
            .ask(&key, policy, |reply| Reserve {
                policy,
                owner,
                expires_at: now + wait.timeout.max(DEFAULT_RESERVATION_TTL),
                deadline: now + wait.timeout,
                tag: WaiterTag {
                    scope: wait.scope,
                    owner,
                },
                reply,
            })
            .await?;
        let addr = self.actor(&key, policy, false).await?;
        Ok(ReservationGuard {
            handle: self.clone(),
            key,
            policy,
            addr,
            id,
            released: false,
        })
    }

    /// Cancel every queued waiter of `scope` on every key; they never start. Returns how
    /// many were removed.
    pub async fn cancel_scope(&self, scope: u64) -> usize {
        self.inner
            .registry
            .send(CancelEverywhere(CancelScope::Scope(scope)))
            .await
            .unwrap_or(0)
    }

    /// The state of every key this runtime knows (live or stored).
    pub async fn status(&self) -> Result<Vec<KeyStatus>, AdmissionError> {
        self.inner
            .registry
            .send(StatusAll)
            .await
            .map_err(|_| AdmissionError::Stopped)
    }

    /// Retire every quota actor (saving graceful records) and flush the store. Requests
    /// still waiting are answered `Stopped`.
    pub async fn shutdown(&self) -> Result<(), AdmissionError> {
        let _ = self.inner.registry.send(Shutdown).await;
        let persister = self.inner.persister.clone();
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

/// One held concurrency slot. Dropping it releases the slot.
#[derive(Debug)]
pub struct ReservationGuard {
    handle: AdmissionHandle,
    key: String,
    policy: Policy,
    addr: Addr<QuotaActor>,
    id: ReservationId,
    released: bool,
}

impl ReservationGuard {
    /// The canonical key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The reservation id.
    pub fn id(&self) -> ReservationId {
        self.id
    }

    /// Final admission for one attempt (cost 1 per request; `retry` spends a unit of the
    /// key's retry allowance).
    pub async fn admit(
        &self,
        cost: u32,
        retry: bool,
        wait: WaitOptions,
    ) -> Result<Grant, AdmissionError> {
        let now = self.handle.now();
        let owner = self.handle.inner.owner;
        let request = AdmitRequest {
            reservation: self.id,
            cost,
            retry,
        };
        self.handle
            .ask(&self.key, self.policy, |reply| Admit {
                request,
                deadline: now + wait.timeout,
                tag: WaiterTag {
                    scope: wait.scope,
                    owner,
                },
                reply,
            })
            .await
    }

    /// Report an admitted attempt's outcome.
    pub fn feedback(&self, outcome: Outcome, grant: &Grant) {
        self.addr.do_send(Feedback {
            outcome,
            admitted_at: grant.admitted_at,
            refund_retry: false,
        });
    }

    /// Return a retry unit spent on an attempt that never dispatched.
    pub fn refund_retry(&self, grant: &Grant) {
        if grant.retry_spent {
            self.addr.do_send(Feedback {
                outcome: tollgate_quota::Outcome::Fatal,
                admitted_at: grant.admitted_at,
                refund_retry: true,
            });
        }
    }

    /// Release the slot now (also done on drop).
    pub fn release(mut self) {
        self.release_now();
    }

    fn release_now(&mut self) {
        if !self.released {
            self.released = true;
            self.addr.do_send(Release {
                reservation: self.id,
            });
        }
    }
}

impl Drop for ReservationGuard {
    fn drop(&mut self) {
        self.release_now();
    }
}
