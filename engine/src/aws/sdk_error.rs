//! What a failed SDK call says: its error code, message and status, classified by the
//! taxonomy, without its payload.
//!
//! Split from the retry owner because the identity request uses it too, and because the
//! mapping from the SDK's error shapes (`ServiceError`, `DispatchFailure`, ...) to the
//! taxonomy's facts is its own small concern: in particular, a failure before dispatch
//! surfaces as a `DispatchFailure` too. A credentials error anywhere in the source chain
//! makes the failure a credentials failure, described by [`safe_description`] so that no
//! `credential_process` output reaches a report: not retried when the credentials are
//! missing, invalid or expired, retried before dispatch (kind
//! [`FailureKind::CredentialsProvider`]) when the provider timed out or its service
//! answered 5xx ([`crate::aws::credentials::provider`]).

use aws_credential_types::provider::error::CredentialsError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use aws_smithy_types::retry::ErrorKind as SmithyErrorKind;

use crate::aws::credentials::{provider, safe_description};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::taxonomy::{classify, ErrorClass, Failure, FailureKind};

/// A failed preparation, described without its payload.
#[derive(Debug, Clone)]
pub(crate) struct FailureFacts {
    pub class: ErrorClass,
    pub code: Option<String>,
    pub message: String,
    pub status: Option<u16>,
    /// An answer arrived that bears no mark of an AWS service: no error code and no
    /// request id header (`x-amzn-RequestId`, `x-amz-request-id`, `x-amz-id-2`), such as
    /// the HTML 500 an emulator answers for a service it lacks.
    pub unmarked: bool,
}

impl FailureFacts {
    pub(crate) fn into_error(
        self,
        kind: CallErrorKind,
        operation: &str,
        attempts: u32,
    ) -> CallError {
        CallError {
            kind,
            operation: operation.to_owned(),
            code: self.code,
            message: self.message,
            status: self.status,
            attempts,
        }
    }
}

/// Describe and classify an SDK error. `dispatched` says whether the request reached the
/// transport: before that, only credential-provider hiccups (timeouts, their service's
/// 5xx) and I/O are worth another try.
pub(crate) fn describe<E>(err: &SdkError<E, HttpResponse>, dispatched: bool) -> FailureFacts
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let status = err.raw_response().map(|r| r.status().as_u16());
    let request_id = err.raw_response().is_some_and(|r| {
        REQUEST_ID_HEADERS
            .iter()
            .any(|h| r.headers().get(*h).is_some())
    });
    let (kind, code, message) = match credentials_error(err) {
        Some(c) => (
            match provider::is_retryable(&provider::facts_of(c)) {
                true => FailureKind::CredentialsProvider,
                false => FailureKind::Credentials,
            },
            None,
            format!("AWS {}", safe_description(c)),
        ),
        None => facts_of(err, dispatched),
    };
    let class = classify(&Failure {
        code: code.as_deref(),
        message: Some(&message),
        status,
        kind,
    });
    let unmarked = status.is_some() && code.is_none() && !request_id;
    FailureFacts {
        class,
        code,
        message,
        status,
        unmarked,
    }
}

/// The headers in which AWS services return a request's id, on errors too.
const REQUEST_ID_HEADERS: [&str; 3] = ["x-amzn-requestid", "x-amz-request-id", "x-amz-id-2"];

/// Kind, code and message of an error that is not about credentials.
fn facts_of<E>(
    err: &SdkError<E, HttpResponse>,
    dispatched: bool,
) -> (FailureKind, Option<String>, String)
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match err {
        SdkError::ServiceError(se) => (
            FailureKind::Response,
            se.err().code().map(str::to_owned),
            se.err().message().unwrap_or_default().to_owned(),
        ),
        SdkError::ResponseError(_) => (
            FailureKind::Response,
            None,
            "the response could not be read".to_owned(),
        ),
        SdkError::TimeoutError(_) => (FailureKind::Timeout, None, "timed out".to_owned()),
        SdkError::DispatchFailure(d) => {
            let kind = if d.is_timeout() {
                FailureKind::Timeout
            } else if d.is_io() {
                FailureKind::Dispatch
            } else if d.is_user()
                || d.as_other() == Some(SmithyErrorKind::ClientError)
                || !dispatched
            {
                // Preparation failures other than credentials surface here too.
                FailureKind::Construction
            } else {
                FailureKind::Dispatch
            };
            (kind, None, error_chain(err))
        }
        SdkError::ConstructionFailure(_) => (FailureKind::Construction, None, error_chain(err)),
        _ => (FailureKind::Construction, None, error_chain(err)),
    }
}

/// The credentials error in `err`'s source chain, if there is one: the SDK could not load
/// credentials to sign with.
fn credentials_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a CredentialsError> {
    let mut source = err.source();
    while let Some(e) = source {
        if let Some(c) = e.downcast_ref::<CredentialsError>() {
            return Some(c);
        }
        source = e.source();
    }
    None
}

/// The error and its sources, joined: enough to act on, no payloads.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(e) = source {
        let text = e.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}
