//! Errors an admission caller can see.

use tollgate_quota::{Refusal, Timestamp};

/// Why an admission call did not produce a grant or reservation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The quota state refused the request as asked.
    #[error("{key}: {refusal}")]
    Refused { key: String, refusal: Refusal },
    /// The caller's deadline passed while it waited.
    #[error("{key}: the deadline passed while waiting for admission; raise the timeout or lower the load")]
    DeadlineExceeded { key: String },
    /// The waiter was cancelled (its scan was cancelled).
    #[error("{key}: cancelled before admission")]
    Cancelled { key: String },
    /// Quota state could not be persisted: dispatch stops rather than bypass coordination.
    #[error("admission stopped because quota state could not be stored: {0}")]
    Storage(String),
    /// This process could not reach or become the admission coordinator, or was refused.
    #[error("{0}")]
    Coordination(String),
    /// The scope's circuit breaker is open (or its probe is out) past the caller's
    /// deadline: the call is not sent.
    #[error("circuit open for {scope} after repeated transient failures; nothing is sent to it before {reopens_at} (raise the timeout to wait for its probe)")]
    BreakerOpen {
        scope: String,
        reopens_at: Timestamp,
    },
    /// Fleet mode's table cannot be used and the on-error mode is `stop`: the request is
    /// not sent. `reason` names the table and its error.
    #[error("{key}: refused because fleet admission is stopped: {reason} (TOLLGATE_FLEET_ON_ERROR=stop; use local-share to admit a local share of the rate meanwhile)")]
    Fleet { key: String, reason: String },
    /// The admission runtime has shut down.
    #[error("the admission runtime has stopped; start a new engine")]
    Stopped,
}
