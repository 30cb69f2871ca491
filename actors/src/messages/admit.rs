//! `Admit`: final admission for one physical attempt, just before the bytes go out.

use actix::Message;
use tokio::sync::oneshot;
use tollgate_quota::{AdmitRequest, Grant, Timestamp};

use super::WaiterTag;
use crate::AdmissionError;

/// How long the second key of a paired round is waited for from its arrival at its
/// actor: the shortest wait the admission clock counts (1 µs), so it answers "granted
/// now" or expires. Work that takes no time on the admission clock (a fleet block from an
/// in-memory table in paused time) still lands inside it; on the real clock, a fleet
/// block fetched from the table does not, and the round swaps its lead instead. Here,
/// beside [`Admit::once`], rather than in `paired`, so the quota actor's handler reads it
/// without depending on the coordinator's pairing.
pub const PAIR_TRY: std::time::Duration = std::time::Duration::from_micros(1);

/// Ask to start one attempt under a held reservation.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Admit {
    /// Reservation, cost and whether it is a retry.
    pub request: AdmitRequest,
    /// Give up waiting at this instant.
    pub deadline: Timestamp,
    /// A try, not a wait (the second key of a paired admission, `local::paired`): the
    /// waiter's deadline becomes [`PAIR_TRY`] after its
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
