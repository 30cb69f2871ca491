//! `WaitOptions`: how long a caller waits for admission, and the cancellation scope its
//! waiters belong to.
//!
//! Its own file because every layer carries it (the handle, the admission request in
//! `key`, the operation set, the actors' waiter tags) and none of them should import
//! another just for it.

use std::time::Duration;

/// Default reservation lifetime: the default discovery deadline (seed 000: 5 minutes).
pub const DEFAULT_RESERVATION_TTL: Duration = Duration::from_secs(300);

/// How a caller waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// Give up after waiting this long.
    pub timeout: Duration,
    /// The scan (or other cancellation scope) the request belongs to, if any:
    /// [`AdmissionHandle::cancel_scope`](crate::AdmissionHandle::cancel_scope) removes
    /// the queued waiters of one scope.
    pub scope: Option<u64>,
}

impl WaitOptions {
    /// Wait at most `timeout`, in cancellation scope `scope`.
    pub fn in_scope(timeout: Duration, scope: u64) -> Self {
        WaitOptions {
            timeout,
            scope: Some(scope),
        }
    }
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: DEFAULT_RESERVATION_TTL,
            scope: None,
        }
    }
}
