//! Errors an admission caller can see.
//!
//! Like `tollgate_storage::StorageError`, every failure says what went wrong in a form a
//! program can branch on (the variant, the typed [`CanonicalKey`], a
//! [`CoordinationErrorKind`] or [`StoreFailureKind`]) and, for people, what to do next;
//! a storage failure keeps the storage error it came from. The same error reaches a
//! caller whether the quota actors run in its process or the coordinator's (see
//! `remote::protocol::WireError` for the form it crosses the socket in).

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tollgate_quota::{Refusal, Timestamp};
use tollgate_storage::StorageError;

use crate::key::CanonicalKey;

/// Why an admission call did not produce a grant or reservation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The quota state refused the request as asked.
    Refused {
        /// The key refused.
        key: CanonicalKey,
        /// Why.
        refusal: Refusal,
    },
    /// The caller's deadline passed while it waited.
    DeadlineExceeded {
        /// The key waited for.
        key: CanonicalKey,
    },
    /// The waiter was cancelled (its scan was cancelled).
    Cancelled {
        /// The key waited for.
        key: CanonicalKey,
    },
    /// Quota state could not be persisted: dispatch stops rather than bypass coordination.
    Storage(StoreFailure),
    /// This process could not reach or become the admission coordinator, or was refused.
    Coordination {
        /// What failed, for programs.
        kind: CoordinationErrorKind,
        /// What failed and what to do next, for people.
        reason: String,
    },
    /// The scope's circuit breaker is open (or its probe is out) past the caller's
    /// deadline: the call is not sent.
    BreakerOpen {
        /// The breaker's scope (`partition/account/region/service`).
        scope: String,
        /// When it may let a call through again.
        reopens_at: Timestamp,
    },
    /// Fleet mode's table cannot be used and the on-error mode is `stop`: the request is
    /// not sent. `reason` names the table and its error.
    Fleet {
        /// The key refused.
        key: CanonicalKey,
        /// The table and its error.
        reason: String,
    },
    /// The admission runtime has shut down.
    Stopped,
}

impl fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdmissionError::Refused { key, refusal } => write!(f, "{key}: {refusal}"),
            AdmissionError::DeadlineExceeded { key } => write!(
                f,
                "{key}: the deadline passed while waiting for admission; raise the timeout \
                 or lower the load"
            ),
            AdmissionError::Cancelled { key } => write!(f, "{key}: cancelled before admission"),
            AdmissionError::Storage(failure) => write!(
                f,
                "admission stopped because quota state could not be stored: {failure}"
            ),
            AdmissionError::Coordination { reason, .. } => f.write_str(reason),
            AdmissionError::BreakerOpen { scope, reopens_at } => write!(
                f,
                "circuit open for {scope} after repeated transient failures; nothing is sent \
                 to it before {reopens_at} (raise the timeout to wait for its probe)"
            ),
            AdmissionError::Fleet { key, reason } => write!(
                f,
                "{key}: refused because fleet admission is stopped: {reason} \
                 (TOLLGATE_FLEET_ON_ERROR=stop; use local-share to admit a local share of the \
                 rate meanwhile)"
            ),
            AdmissionError::Stopped => {
                f.write_str("the admission runtime has stopped; start a new engine")
            }
        }
    }
}

/// A storage failure's source is the storage error's cause: its message is already in
/// this error's (see [`StoreFailure`]).
impl Error for AdmissionError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            AdmissionError::Storage(failure) => failure.source(),
            _ => None,
        }
    }
}

/// What went wrong between a process and its admission coordinator.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

/// Why quota state could not be stored (or read back): what kind of failure, the key it
/// stopped (when one key's record failed), a message that ends in what to do next, and
/// the storage error itself when it happened in this process.
///
/// `Display` prints the message (which holds the storage error's, path included);
/// [`Error::source`] is then the storage error's own cause, so a printed chain does not
/// repeat the message; [`StoreFailure::storage_error`] gives the storage error itself
/// (its kind and path). Across the coordinator socket the kind, key and message travel;
/// the storage error stays in the coordinator.
#[derive(Debug, Clone)]
pub struct StoreFailure {
    kind: StoreFailureKind,
    key: Option<CanonicalKey>,
    message: String,
    error: Option<Arc<StorageError>>,
}

/// What kind of storage failure stopped admission.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StoreFailureKind {
    /// The store refused a write or a flush (full disk, permissions, I/O).
    Write,
    /// A key's stored record cannot be read or decoded.
    Unreadable,
    /// A key's state could not be encoded as a record.
    Encode,
    /// The admission state was closed before the record was stored (its coordinator is
    /// handing over or stopping).
    Closed,
    /// The persistence queue broke (a thread panicked holding it).
    Poisoned,
}

impl StoreFailure {
    /// A failure of `kind` with `message` (which says what to do next).
    pub fn new(kind: StoreFailureKind, message: impl Into<String>) -> Self {
        StoreFailure {
            kind,
            key: None,
            message: message.into(),
            error: None,
        }
    }

    /// The store refused a write or a flush: `error`, kept.
    pub fn write(error: StorageError) -> Self {
        StoreFailure {
            kind: StoreFailureKind::Write,
            key: None,
            message: error.message().to_owned(),
            error: Some(Arc::new(error)),
        }
    }

    /// The failure, as it stopped `key` (its message then names the key).
    pub fn of_key(mut self, key: CanonicalKey) -> Self {
        if self.key.is_none() {
            self.message = format!("{key}: {}", self.message);
            self.key = Some(key);
        }
        self
    }

    /// A failure of `key` whose `message` names it already.
    pub(crate) fn keyed(kind: StoreFailureKind, key: CanonicalKey, message: String) -> Self {
        StoreFailure {
            kind,
            key: Some(key),
            message,
            error: None,
        }
    }

    /// What kind of failure.
    pub fn kind(&self) -> StoreFailureKind {
        self.kind
    }

    /// The key whose record failed, when one did.
    pub fn key(&self) -> Option<&CanonicalKey> {
        self.key.as_ref()
    }

    /// The message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The storage error, when the failure happened in this process.
    pub fn storage_error(&self) -> Option<&StorageError> {
        self.error.as_deref()
    }
}

impl fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for StoreFailure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.error.as_deref().and_then(Error::source)
    }
}

/// Equal when kind, key and message are: the storage error kept in one process is not
/// part of what two failures are.
impl PartialEq for StoreFailure {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.key, &self.message) == (other.kind, &other.key, &other.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tollgate_storage::StorageErrorKind;

    #[test]
    fn a_write_failure_keeps_the_storage_error_and_names_the_key_it_stopped() {
        let io = std::io::Error::other("disk full");
        let storage = StorageError::new(
            StorageErrorKind::Io,
            Some(Path::new("/adm/state")),
            "cannot write /adm/state: disk full; free space and retry",
        )
        .with_source(io);
        let key =
            CanonicalKey::parse("aws/123456789012/us-east-1/logs:DescribeLogStreams").unwrap();
        let failure = StoreFailure::write(storage).of_key(key.clone());
        assert_eq!(failure.kind(), StoreFailureKind::Write);
        assert_eq!(failure.key(), Some(&key));
        let kept = failure.storage_error().expect("the storage error is kept");
        assert_eq!(kept.kind(), StorageErrorKind::Io);
        assert_eq!(kept.path(), Some(Path::new("/adm/state")));
        let error = AdmissionError::Storage(failure);
        assert_eq!(
            error.to_string(),
            "admission stopped because quota state could not be stored: \
             aws/123456789012/us-east-1/logs:DescribeLogStreams: cannot write /adm/state: \
             disk full; free space and retry"
        );
        let cause = error.source().expect("the storage error's cause");
        assert_eq!(cause.to_string(), "disk full");
    }

    #[test]
    fn a_failure_names_its_key_once() {
        let key =
            CanonicalKey::parse("aws/123456789012/us-east-1/logs:DescribeLogStreams").unwrap();
        let failure = StoreFailure::new(StoreFailureKind::Closed, "closed")
            .of_key(key.clone())
            .of_key(key);
        assert_eq!(
            failure.message(),
            "aws/123456789012/us-east-1/logs:DescribeLogStreams: closed"
        );
    }
}
