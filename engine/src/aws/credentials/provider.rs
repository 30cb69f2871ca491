//! Which credentials-provider failures are worth another preparation.
//!
//! Seed 000: "Retryable failures before physical dispatch, including credential timeouts,
//! retain bounded per-call retries without publishing shared failure feedback." A provider
//! that timed out, or whose own service (instance metadata, the SSO portal, STS for an
//! assumed role) answered 5xx, throttled or dropped the connection, may answer the next
//! time; missing, invalid or expired credentials will not, and stay `credentials`.
//!
//! Why a separate, pure decision: the SDK wraps a provider's failure as a
//! [`CredentialsError`] whose variant says only part of it (aws-config reports an STS 503
//! and an STS `ExpiredToken` alike as `ProviderError`). [`facts_of`] reads what the source
//! chain holds (the variant, a connector failure, an error code, an HTTP status), and
//! [`is_retryable`] decides from those facts alone, with a table of cases. What the retry
//! owner does with the answer (retry within the call's attempt limit, no retry unit, no
//! feedback to the key or the breaker, since nothing was sent) is
//! [`crate::aws::taxonomy::FailureKind::CredentialsProvider`]'s meaning.
//!
//! What the chain can show: a connector failure (`ConnectorError`: timeout, I/O) from any
//! source; the code of an unmodelled service error (`ErrorMetadata`); code and status of
//! STS `AssumeRole` / `AssumeRoleWithWebIdentity` errors and of instance-metadata error
//! responses. An SSO portal 5xx whose error is modelled reaches us without a status (the
//! engine does not link the SSO client's error types), so it stays `credentials` unless
//! its connection failed or it timed out.

use aws_config::imds::client::error::ImdsError;
use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_sts::operation::assume_role::AssumeRoleError;
use aws_sdk_sts::operation::assume_role_with_web_identity::AssumeRoleWithWebIdentityError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::{ConnectorError, SdkError};
use aws_smithy_types::error::metadata::{ErrorMetadata, ProvideErrorMetadata};

use crate::aws::taxonomy::{
    CREDENTIALS_CODES, THROTTLING_CODES, TOO_MANY_REQUESTS, TRANSIENT_CODES, TRANSIENT_STATUSES,
};

/// Which variant of [`CredentialsError`] the provider returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderVariant {
    /// No source had credentials.
    NotLoaded,
    /// The provider (or the identity cache's load timeout) gave up waiting.
    TimedOut,
    /// The configuration is wrong.
    InvalidConfiguration,
    /// The provider failed (its service answered an error, a process failed, ...).
    ProviderError,
    /// Anything else.
    Unhandled,
}

/// A connector failure somewhere in the provider's own request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderTransport {
    /// The provider's request timed out.
    Timeout,
    /// Connecting or I/O failed.
    Io,
}

/// What a provider's failure says, as far as retrying goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProviderFacts {
    pub variant: Option<ProviderVariant>,
    pub code: Option<String>,
    pub status: Option<u16>,
    pub transport: Option<ProviderTransport>,
}

/// Whether another preparation may get credentials: the provider timed out, or its service
/// said "later" (5xx, 429, a throttling or transient code) or could not be reached.
/// Missing, invalid, refused or expired credentials are not retried.
pub(crate) fn is_retryable(facts: &ProviderFacts) -> bool {
    match facts.variant {
        Some(ProviderVariant::TimedOut) => return true,
        Some(ProviderVariant::NotLoaded | ProviderVariant::InvalidConfiguration) => return false,
        _ => {}
    }
    if let Some(code) = facts.code.as_deref() {
        if CREDENTIALS_CODES.contains(&code) {
            return false;
        }
        if THROTTLING_CODES.contains(&code) || TRANSIENT_CODES.contains(&code) {
            return true;
        }
    }
    if let Some(status) = facts.status {
        return status == TOO_MANY_REQUESTS || TRANSIENT_STATUSES.contains(&status);
    }
    facts.transport.is_some()
}

/// Read the facts of `e`'s variant and source chain.
pub(crate) fn facts_of(e: &CredentialsError) -> ProviderFacts {
    let variant = match e {
        CredentialsError::CredentialsNotLoaded(_) => ProviderVariant::NotLoaded,
        CredentialsError::ProviderTimedOut(_) => ProviderVariant::TimedOut,
        CredentialsError::InvalidConfiguration(_) => ProviderVariant::InvalidConfiguration,
        CredentialsError::ProviderError(_) => ProviderVariant::ProviderError,
        _ => ProviderVariant::Unhandled,
    };
    let mut facts = ProviderFacts {
        variant: Some(variant),
        ..ProviderFacts::default()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        read_one(s, &mut facts);
        source = s.source();
    }
    facts
}

/// Take what one error of the chain says (the first answer of each kind wins).
fn read_one(s: &(dyn std::error::Error + 'static), facts: &mut ProviderFacts) {
    if let Some(c) = s.downcast_ref::<ConnectorError>() {
        if c.is_timeout() {
            facts.transport.get_or_insert(ProviderTransport::Timeout);
        } else if c.is_io() {
            facts.transport.get_or_insert(ProviderTransport::Io);
        }
    } else if let Some(m) = s.downcast_ref::<ErrorMetadata>() {
        if facts.code.is_none() {
            facts.code = m.code().map(str::to_owned);
        }
    } else if let Some(e) = s.downcast_ref::<SdkError<AssumeRoleError, HttpResponse>>() {
        read_sdk_error(e, facts);
    } else if let Some(e) =
        s.downcast_ref::<SdkError<AssumeRoleWithWebIdentityError, HttpResponse>>()
    {
        read_sdk_error(e, facts);
    } else if let Some(e) = s.downcast_ref::<ImdsError>() {
        match e {
            ImdsError::ErrorResponse(r) => {
                facts.status.get_or_insert(r.response().status().as_u16());
            }
            ImdsError::IoError(_) => {
                facts.transport.get_or_insert(ProviderTransport::Io);
            }
            _ => {}
        }
    }
}

fn read_sdk_error<E: ProvideErrorMetadata>(
    e: &SdkError<E, HttpResponse>,
    facts: &mut ProviderFacts,
) {
    if let Some(raw) = e.raw_response() {
        facts.status.get_or_insert(raw.status().as_u16());
    }
    match e {
        SdkError::ServiceError(se) if facts.code.is_none() => {
            facts.code = se.err().code().map(str::to_owned);
        }
        SdkError::TimeoutError(_) => {
            facts.transport.get_or_insert(ProviderTransport::Timeout);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;

    use super::*;

    fn facts(
        variant: ProviderVariant,
        code: Option<&str>,
        status: Option<u16>,
        transport: Option<ProviderTransport>,
    ) -> ProviderFacts {
        ProviderFacts {
            variant: Some(variant),
            code: code.map(str::to_owned),
            status,
            transport,
        }
    }

    #[test]
    fn each_provider_failure_is_retried_or_not() {
        use ProviderTransport::*;
        use ProviderVariant::*;
        #[rustfmt::skip]
        let table: &[(&str, ProviderFacts, bool)] = &[
            ("a provider timeout is retried", facts(TimedOut, None, None, None), true),
            ("no credentials anywhere is not", facts(NotLoaded, None, None, None), false),
            ("not loaded stays so even after an I/O failure (IMDS absent)", facts(NotLoaded, None, None, Some(Io)), false),
            ("invalid configuration is not", facts(InvalidConfiguration, None, Some(503), None), false),
            ("STS answering 503 is retried", facts(ProviderError, None, Some(503), None), true),
            ("STS answering 500 InternalFailure is retried", facts(ProviderError, Some("InternalFailure"), Some(500), None), true),
            ("STS throttling is retried", facts(ProviderError, Some("Throttling"), Some(400), None), true),
            ("a 429 is retried", facts(ProviderError, None, Some(429), None), true),
            ("STS refusing the role is not", facts(ProviderError, Some("AccessDenied"), Some(403), None), false),
            ("expired base credentials are not, whatever the status", facts(ProviderError, Some("ExpiredToken"), Some(500), None), false),
            ("an unknown client error is not", facts(ProviderError, None, Some(400), None), false),
            ("a connection dropped on the way to STS is retried", facts(ProviderError, None, None, Some(Io)), true),
            ("a timed-out request to the SSO portal is retried", facts(ProviderError, None, None, Some(Timeout)), true),
            ("a failed credential_process is not", facts(ProviderError, None, None, None), false),
            ("unhandled with nothing more is not", facts(Unhandled, None, None, None), false),
        ];
        for (case, facts, want) in table {
            assert_eq!(is_retryable(facts), *want, "{case}: {facts:?}");
        }
    }

    fn raw(status: u16) -> HttpResponse {
        HttpResponse::new(
            StatusCode::try_from(status).expect("a status"),
            SdkBody::empty(),
        )
    }

    #[test]
    fn facts_are_read_from_the_chain() {
        let timed_out = CredentialsError::provider_timed_out(Duration::from_secs(5));
        assert_eq!(
            facts_of(&timed_out).variant,
            Some(ProviderVariant::TimedOut)
        );

        let sts_503 = CredentialsError::provider_error(SdkError::service_error(
            AssumeRoleError::generic(ErrorMetadata::builder().code("ServiceUnavailable").build()),
            raw(503),
        ));
        let f = facts_of(&sts_503);
        assert_eq!(
            (f.code.as_deref(), f.status),
            (Some("ServiceUnavailable"), Some(503))
        );
        assert!(is_retryable(&f));

        let expired = CredentialsError::provider_error(SdkError::service_error(
            AssumeRoleError::generic(ErrorMetadata::builder().code("ExpiredToken").build()),
            raw(400),
        ));
        assert!(!is_retryable(&facts_of(&expired)));

        let io = CredentialsError::provider_error(
            SdkError::<AssumeRoleError, HttpResponse>::dispatch_failure(ConnectorError::io(
                "connection reset".into(),
            )),
        );
        let f = facts_of(&io);
        assert_eq!(f.transport, Some(ProviderTransport::Io));
        assert!(is_retryable(&f));

        let process = CredentialsError::provider_error("external process exited with code 1");
        assert!(!is_retryable(&facts_of(&process)));
        let missing = CredentialsError::not_loaded("no providers in chain provided credentials");
        assert!(!is_retryable(&facts_of(&missing)));
    }
}
