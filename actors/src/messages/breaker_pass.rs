//! `BreakerPass`: may a call to a scope be sent? Answered by the
//! [`BreakerBoard`](crate::breaker_board::BreakerBoard).

use actix::Message;
use tokio::sync::oneshot;
use tollgate_quota::{BreakerScope, Passage, Timestamp};

use crate::AdmissionError;

/// Ask the scope's breaker for passage, waiting until `deadline` at most.
///
/// The answer is [`Passage::Go`] (closed), [`Passage::Probe`] (this caller is the one
/// probe of a half-open scope: report its answer with the lease id), or
/// [`AdmissionError::BreakerOpen`] at once when the breaker stays open past the deadline,
/// or when the deadline passes while the probe is still out. A caller whose deadline
/// allows waits: for the opening to end, or for the probe's answer.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct BreakerPass {
    /// The scope.
    pub scope: BreakerScope,
    /// Give up waiting at this instant.
    pub deadline: Timestamp,
    /// Where the answer goes (never [`Passage::Wait`]).
    pub reply: oneshot::Sender<Result<Passage, AdmissionError>>,
}
