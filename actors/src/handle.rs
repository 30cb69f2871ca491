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

use tollgate_quota::key::QuotaKey;
use tollgate_quota::{
    Grant, Outcome, Owner, Passage, Policy, ProbeId, Refusal, ReservationId, Timestamp,
};

use crate::backend::{AdmissionBackend, BreakerAsk, Slot};
use crate::key::CanonicalKey;
use crate::local::LocalAdmission;
use crate::messages::KeyStatus;
use crate::ops::{
    Answer, BudgetCharge, CoordinationStatus, LastBreakerReport, LastFeedback, Operation,
};
use crate::remote::RemoteClient;
use crate::AdmissionError;

pub use crate::cleanup::Cleanup;
pub use crate::wait::{WaitOptions, DEFAULT_RESERVATION_TTL};

/// The door to admission. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct AdmissionHandle {
    backend: Arc<dyn AdmissionBackend>,
    breakers: BreakerUse,
}

/// Whether this handle's callers consult the circuit breakers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BreakerUse {
    /// Every call asks its scope's breaker and reports to it (tollgate as shipped).
    #[default]
    On,
    /// Breakers are neither asked nor told: every passage is [`Passage::Go`], reports
    /// go nowhere. A diagnostic control (`TOLLGATE_BREAKERS=off`): what an outage costs
    /// without them (docs/benchmarks.md, "A DynamoDB outage through moto").
    Off,
}

impl std::fmt::Debug for AdmissionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_coordinator() {
            "coordinator"
        } else {
            "client"
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
            backend: Arc::new(local),
            breakers: BreakerUse::On,
        }
    }

    pub(crate) fn remote(client: RemoteClient) -> Self {
        AdmissionHandle {
            backend: Arc::new(client),
            breakers: BreakerUse::On,
        }
    }

    /// This handle with its callers consulting the breakers or not ([`BreakerUse::Off`]:
    /// the control of the outage bench).
    pub fn with_breakers(mut self, breakers: BreakerUse) -> Self {
        self.breakers = breakers;
        self
    }

    pub(crate) fn as_local(&self) -> Option<&Arc<LocalAdmission>> {
        self.backend.local()
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
        self.backend.read_answers_here()
    }

    /// True when the quota actors run in this process.
    pub fn is_coordinator(&self) -> bool {
        self.as_local().is_some()
    }

    /// The admission clock's current instant.
    pub fn now(&self) -> Timestamp {
        self.backend.now()
    }

    /// The process identity reservations are recorded under.
    pub fn owner(&self) -> Owner {
        self.backend.owner()
    }

    /// Take a concurrency slot for `key`, waiting in FIFO order.
    pub async fn reserve(
        &self,
        key: &QuotaKey,
        policy: Policy,
        wait: WaitOptions,
    ) -> Result<ReservationGuard, AdmissionError> {
        let (guard, _, _) = self
            .reserve_asking(key, policy, wait, BreakerAsk::No)
            .await?;
        Ok(guard)
    }

    /// [`reserve`](Self::reserve), then [`breaker_pass`](Self::breaker_pass) within what
    /// is left of `wait.timeout`, in one round trip to a coordinator: what a call does
    /// first. A refused passage gives the slot back and answers the breaker's error.
    ///
    /// `try_admit`: also try the first attempt's admission at that cost, without
    /// waiting; the grant, when the key admits it at once, is answered with the slot
    /// (no retry unit spent), and the attempt then needs no admission of its own. When
    /// it is not granted at once (others queue, no token now, a refusal), the answer
    /// says nothing of it and the attempt asks at dispatch as usual.
    pub async fn reserve_and_pass(
        &self,
        key: &QuotaKey,
        policy: Policy,
        wait: WaitOptions,
        try_admit: Option<u32>,
    ) -> Result<(ReservationGuard, Passage, Option<Grant>), AdmissionError> {
        let ask = match self.breakers {
            BreakerUse::On => BreakerAsk::Pass { try_admit },
            BreakerUse::Off => BreakerAsk::No,
        };
        let (guard, passage, admitted_at) = self.reserve_asking(key, policy, wait, ask).await?;
        let grant = admitted_at.map(|admitted_at| Grant {
            admitted_at,
            retry_spent: false,
        });
        Ok((guard, passage.unwrap_or(Passage::Go), grant))
    }

    async fn reserve_asking(
        &self,
        key: &QuotaKey,
        policy: Policy,
        wait: WaitOptions,
        ask: BreakerAsk,
    ) -> Result<(ReservationGuard, Option<Passage>, Option<Timestamp>), AdmissionError> {
        let key = CanonicalKey::new(key);
        let ((id, passage, admitted_at), slot) =
            self.backend.reserve(key.clone(), policy, wait, ask).await?;
        let guard = ReservationGuard {
            slot,
            key,
            policy,
            breakers: self.breakers,
            id: AtomicU64::new(id.0),
            released: false,
        };
        Ok((guard, passage, admitted_at))
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
        if self.breakers == BreakerUse::Off {
            return Ok(Passage::Go);
        }
        let key = CanonicalKey::new(key);
        match self
            .backend
            .call(Operation::BreakerPass { key, timeout })
            .await?
        {
            Answer::Passage(passage) => Ok(passage),
            other => Err(other.unexpected()),
        }
    }

    /// Report what the service of `key`'s scope answered a call that passed its breaker
    /// (`probe`: the lease, if the call was the probe). `None`: the call was never sent,
    /// which gives a probe lease up so the next waiter probes at once.
    pub fn breaker_report(&self, key: &QuotaKey, outcome: Option<Outcome>, probe: Option<ProbeId>) {
        if self.breakers == BreakerUse::Off {
            return;
        }
        self.backend.tell(Operation::BreakerReport {
            key: CanonicalKey::new(key),
            outcome,
            probe,
        });
    }

    /// Report an admitted attempt's outcome to a key it was charged to beside its own
    /// (a Cloud Control call's underlying operation, whose service throttled the
    /// handler): `admitted_at` is the attempt's grant, which charged every key at once.
    pub fn feedback_on(
        &self,
        key: &QuotaKey,
        policy: Policy,
        outcome: Outcome,
        admitted_at: Timestamp,
    ) {
        self.backend.tell(Operation::Feedback {
            key: CanonicalKey::new(key),
            policy,
            outcome,
            admitted_at,
            refund_retry: false,
        });
    }

    /// Cancel every queued waiter of `scope` on every key, in every process; they never
    /// start. Returns how many were removed, or why the coordinator could not be asked.
    pub async fn cancel_scope(&self, scope: u64) -> Result<usize, AdmissionError> {
        match self.backend.call(Operation::Cancel { scope }).await? {
            Answer::Cancelled(removed) => Ok(removed),
            other => Err(other.unexpected()),
        }
    }

    /// The state of every key this runtime knows (live or stored).
    pub async fn status(&self) -> Result<Vec<KeyStatus>, AdmissionError> {
        Ok(self.coordination().await?.keys)
    }

    /// Who coordinates, who is connected, and every key's state.
    pub async fn coordination(&self) -> Result<CoordinationStatus, AdmissionError> {
        match self.backend.call(Operation::Status).await? {
            Answer::Status(status) => Ok(status),
            other => Err(other.unexpected()),
        }
    }

    /// The counts of the quota actors' per-key and per-scope structures (see
    /// [`Footprint`](crate::Footprint)); `None` in a client, whose coordinator holds them.
    pub async fn footprint(&self) -> Option<Result<crate::Footprint, AdmissionError>> {
        match self.as_local() {
            Some(local) => Some(local.footprint().await),
            None => None,
        }
    }

    /// Stop admitting through this handle. In the coordinator: retire every quota actor
    /// (saving graceful records) and flush the store; requests still waiting are answered
    /// `Stopped`. In a client: close the connection (and hand over any coordinator role this
    /// process took during a failover).
    pub async fn shutdown(&self) -> Result<(), AdmissionError> {
        self.backend.shutdown().await
    }
}

/// One held concurrency slot. Dropping it releases the slot.
#[derive(Debug)]
pub struct ReservationGuard {
    /// Where the slot's requests go.
    slot: Slot,
    key: CanonicalKey,
    policy: Policy,
    /// Whether the handle that reserved consults breakers (a release's breaker report
    /// goes nowhere when it does not).
    breakers: BreakerUse,
    /// The reservation; a remote guard may take a new one after a coordinator failover.
    id: AtomicU64,
    released: bool,
}

impl ReservationGuard {
    /// The canonical key.
    pub fn key(&self) -> &str {
        self.key.as_str()
    }

    /// The key, typed.
    pub fn canonical_key(&self) -> &CanonicalKey {
        &self.key
    }

    /// The admission clock's current instant (a server's HTTP-date hints are read
    /// against it when the answer carries no `Date`).
    pub fn now(&self) -> Timestamp {
        self.slot.now()
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
        self.admit_as(wait, |key, policy, reservation| Operation::Admit {
            key,
            policy,
            reservation,
            cost,
            retry,
            timeout: wait.timeout,
            scope: wait.scope,
        })
        .await
    }

    /// Final admission for one attempt that also charges `budget_cost` to `budget` (a
    /// GetMetricData attempt's datapoint budget, under `budget_policy`): both keys are
    /// charged at one instant or neither is (`local::paired`). The grant is this key's:
    /// feedback, pauses and refunds go to it.
    pub async fn admit_with_budget(
        &self,
        cost: u32,
        retry: bool,
        budget: &QuotaKey,
        budget_policy: Policy,
        budget_cost: u32,
        wait: WaitOptions,
    ) -> Result<Grant, AdmissionError> {
        let budget = BudgetCharge {
            key: CanonicalKey::new(budget),
            policy: budget_policy,
            cost: budget_cost,
        };
        self.admit_with_budgets(cost, retry, vec![budget], wait)
            .await
    }

    /// Final admission for one attempt that also charges every one of `budgets` (a Cloud
    /// Control call's underlying operations, a GetMetricData attempt's datapoints): all
    /// keys are charged at one instant or none is (`local::paired`). No budgets is a
    /// plain [`ReservationGuard::admit`]. The grant is this key's: feedback, pauses and
    /// refunds go to it.
    pub async fn admit_with_budgets(
        &self,
        cost: u32,
        retry: bool,
        budgets: Vec<BudgetCharge>,
        wait: WaitOptions,
    ) -> Result<Grant, AdmissionError> {
        if budgets.is_empty() {
            return self.admit(cost, retry, wait).await;
        }
        self.admit_as(wait, |key, policy, reservation| {
            Operation::AdmitWithBudget {
                key,
                policy,
                reservation,
                cost,
                retry,
                timeout: wait.timeout,
                scope: wait.scope,
                budgets: budgets.clone(),
            }
        })
        .await
    }

    /// Ask the admission `make` builds for the held reservation.
    async fn admit_as(
        &self,
        wait: WaitOptions,
        make: impl Fn(CanonicalKey, Policy, ReservationId) -> Operation,
    ) -> Result<Grant, AdmissionError> {
        let admit = |reservation| make(self.key.clone(), self.policy, reservation);
        let first = self.slot.call(admit(self.id())).await;
        // A reservation made under a coordinator that died before storing it is unknown
        // to its successor: take a fresh slot and try once more.
        let lost = matches!(
            first,
            Err(AdmissionError::Refused {
                refusal: Refusal::UnknownReservation,
                ..
            })
        );
        let retaken = match lost {
            true => self.slot.retake(&self.key, self.policy, wait).await,
            false => None,
        };
        let answer = match retaken {
            Some(fresh) => {
                let fresh = fresh?;
                self.id.store(fresh.0, Ordering::Release);
                self.slot.call(admit(fresh)).await
            }
            None => first,
        }?;
        match answer {
            Answer::Admitted {
                admitted_at,
                retry_spent,
            } => Ok(Grant {
                admitted_at,
                retry_spent,
            }),
            other => Err(other.unexpected()),
        }
    }

    /// Report an admitted attempt's outcome.
    pub fn feedback(&self, outcome: Outcome, grant: &Grant) {
        self.send_feedback(outcome, grant.admitted_at, false);
    }

    /// A server's Retry-After hint on a throttle or 503: pause the whole key, for every
    /// process, for `hint` (capped at [`tollgate_quota::MAX_PAUSE`] by the coordinator).
    pub fn pause(&self, hint: Duration) {
        self.slot.tell(Operation::Pause {
            key: self.key.clone(),
            policy: self.policy,
            hint,
        });
    }

    /// Return a retry unit spent on an attempt that never dispatched.
    pub fn refund_retry(&self, grant: &Grant) {
        if grant.retry_spent {
            self.send_feedback(Outcome::Fatal, grant.admitted_at, true);
        }
    }

    fn send_feedback(&self, outcome: Outcome, admitted_at: Timestamp, refund_retry: bool) {
        self.slot.tell(Operation::Feedback {
            key: self.key.clone(),
            policy: self.policy,
            outcome,
            admitted_at,
            refund_retry,
        });
    }

    /// Release the slot now (also done on drop): whether the release was handed over at
    /// once or queued.
    pub fn release(mut self) -> Cleanup {
        self.release_now()
    }

    /// Release the slot with the call's last reports in the same message: `feedback` to
    /// the key (as [`feedback`](Self::feedback) or [`refund_retry`](Self::refund_retry)
    /// would send it) and `breaker` to the key's scope's breaker (as
    /// [`AdmissionHandle::breaker_report`] would), done before the release, in that
    /// order. One frame and one answer instead of three on a coordinator's socket.
    pub fn release_with(
        mut self,
        feedback: Option<LastFeedback>,
        breaker: Option<LastBreakerReport>,
    ) -> Cleanup {
        let breaker = breaker.filter(|_| self.breakers == BreakerUse::On);
        self.release_carrying(feedback, breaker)
    }

    fn release_now(&mut self) -> Cleanup {
        self.release_carrying(None, None)
    }

    fn release_carrying(
        &mut self,
        feedback: Option<LastFeedback>,
        breaker: Option<LastBreakerReport>,
    ) -> Cleanup {
        if self.released {
            return Cleanup::Released;
        }
        self.released = true;
        self.slot.tell_release(Operation::Release {
            key: self.key.clone(),
            policy: self.policy,
            reservation: self.id(),
            feedback,
            breaker,
        })
    }
}

impl Drop for ReservationGuard {
    fn drop(&mut self) {
        let _ = self.release_now();
    }
}
