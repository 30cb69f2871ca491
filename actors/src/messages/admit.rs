//! `Admit`: final admission for one physical attempt, just before the bytes go out.

use actix::Message;
use tokio::sync::oneshot;
use tollgate_quota::{AdmitRequest, Grant, Timestamp};

use super::WaiterTag;
use crate::AdmissionError;

/// Ask to start one attempt under a held reservation.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Admit {
    /// Reservation, cost and whether it is a retry.
    pub request: AdmitRequest,
    /// Give up waiting at this instant.
    pub deadline: Timestamp,
    /// Tried once, in FIFO order, by the poll the message arrives in: granted then, or
    /// answered `DeadlineExceeded` (the second key of a paired admission,
    /// [`crate::paired`]). A deadline a hair after the sender's clock cannot say this on
    /// the real clock: the hop to the actor outlasts it, and the waiter expires untried.
    pub once: bool,
    /// For cancellation.
    pub tag: WaiterTag,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<Grant, AdmissionError>>,
}
