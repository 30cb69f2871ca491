//! `Pause`: a server's Retry-After hint, applied to the whole key.

use std::time::Duration;

use actix::Message;

/// Pause the key for `hint` (capped at [`tollgate_quota::MAX_PAUSE`]): no waiter of any
/// process is admitted before it ends.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Pause {
    /// How long the server asked for.
    pub hint: Duration,
}
