//! `AdmissionBackend`: where an [`AdmissionHandle`](crate::AdmissionHandle)'s operations
//! go, and [`Slot`]: where a held reservation's later requests go.
//!
//! Two backends implement it: [`LocalAdmission`] (the quota actors run in this process)
//! and [`RemoteClient`] (they run in the coordinator, across the admission directory's
//! socket). Both take the same [`Operation`]s and give the same [`Answer`]s, so the handle
//! builds an operation and calls the trait, never asking which backend it has; the only
//! difference a caller could see is how a held slot is reached, and that is the
//! [`Slot`]'s: straight to the key's actor in process, or through the client with the
//! connection epoch a failover is detected by. Each kind of slot carries its own backend,
//! so there is no "local backend without an actor" to ignore.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::Addr;
use futures_util::future::BoxFuture;
use tollgate_quota::{Owner, Passage, Policy, ReservationId, Timestamp};

use crate::cleanup::Cleanup;
use crate::key::CanonicalKey;
use crate::local::LocalAdmission;
use crate::ops::{Answer, Operation};
use crate::quota_actor::QuotaActor;
use crate::remote::RemoteClient;
use crate::wait::WaitOptions;
use crate::AdmissionError;

/// What admission needs of where it runs (see the module docs).
pub(crate) trait AdmissionBackend: Send + Sync {
    /// The process identity reservations are recorded under.
    fn owner(&self) -> Owner;

    /// The admission clock's current instant.
    fn now(&self) -> Timestamp;

    /// Do `op` and wait for its answer.
    fn call(&self, op: Operation) -> BoxFuture<'_, Result<Answer, AdmissionError>>;

    /// Do `op` without waiting for its answer (feedback, pauses, releases, breaker
    /// reports).
    fn tell(&self, op: Operation);

    /// Take a slot for `key`: the reservation, and where its later requests go.
    fn reserve(
        &self,
        key: CanonicalKey,
        policy: Policy,
        wait: WaitOptions,
        pass: BreakerAsk,
    ) -> BoxFuture<'_, Result<(Reserved, Slot), AdmissionError>>;

    /// Have the current tokio runtime read the coordinator's answers; false when there is
    /// nothing to read (the actors run here) or outside a runtime.
    fn read_answers_here(&self) -> bool;

    /// The in-process actors, when they run here.
    fn local(&self) -> Option<&Arc<LocalAdmission>>;

    /// Stop admitting through this backend.
    fn shutdown(&self) -> BoxFuture<'_, Result<(), AdmissionError>>;
}

impl AdmissionBackend for Arc<LocalAdmission> {
    fn owner(&self) -> Owner {
        LocalAdmission::owner(self)
    }

    fn now(&self) -> Timestamp {
        LocalAdmission::now(self)
    }

    fn call(&self, op: Operation) -> BoxFuture<'_, Result<Answer, AdmissionError>> {
        Box::pin(self.serve(op, self.caller(), None))
    }

    fn tell(&self, op: Operation) {
        LocalAdmission::tell(self, op, None);
    }

    fn reserve(
        &self,
        key: CanonicalKey,
        policy: Policy,
        wait: WaitOptions,
        pass: BreakerAsk,
    ) -> BoxFuture<'_, Result<(Reserved, Slot), AdmissionError>> {
        Box::pin(async move {
            let op = reserve_op(key.clone(), policy, wait, pass);
            let reserved = reserved_of(self.serve(op, self.caller(), None).await?)?;
            let actor = self.actor(&key, policy, false).await?;
            let slot = Slot::Local {
                local: self.clone(),
                actor,
            };
            Ok((reserved, slot))
        })
    }

    fn read_answers_here(&self) -> bool {
        false
    }

    fn local(&self) -> Option<&Arc<LocalAdmission>> {
        Some(self)
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<(), AdmissionError>> {
        Box::pin(LocalAdmission::shutdown(self))
    }
}

impl AdmissionBackend for RemoteClient {
    fn owner(&self) -> Owner {
        RemoteClient::owner(self)
    }

    fn now(&self) -> Timestamp {
        RemoteClient::now(self)
    }

    fn call(&self, op: Operation) -> BoxFuture<'_, Result<Answer, AdmissionError>> {
        Box::pin(async move { Ok(RemoteClient::call(self, op).await?.0) })
    }

    fn tell(&self, op: Operation) {
        RemoteClient::tell(self, op);
    }

    fn reserve(
        &self,
        key: CanonicalKey,
        policy: Policy,
        wait: WaitOptions,
        pass: BreakerAsk,
    ) -> BoxFuture<'_, Result<(Reserved, Slot), AdmissionError>> {
        Box::pin(async move {
            let (reserved, epoch) = remote_reserve(self, key, policy, wait, pass).await?;
            let slot = Slot::Remote {
                client: self.clone(),
                epoch: AtomicU64::new(epoch),
            };
            Ok((reserved, slot))
        })
    }

    fn read_answers_here(&self) -> bool {
        RemoteClient::read_answers_here(self)
    }

    fn local(&self) -> Option<&Arc<LocalAdmission>> {
        None
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<(), AdmissionError>> {
        Box::pin(RemoteClient::shutdown(self))
    }
}

/// Whether a reservation also passes its key's scope's breaker, in the same round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BreakerAsk {
    /// Only the slot ([`Operation::Reserve`]).
    No,
    /// The slot, then the breaker's passage ([`Operation::ReservePass`]), then a try of
    /// the first attempt's admission at this cost, if any.
    Pass {
        /// The first attempt's cost, to try its admission at once.
        try_admit: Option<u32>,
    },
}

/// What a reservation answered: its slot, the breaker's passage when it was asked, and
/// the first attempt's grant instant when it was tried and granted.
pub(crate) type Reserved = (ReservationId, Option<Passage>, Option<Timestamp>);

/// The operation that reserves as `pass` says.
fn reserve_op(key: CanonicalKey, policy: Policy, wait: WaitOptions, pass: BreakerAsk) -> Operation {
    let (timeout, scope) = (wait.timeout, wait.scope);
    match pass {
        BreakerAsk::No => Operation::Reserve {
            key,
            policy,
            timeout,
            scope,
        },
        BreakerAsk::Pass { try_admit } => Operation::ReservePass {
            key,
            policy,
            timeout,
            scope,
            try_admit,
        },
    }
}

/// The reservation (and passage) in `answer`, or the out-of-protocol error.
fn reserved_of(answer: Answer) -> Result<Reserved, AdmissionError> {
    match answer {
        Answer::Reserved(id) => Ok((id, None, None)),
        Answer::ReservedPassed {
            reservation,
            passage,
            admitted_at,
        } => Ok((reservation, Some(passage), admitted_at)),
        other => Err(other.unexpected()),
    }
}

/// A reservation through the coordinator, and the connection epoch that answered it.
async fn remote_reserve(
    client: &RemoteClient,
    key: CanonicalKey,
    policy: Policy,
    wait: WaitOptions,
    pass: BreakerAsk,
) -> Result<(Reserved, u64), AdmissionError> {
    let (answer, epoch) = client.call(reserve_op(key, policy, wait, pass)).await?;
    Ok((reserved_of(answer)?, epoch))
}

/// Where a held reservation's requests go.
pub(crate) enum Slot {
    /// The key's actor runs in this process: the slot's messages go straight to it.
    Local {
        /// The actors' backend.
        local: Arc<LocalAdmission>,
        /// The key's actor.
        actor: Addr<QuotaActor>,
    },
    /// The coordinator is another process.
    Remote {
        /// The connection to it.
        client: RemoteClient,
        /// The connection epoch the reservation was made in: a reservation made under a
        /// coordinator that died before storing it is unknown to its successor.
        epoch: AtomicU64,
    },
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slot::Local { .. } => f.write_str("Local"),
            Slot::Remote { epoch, .. } => f
                .debug_struct("Remote")
                .field("epoch", &epoch.load(Ordering::Acquire))
                .finish(),
        }
    }
}

impl Slot {
    /// The admission clock's current instant.
    pub(crate) fn now(&self) -> Timestamp {
        match self {
            Slot::Local { local, .. } => local.now(),
            Slot::Remote { client, .. } => client.now(),
        }
    }

    /// Do `op` (one of the slot's) and wait for its answer.
    pub(crate) async fn call(&self, op: Operation) -> Result<Answer, AdmissionError> {
        match self {
            Slot::Local { local, actor } => {
                local.serve(op, local.caller(), Some(actor.clone())).await
            }
            Slot::Remote { client, .. } => Ok(client.call(op).await?.0),
        }
    }

    /// Do `op` (one of the slot's) without waiting for its answer.
    pub(crate) fn tell(&self, op: Operation) {
        match self {
            Slot::Local { local, actor } => local.tell(op, Some(actor)),
            Slot::Remote { client, .. } => client.tell(op),
        }
    }

    /// Tell the release `op`; whether it was handed over at once or queued (see
    /// [`Cleanup`]).
    pub(crate) fn tell_release(&self, op: Operation) -> Cleanup {
        match self {
            Slot::Local { local, actor } => {
                local.tell(op, Some(actor));
                // The release's record joins the persister's queue of failed writes.
                match local.store_failing() {
                    true => Cleanup::Queued,
                    false => Cleanup::Released,
                }
            }
            Slot::Remote { client, .. } => client.tell_release(op),
        }
    }

    /// Renew a remote slot's reservation after a failover: when the client has
    /// reconnected since this slot's reservation was made (a new epoch), reserve again in
    /// the current epoch and answer the fresh reservation's id (the slot now belongs to
    /// that epoch). `None` for a local slot, or a remote one made in the current epoch:
    /// its reservation still stands.
    pub(crate) async fn retake(
        &self,
        key: &CanonicalKey,
        policy: Policy,
        wait: WaitOptions,
    ) -> Option<Result<ReservationId, AdmissionError>> {
        let Slot::Remote { client, epoch } = self else {
            return None;
        };
        if client.epoch() == epoch.load(Ordering::Acquire) {
            return None;
        }
        Some(
            remote_reserve(client, key.clone(), policy, wait, BreakerAsk::No)
                .await
                .map(|((fresh, _, _), answered_in)| {
                    epoch.store(answered_in, Ordering::Release);
                    fresh
                }),
        )
    }
}
