//! `Feedback`: what an admitted attempt's response said about the key's capacity.

use actix::Message;
use tollgate_quota::{Outcome, Timestamp};

/// Report an attempt's outcome.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Feedback {
    /// What happened.
    pub outcome: Outcome,
    /// When the attempt was admitted (from its `Grant`).
    pub admitted_at: Timestamp,
    /// True if a retry unit was spent for an attempt that never dispatched: refund it.
    pub refund_retry: bool,
}
