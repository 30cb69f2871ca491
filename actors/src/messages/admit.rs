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
    /// A try, not a wait (the second key of a paired admission, [`crate::paired`]): the
    /// waiter's deadline becomes [`PAIR_TRY`](crate::paired::PAIR_TRY) after its
    /// *arrival* on the actor's clock (or `deadline`, if sooner), and the poll on arrival
    /// tries it at that instant. A deadline that short computed by the sender cannot say
    /// this on the real clock: the hop to the actor outlasts it, and the waiter expired
    /// untried.
    pub once: bool,
    /// For cancellation.
    pub tag: WaiterTag,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<Grant, AdmissionError>>,
}
