//! How a preparation that did not succeed ended, with what the call needs to fail well:
//! the admission error, the failure's facts, and the call error each leaves.
//!
//! Split from the loop so that it reads as the steps it takes; the decision's view of an
//! end is [`AttemptEnd::ending`], the rest is the error the caller sees.

use tollgate_actors::AdmissionError;

use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::sdk_error::FailureFacts;

use super::decide::Ending;
use super::tally::Sent;

/// What happened to a preparation of an attempt that did not succeed.
pub(super) enum AttemptEnd {
    NeedsRefresh,
    BreakerOpened,
    Cancelled,
    DeadlinePassed,
    AdmissionFailed(AdmissionError),
    Failed(FailureFacts),
}

impl AttemptEnd {
    /// The decision's view.
    pub fn ending(&self) -> Ending {
        match self {
            AttemptEnd::NeedsRefresh => Ending::NeedsRefresh,
            AttemptEnd::BreakerOpened => Ending::BreakerOpened,
            AttemptEnd::Cancelled => Ending::Cancelled,
            AttemptEnd::DeadlinePassed => Ending::DeadlinePassed,
            AttemptEnd::AdmissionFailed(e) => Ending::Admission(e.into()),
            AttemptEnd::Failed(facts) => Ending::Failed(facts.class),
        }
    }

    /// The service's error code, if it answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            AttemptEnd::Failed(facts) => facts.code.as_deref(),
            _ => None,
        }
    }

    /// The failure's facts, kept for a later error when the call retries.
    pub fn into_failure(self) -> Option<FailureFacts> {
        match self {
            AttemptEnd::Failed(facts) => Some(facts),
            _ => None,
        }
    }

    /// The call error when the call gives up here as `kind`, after `attempts` dispatched
    /// attempts; `last` is the failure that asked for this attempt's retry, if any.
    pub fn into_error(
        self,
        kind: CallErrorKind,
        sent: Sent,
        operation: &str,
        last: Option<FailureFacts>,
        attempts: u32,
    ) -> CallError {
        match self {
            AttemptEnd::AdmissionFailed(e) => admission_error(&e, kind, operation, last, attempts),
            AttemptEnd::Failed(facts) => facts.into_error(kind, operation, attempts),
            _ => {
                let message = match sent {
                    Sent::Dispatched => "the request was aborted in flight",
                    Sent::Unsent => "nothing was sent",
                };
                let mut error = CallError::new(kind, operation, message);
                error.attempts = attempts;
                error
            }
        }
    }
}

/// The call error of an admission that did not grant. An empty retry allowance reports
/// the failure that asked for the retry, with the refusal appended.
pub(super) fn admission_error(
    e: &AdmissionError,
    kind: CallErrorKind,
    operation: &str,
    last: Option<FailureFacts>,
    attempts: u32,
) -> CallError {
    match (kind, last) {
        (CallErrorKind::RetryAllowanceExhausted, Some(last)) => {
            let mut error = last.into_error(kind, operation, attempts);
            error.message = format!("{}; {}", error.message, e);
            error
        }
        _ => {
            let mut error = CallError::new(kind, operation, e.to_string());
            error.attempts = attempts;
            error
        }
    }
}
