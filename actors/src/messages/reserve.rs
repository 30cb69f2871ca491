//! `Reserve`: take one of the key's concurrency slots, waiting in FIFO order.

use actix::Message;
use tokio::sync::oneshot;
use tollgate_quota::{Owner, Policy, ReservationId, Timestamp};

use super::WaiterTag;
use crate::AdmissionError;

/// Ask for a concurrency slot under the caller's policy.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Reserve {
    /// The caller's policy for the key (the strictest of all callers' is in force).
    pub policy: Policy,
    /// Who will hold the slot.
    pub owner: Owner,
    /// When the slot lapses if never released.
    pub expires_at: Timestamp,
    /// Give up waiting at this instant.
    pub deadline: Timestamp,
    /// For cancellation.
    pub tag: WaiterTag,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<ReservationId, AdmissionError>>,
}
