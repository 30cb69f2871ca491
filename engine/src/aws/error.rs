//! `CallError`: why a gated AWS call produced no result.
//!
//! One struct with a documented, `#[non_exhaustive]` kind (ripgrep's habit): collectors
//! branch on [`CallErrorKind`] to decide between "partial because throttled", "null
//! because access denied" and "stop, the scan was cancelled", and read [`CallError::code`]
//! for service answers they expect (`NoSuchLifecycleConfiguration`). Messages carry the
//! service's error message but never request or response payloads, headers or
//! credentials.

use std::fmt;

/// What kind of failure ended a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CallErrorKind {
    /// The service kept throttling until the attempts ran out.
    Throttled,
    /// Transient failures (5xx, timeouts, connection errors) until the attempts ran out.
    Transient,
    /// A non-retryable answer: access denied, validation, missing configuration,
    /// or a request that could not be built.
    Fatal,
    /// The call was cancelled (its scan was cancelled).
    Cancelled,
    /// The call's deadline passed (waiting for admission, in backoff or in flight).
    DeadlineExceeded,
    /// A retry was needed but the key's shared retry allowance is empty; `code`,
    /// `status` and `message` describe the last failure.
    RetryAllowanceExhausted,
    /// The circuit breaker of the call's scope (service, region, account) was open past
    /// the call's deadline, or its probe was still out at the deadline: nothing was sent.
    /// The message names the scope and when it lets a call through again.
    BreakerOpen,
    /// The key's calendar allowance is spent until a reset after the call's deadline;
    /// `message` names the reset instant. Nothing was sent.
    AllowanceExhausted,
    /// Admission itself failed: quota state could not be stored, the coordinator is
    /// unreachable, the runtime stopped, or the quota key is invalid. Nothing was sent.
    Admission,
    /// The caller's credentials could not be loaded (nothing was sent), or the service
    /// refused them as expired or unknown. Not retried; `message` says why, without any
    /// `credential_process` output.
    Credentials,
}

impl CallErrorKind {
    /// Whether the call lost to throttling or transient failures (the dataset is partial,
    /// not wrong): `Throttled`, `Transient`, `RetryAllowanceExhausted`.
    pub fn is_capacity(self) -> bool {
        matches!(
            self,
            CallErrorKind::Throttled
                | CallErrorKind::Transient
                | CallErrorKind::RetryAllowanceExhausted
                | CallErrorKind::BreakerOpen
        )
    }
}

impl fmt::Display for CallErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallErrorKind::Throttled => "throttled",
            CallErrorKind::Transient => "transient failure",
            CallErrorKind::Fatal => "failed",
            CallErrorKind::Cancelled => "cancelled",
            CallErrorKind::DeadlineExceeded => "deadline exceeded",
            CallErrorKind::BreakerOpen => "circuit open",
            CallErrorKind::RetryAllowanceExhausted => "retry allowance exhausted",
            CallErrorKind::AllowanceExhausted => "calendar allowance exhausted",
            CallErrorKind::Admission => "admission failed",
            CallErrorKind::Credentials => "credentials failed",
        })
    }
}

/// Why a gated AWS call produced no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub(crate) kind: CallErrorKind,
    pub(crate) operation: String,
    pub(crate) code: Option<String>,
    pub(crate) message: String,
    pub(crate) status: Option<u16>,
    pub(crate) attempts: u32,
}

impl CallError {
    pub(crate) fn new(kind: CallErrorKind, operation: &str, message: impl Into<String>) -> Self {
        CallError {
            kind,
            operation: operation.to_owned(),
            code: None,
            message: message.into(),
            status: None,
            attempts: 0,
        }
    }

    /// A failure found in an answer that succeeded on the wire (CloudWatch's
    /// `GetMetricData` naming a query's status other than `Complete`): the collectors
    /// report it like a failed call, with the code the answer gave.
    pub fn in_answer(
        kind: CallErrorKind,
        operation: &str,
        code: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        CallError {
            code,
            ..CallError::new(kind, operation, message)
        }
    }

    /// The same failure with the HTTP status that carried it.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> CallErrorKind {
        self.kind
    }

    /// The operation (`GetBucketLifecycleConfiguration`).
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The service's error code, when the service answered (`AccessDenied`).
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// The service's message or a description of the local failure.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status of the last response, when there was one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Physical attempts dispatched (0 when nothing was sent).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether the service refused access (`AccessDenied*`, `UnauthorizedOperation`,
    /// 403): the field is `null` with a reason, not a failed scan.
    pub fn is_access_denied(&self) -> bool {
        self.code.as_deref().is_some_and(|c| {
            c.starts_with("AccessDenied") || c == "UnauthorizedOperation" || c == "Forbidden"
        }) || (self.kind == CallErrorKind::Fatal && self.status == Some(403))
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.operation, self.kind)?;
        if let Some(code) = &self.code {
            write!(f, " ({code}")?;
            if let Some(status) = self.status {
                write!(f, ", HTTP {status}")?;
            }
            f.write_str(")")?;
        } else if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if self.attempts > 1 {
            write!(f, " after {} attempts", self.attempts)?;
        }
        Ok(())
    }
}

impl std::error::Error for CallError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_operation_kind_code_and_attempts() {
        let mut e = CallError::new(CallErrorKind::Throttled, "ListBuckets", "Rate exceeded");
        e.code = Some("SlowDown".into());
        e.status = Some(503);
        e.attempts = 6;
        assert_eq!(
            e.to_string(),
            "ListBuckets: throttled (SlowDown, HTTP 503): Rate exceeded after 6 attempts"
        );
        assert!(e.kind().is_capacity());
        assert!(!e.is_access_denied());
    }

    #[test]
    fn access_denied_by_code_or_403() {
        let mut e = CallError::new(CallErrorKind::Fatal, "GetKeyLastUsage", "");
        e.code = Some("AccessDeniedException".into());
        assert!(e.is_access_denied());
        let mut e = CallError::new(CallErrorKind::Fatal, "ListKeys", "");
        e.status = Some(403);
        assert!(e.is_access_denied());
    }
}
