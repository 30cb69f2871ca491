//! Errors an admission caller can see.
//!
//! Like `tollgate_storage::StorageError`, every failure says what went wrong in a form a
//! program can branch on (the variant, the typed [`CanonicalKey`], a
//! [`CoordinationErrorKind`]) and, for people, what to do next. The same error reaches a
//! caller whether the quota actors run in its process or the coordinator's (see
//! `remote::protocol::WireError` for the form it crosses the socket in).

use tollgate_quota::{Refusal, Timestamp};

use crate::key::CanonicalKey;

/// Why an admission call did not produce a grant or reservation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The quota state refused the request as asked.
    #[error("{key}: {refusal}")]
    Refused {
        /// The key refused.
        key: CanonicalKey,
        /// Why.
        refusal: Refusal,
    },
    /// The caller's deadline passed while it waited.
    #[error("{key}: the deadline passed while waiting for admission; raise the timeout or lower the load")]
    DeadlineExceeded {
        /// The key waited for.
        key: CanonicalKey,
    },
    /// The waiter was cancelled (its scan was cancelled).
    #[error("{key}: cancelled before admission")]
    Cancelled {
        /// The key waited for.
        key: CanonicalKey,
    },
    /// Quota state could not be persisted: dispatch stops rather than bypass coordination.
    #[error("admission stopped because quota state could not be stored: {0}")]
    Storage(String),
    /// This process could not reach or become the admission coordinator, or was refused.
    #[error("{reason}")]
    Coordination {
        /// What failed, for programs.
        kind: CoordinationErrorKind,
        /// What failed and what to do next, for people.
        reason: String,
    },
    /// The scope's circuit breaker is open (or its probe is out) past the caller's
    /// deadline: the call is not sent.
    #[error("circuit open for {scope} after repeated transient failures; nothing is sent to it before {reopens_at} (raise the timeout to wait for its probe)")]
    BreakerOpen {
        /// The breaker's scope (`partition/account/region/service`).
        scope: String,
        /// When it may let a call through again.
        reopens_at: Timestamp,
    },
    /// Fleet mode's table cannot be used and the on-error mode is `stop`: the request is
    /// not sent. `reason` names the table and its error.
    #[error("{key}: refused because fleet admission is stopped: {reason} (TOLLGATE_FLEET_ON_ERROR=stop; use local-share to admit a local share of the rate meanwhile)")]
    Fleet {
        /// The key refused.
        key: CanonicalKey,
        /// The table and its error.
        reason: String,
    },
    /// The admission runtime has shut down.
    #[error("the admission runtime has stopped; start a new engine")]
    Stopped,
}

/// What went wrong between a process and its admission coordinator.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CoordinationErrorKind {
    /// Nobody could be reached or became coordinator in time (a hung or stopped
    /// coordinator, a socket that cannot be connected to).
    Unreachable,
    /// The coordinator refused this process or its request (another OS user, a
    /// mismatched hello or protocol version, a request it cannot serve).
    Refused,
    /// The coordinator answered something that does not fit the request (another
    /// tollgate version).
    OutOfProtocol,
    /// This process could not take the coordinator role (opening the state, the lock,
    /// the socket).
    Takeover,
    /// This process could not start its side of the connection (a thread, a runtime).
    Client,
}

impl AdmissionError {
    /// A coordination failure of `kind`; `reason` says what to do next.
    pub fn coordination(kind: CoordinationErrorKind, reason: impl Into<String>) -> Self {
        AdmissionError::Coordination {
            kind,
            reason: reason.into(),
        }
    }

    /// The key the error is about, when it is about one.
    pub fn key(&self) -> Option<&CanonicalKey> {
        match self {
            AdmissionError::Refused { key, .. }
            | AdmissionError::DeadlineExceeded { key }
            | AdmissionError::Cancelled { key }
            | AdmissionError::Fleet { key, .. } => Some(key),
            _ => None,
        }
    }
}
