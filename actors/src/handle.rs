//! `AdmissionHandle`: the `Send + Clone` door to admission, usable from any tokio runtime.
//!
//! Embedders, the engine and the CLI call these async methods and cannot tell whether this
//! process is the coordinator (the quota actors run here, on the admission thread or in the
//! caller's actix system in tests) or a client of another process's coordinator (requests
//! travel over the admission directory's Unix socket). A [`ReservationGuard`] holds one
//! concurrency slot; dropping it releases the slot, so a cancelled or panicking caller
//! cannot leak capacity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use tollgate_quota::key::QuotaKey;
use tollgate_quota::{
    AdmitRequest, BreakerScope, Grant, Outcome, Owner, Passage, Policy, ProbeId, Refusal,
    ReservationId, Timestamp,
};

use crate::key::{AdmitCall, CanonicalKey};
use crate::local::LocalAdmission;
use crate::messages::{CancelScope, Feedback, KeyStatus, Pause, Release};
use crate::quota_actor::QuotaActor;
use crate::remote::{CoordinationStatus, RemoteClient};
use crate::AdmissionError;

pub use crate::wait::{WaitOptions, DEFAULT_RESERVATION_TTL};

/// Where requests go: actors in this process, or the coordinator's socket.
#[derive(Clone)]
enum Backend {
    Local(Arc<LocalAdmission>),
    Remote(RemoteClient),
}

/// The door to admission. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct AdmissionHandle {
    backend: Backend,
}

impl std::fmt::Debug for AdmissionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.backend {
            Backend::Local(_) => "coordinator",
            Backend::Remote(_) => "client",
        };
        f.debug_struct("AdmissionHandle")
            .field("owner", &self.owner())
            .field("role", &kind)
            .finish()
    }
}

impl AdmissionHandle {
    pub(crate) fn local(local: Arc<LocalAdmission>) -> Self {
        AdmissionHandle {
            backend: Backend::Local(local),
        }
    }

    pub(crate) fn remote(client: RemoteClient) -> Self {
        AdmissionHandle {
            backend: Backend::Remote(client),
        }
    }

    pub(crate) fn as_local(&self) -> Option<&Arc<LocalAdmission>> {
        match &self.backend {
            Backend::Local(l) => Some(l),
            Backend::Remote(_) => None,
        }
    }

    /// A handle on the same quota actors that records reservations under `owner`: what the
    /// coordinator does for each client process, without the socket. For simulations of
    /// several processes in one (`tollgate replay`); `None` for a client handle. Shutting
    /// either handle down stops the shared actors.
    pub fn for_owner(&self, owner: Owner) -> Option<AdmissionHandle> {
        self.as_local()
            .map(|l| AdmissionHandle::local(Arc::new(l.for_owner(owner))))
    }

    /// Call from inside the tokio runtime that will await this handle's admissions: a
    /// client of another process's coordinator then has that runtime read the
    /// coordinator's answers itself, which spares each request a wake-up of the client's
    /// connection thread (on a current-thread runtime an answer wakes its caller on the
    /// same thread). The runtime needs its IO driver (`enable_io` or `enable_all`). If it
    /// later shuts down or stops being driven, the connection thread reads again. Returns
    /// false (and changes nothing) for the coordinator's own handle or outside a runtime.
    pub fn read_answers_here(&self) -> bool {
        match &self.backend {
            Backend::Local(_) => false,
            Backend::Remote(r) => r.read_answers_here(),
        }
    }

    /// True when the quota actors run in this process.
    pub fn is_coordinator(&self) -> bool {
        matches!(self.backend, Backend::Local(_))
    }

    /// The admission clock's current instant.
    pub fn now(&self) -> Timestamp {
        match &self.backend {
            Backend::Local(l) => l.now(),
            Backend::Remote(r) => r.now(),
        }
    }

    /// The process identity reservations are recorded under.
    pub fn owner(&self) -> Owner {
        match &self.backend {
            Backend::Local(l) => l.owner(),
            Backend::Remote(r) => r.owner(),
        }
    }

    /// Take a concurrency slot for `key`, waiting in FIFO order.
    pub async fn reserve(
        &self,
        key: &QuotaKey,
        policy: Policy,
        wait: WaitOptions,
    ) -> Result<ReservationGuard, AdmissionError> {
        let key = CanonicalKey::new(key);
        let (id, epoch, addr) = match &self.backend {
            Backend::Local(l) => {
                let id = l
                    .reserve(l.tag(wait.scope), &key, policy, wait.timeout)
                    .await?;
                (id, 0, Some(l.actor(&key, policy, false).await?))
            }
            Backend::Remote(r) => {
                let (id, epoch) = r.reserve(&key, policy, wait).await?;
                (id, epoch, None)
            }
        };
        Ok(ReservationGuard {
            handle: self.clone(),
            key,
            policy,
            addr,
            id: AtomicU64::new(id.0),
            epoch: AtomicU64::new(epoch),
            released: false,
        })
    }

    /// Passage through the circuit breaker of `key`'s scope (service + region + account,
    /// one breaker for every process): [`Passage::Go`], or [`Passage::Probe`] when this
    /// call is the scope's one probe (report its answer with the lease's id). Waits for
    /// the opening to end or the probe's answer if that comes within `timeout`; otherwise
    /// [`AdmissionError::BreakerOpen`] at once (never [`Passage::Wait`]).
    pub async fn breaker_pass(
        &self,
        key: &QuotaKey,
        timeout: Duration,
    ) -> Result<Passage, AdmissionError> {
        match &self.backend {
            Backend::Local(l) => l.breaker_pass(BreakerScope::of(key), timeout).await,
            Backend::Remote(r) => r.breaker_pass(&CanonicalKey::new(key), timeout).await,
        }
    }

    /// Report what the service of `key`'s scope answered a call that passed its breaker
    /// (`probe`: the lease, if the call was the probe). `None`: the call was never sent,
    /// which gives a probe lease up so the next waiter probes at once.
    pub fn breaker_report(&self, key: &QuotaKey, outcome: Option<Outcome>, probe: Option<ProbeId>) {
        match &self.backend {
            Backend::Local(l) => l.breaker_report(BreakerScope::of(key), outcome, probe),
            Backend::Remote(r) => r.breaker_report(&CanonicalKey::new(key), outcome, probe),
        }
    }

    /// Cancel every queued waiter of `scope` on every key; they never start. Returns how
    /// many were removed.
    pub async fn cancel_scope(&self, scope: u64) -> usize {
        match &self.backend {
            Backend::Local(l) => l.cancel(CancelScope::Scope(scope)).await,
            Backend::Remote(r) => r.cancel_scope(scope).await.unwrap_or(0),
        }
    }

    /// The state of every key this runtime knows (live or stored).
    pub async fn status(&self) -> Result<Vec<KeyStatus>, AdmissionError> {
        Ok(self.coordination().await?.keys)
    }

    /// Who coordinates, who is connected, and every key's state.
    pub async fn coordination(&self) -> Result<CoordinationStatus, AdmissionError> {
        match &self.backend {
            Backend::Local(l) => Ok(CoordinationStatus {
                coordinator_pid: l.owner().pid,
                clients: l.clients().map(|c| c.list()).unwrap_or_default(),
                keys: l.status().await?,
                breakers: l.breakers().await?,
            }),
            Backend::Remote(r) => r.status().await,
        }
    }

    /// Stop admitting through this handle. In the coordinator: retire every quota actor
    /// (saving graceful records) and flush the store; requests still waiting are answered
    /// `Stopped`. In a client: close the connection (and hand over any coordinator role this
    /// process took during a failover).
    pub async fn shutdown(&self) -> Result<(), AdmissionError> {
        match &self.backend {
            Backend::Local(l) => l.shutdown().await,
            Backend::Remote(r) => r.shutdown().await,
        }
    }
}

/// One held concurrency slot. Dropping it releases the slot.
#[derive(Debug)]
pub struct ReservationGuard {
    handle: AdmissionHandle,
    key: CanonicalKey,
    policy: Policy,
    /// The key's actor, when it runs in this process.
    addr: Option<Addr<QuotaActor>>,
    /// The reservation; a remote guard may take a new one after a coordinator failover.
    id: AtomicU64,
    /// The client connection epoch the reservation was made in (0 when local).
    epoch: AtomicU64,
    released: bool,
}

impl ReservationGuard {
    /// The canonical key.
    pub fn key(&self) -> &str {
        self.key.as_str()
    }

    /// The admission clock's current instant (a server's HTTP-date hints are read
    /// against it when the answer carries no `Date`).
    pub fn now(&self) -> Timestamp {
        self.handle.now()
    }

    /// The reservation id.
    pub fn id(&self) -> ReservationId {
        ReservationId(self.id.load(Ordering::Acquire))
    }

    /// Final admission for one attempt (cost 1 per request; `retry` spends a unit of the
    /// key's retry allowance).
    pub async fn admit(
        &self,
        cost: u32,
        retry: bool,
        wait: WaitOptions,
    ) -> Result<Grant, AdmissionError> {
        let mut call = AdmitCall {
            key: self.key.clone(),
            policy: self.policy,
            request: AdmitRequest {
                reservation: self.id(),
                cost,
                retry,
            },
            wait,
        };
        match &self.handle.backend {
            Backend::Local(l) => l.admit(l.tag(wait.scope), call).await,
            Backend::Remote(r) => {
                let first = r.admit(&call).await;
                // A reservation made under a coordinator that died before storing it is
                // unknown to its successor: take a fresh slot and try once more.
                let lost = matches!(
                    first,
                    Err(AdmissionError::Refused {
                        refusal: Refusal::UnknownReservation,
                        ..
                    })
                ) && r.epoch() != self.epoch.load(Ordering::Acquire);
                if !lost {
                    return first;
                }
                let (fresh, epoch) = r.reserve(&self.key, self.policy, wait).await?;
                self.id.store(fresh.0, Ordering::Release);
                self.epoch.store(epoch, Ordering::Release);
                call.request.reservation = fresh;
                r.admit(&call).await
            }
        }
    }

    /// Report an admitted attempt's outcome.
    pub fn feedback(&self, outcome: Outcome, grant: &Grant) {
        self.send_feedback(outcome, grant.admitted_at, false);
    }

    /// A server's Retry-After hint on a throttle or 503: pause the whole key, for every
    /// process, for `hint` (capped at [`tollgate_quota::MAX_PAUSE`] by the coordinator).
    pub fn pause(&self, hint: Duration) {
        match (&self.handle.backend, &self.addr) {
            (Backend::Local(_), Some(addr)) => addr.do_send(Pause { hint }),
            (Backend::Remote(r), _) => r.pause(&self.key, self.policy, hint),
            (Backend::Local(_), None) => {}
        }
    }

    /// Return a retry unit spent on an attempt that never dispatched.
    pub fn refund_retry(&self, grant: &Grant) {
        if grant.retry_spent {
            self.send_feedback(Outcome::Fatal, grant.admitted_at, true);
        }
    }

    fn send_feedback(&self, outcome: Outcome, admitted_at: Timestamp, refund_retry: bool) {
        match (&self.handle.backend, &self.addr) {
            (Backend::Local(_), Some(addr)) => addr.do_send(Feedback {
                outcome,
                admitted_at,
                refund_retry,
            }),
            (Backend::Remote(r), _) => {
                r.feedback(&self.key, self.policy, outcome, admitted_at, refund_retry)
            }
            (Backend::Local(_), None) => {}
        }
    }

    /// Release the slot now (also done on drop).
    pub fn release(mut self) {
        self.release_now();
    }

    fn release_now(&mut self) {
        if self.released {
            return;
        }
        self.released = true;
        let reservation = self.id();
        match (&self.handle.backend, &self.addr) {
            (Backend::Local(l), Some(addr)) => addr.do_send(Release {
                reservation,
                owner: l.owner(),
            }),
            (Backend::Remote(r), _) => r.release(&self.key, self.policy, reservation),
            (Backend::Local(_), None) => {}
        }
    }
}

impl Drop for ReservationGuard {
    fn drop(&mut self) {
        self.release_now();
    }
}
