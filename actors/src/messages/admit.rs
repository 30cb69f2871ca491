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
    /// For cancellation.
    pub tag: WaiterTag,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<Grant, AdmissionError>>,
}
