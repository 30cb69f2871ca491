//! `WaitOptions`: how long a caller waits for admission and which cancellation scope its
//! request belongs to.
//!
//! Its own file because every layer carries it: the handle takes it, the key's
//! [`AdmitCall`](crate::key::AdmitCall) travels with it, the socket's client and server
//! encode it. Kept beside the handle it made `key` import `handle`, the one back edge
//! that tied handle, key, the local backend, the actors, the registry and the schedules
//! into a cycle (`scripts/file-cycles`).

use std::time::Duration;

/// Default reservation lifetime: the default discovery deadline (seed 000: 5 minutes).
pub const DEFAULT_RESERVATION_TTL: Duration = Duration::from_secs(300);

/// How a caller waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// Give up after waiting this long.
    pub timeout: Duration,
    /// The scan (or other cancellation scope) the request belongs to; 0 for none.
    pub scope: u64,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: DEFAULT_RESERVATION_TTL,
            scope: 0,
        }
    }
}
