//! Which [`FleetErrorKind`] an SDK error is: decides degraded mode's wording, and whether a
//! conditional write lost a race (not an error at all).

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use tollgate_actors::fleet::{FleetError, FleetErrorKind};

/// The error code DynamoDB answers a failed condition with.
pub const CONDITION_FAILED: &str = "ConditionalCheckFailedException";

/// The kind of an error code (from the error body or header).
pub fn kind_of_code(code: &str) -> FleetErrorKind {
    match code {
        "ProvisionedThroughputExceededException"
        | "ThrottlingException"
        | "RequestLimitExceeded"
        | "Throttling"
        | "ThrottledException" => FleetErrorKind::Throttled,
        "AccessDeniedException"
        | "AccessDenied"
        | "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "MissingAuthenticationTokenException"
        | "ExpiredTokenException"
        | "IncompleteSignature" => FleetErrorKind::AccessDenied,
        "ResourceNotFoundException" => FleetErrorKind::NoTable,
        _ => FleetErrorKind::Other,
    }
}

/// True if `e` is a failed condition.
pub fn is_condition_failed<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::ServiceError(s) if s.err().code() == Some(CONDITION_FAILED))
}

/// `e` as a [`FleetError`] naming `table`.
pub fn classify<E, R>(e: &SdkError<E, R>, table: &str) -> FleetError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let (kind, message) = match e {
        SdkError::DispatchFailure(d) => (
            FleetErrorKind::Unreachable,
            format!(
                "no answer: {}",
                chain(e, d.as_connector_error().map(|c| c.to_string()))
            ),
        ),
        SdkError::TimeoutError(_) => (FleetErrorKind::Unreachable, "timed out".to_string()),
        SdkError::ConstructionFailure(_) => (
            // Most often: no credentials in the chain.
            FleetErrorKind::AccessDenied,
            format!("the request could not be built: {}", chain(e, None)),
        ),
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or("unknown");
            (
                kind_of_code(code),
                format!("{code}: {}", s.err().message().unwrap_or("no message")),
            )
        }
        SdkError::ResponseError(_) => (
            FleetErrorKind::Other,
            format!("unreadable answer: {}", chain(e, None)),
        ),
        _ => (FleetErrorKind::Other, chain(e, None)),
    };
    FleetError {
        kind,
        table: table.to_string(),
        message,
    }
}

fn chain(e: &dyn std::error::Error, first: Option<String>) -> String {
    let mut parts: Vec<String> = first.into_iter().collect();
    let mut source = e.source();
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    if parts.is_empty() {
        parts.push(e.to_string());
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttles_and_denials_are_told_apart() {
        let table = [
            (
                "ProvisionedThroughputExceededException",
                FleetErrorKind::Throttled,
            ),
            ("ThrottlingException", FleetErrorKind::Throttled),
            ("AccessDeniedException", FleetErrorKind::AccessDenied),
            ("UnrecognizedClientException", FleetErrorKind::AccessDenied),
            ("ResourceNotFoundException", FleetErrorKind::NoTable),
            ("ValidationException", FleetErrorKind::Other),
        ];
        for (code, kind) in table {
            assert_eq!(kind_of_code(code), kind, "{code}");
        }
    }
}
