//! Credential-provider hiccups (issue 24, item 2; seed 000: "Retryable failures before
//! physical dispatch, including credential timeouts, retain bounded per-call retries
//! without publishing shared failure feedback").
//!
//! A real STS client over a fake transport, signing with a scripted provider on every call
//! (no identity cache). What must hold: a provider that times out (or whose STS answers
//! 503) and then answers lets the call succeed with one dispatch, no retry unit spent, no
//! penalty and no breaker failure on the key; a provider that never answers gives up
//! within the attempt limit, nothing sent; missing or expired credentials stay
//! `credentials` and are asked for once.

use crate::common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{future, ProvideCredentials};
use aws_sdk_sts::config::Credentials;
use aws_sdk_sts::operation::assume_role::AssumeRoleError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::error::ErrorMetadata;
use common::sts_gate::{sts_gate, Reply, StsGate, IDENTITY_XML};
use tollgate_actors::paused_system;
use tollgate_engine::aws::{
    AttemptOutcome, CallError, CallErrorKind, Jitter, RetryOutcome, RetrySettings,
};
use tollgate_quota::breaker::BreakerState;

/// What the scripted provider answers on one call.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Credentials,
    /// The provider (or the identity cache's load timeout) gave up.
    TimedOut,
    /// STS behind an assumed role answered 503.
    Sts503,
    /// No source had credentials.
    NotLoaded,
    /// STS said the base credentials expired.
    Expired,
}

/// Answers `script[n]` on its `n`th call, the last entry ever after.
#[derive(Debug, Clone)]
struct ScriptedProvider {
    calls: Arc<AtomicU32>,
    script: Arc<Vec<Answer>>,
}

fn provider(script: &[Answer]) -> ScriptedProvider {
    ScriptedProvider {
        calls: Arc::new(AtomicU32::new(0)),
        script: Arc::new(script.to_vec()),
    }
}

fn sts_error(code: &str, status: u16) -> CredentialsError {
    let raw = HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty());
    CredentialsError::provider_error(SdkError::service_error(
        AssumeRoleError::generic(ErrorMetadata::builder().code(code).build()),
        raw,
    ))
}

impl ProvideCredentials for ScriptedProvider {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
        let answer = self.script[n.min(self.script.len() - 1)];
        future::ProvideCredentials::ready(match answer {
            Answer::Credentials => Ok(Credentials::new(
                "AKIDTEST",
                "test-secret",
                None,
                None,
                "test",
            )),
            Answer::TimedOut => Err(CredentialsError::provider_timed_out(Duration::from_secs(5))),
            Answer::Sts503 => Err(sts_error("ServiceUnavailable", 503)),
            Answer::NotLoaded => Err(CredentialsError::not_loaded(
                "no providers in chain provided credentials",
            )),
            Answer::Expired => Err(sts_error("ExpiredToken", 400)),
        })
    }
}

fn harness(provider: ScriptedProvider) -> StsGate {
    let retry = RetrySettings {
        jitter: Jitter::None,
        ..RetrySettings::default()
    };
    sts_gate(
        provider,
        Reply {
            status: 200,
            body: IDENTITY_XML,
        },
        retry,
    )
}

impl StsGate {
    async fn call_once(&self) -> Result<(), CallError> {
        self.call(24).await
    }

    /// The key took no feedback: full retry allowance, no penalty, and its breaker never
    /// counted a failure.
    async fn assert_key_untouched(&self) {
        let status = self.handle.coordination().await.unwrap();
        let key = &status.keys[0].state;
        assert_eq!(key.retry_units, 20, "no retry unit spent: {key:?}");
        assert_eq!(key.penalty_steps, 0, "no penalty: {key:?}");
        assert_eq!(
            key.effective_rate_per_second,
            key.policy.rate_per_second(),
            "{key:?}"
        );
        for breaker in &status.breakers {
            assert!(
                matches!(breaker.state, BreakerState::Closed { failures: 0 }),
                "no breaker feedback: {breaker:?}"
            );
        }
    }
}

#[test]
fn a_provider_that_times_out_twice_then_answers_succeeds_with_one_dispatch_and_no_feedback() {
    paused_system().block_on(async {
        use Answer::*;
        let p = provider(&[TimedOut, TimedOut, Credentials]);
        let h = harness(p.clone());
        h.call_once().await.unwrap();
        assert_eq!(p.calls.load(Ordering::SeqCst), 3, "asked three times");
        assert_eq!(h.sent.load(Ordering::SeqCst), 1, "sent once");
        h.assert_key_untouched().await;
        let events: Vec<_> = h
            .telemetry
            .events()
            .iter()
            .map(|e| (e.attempt, e.dispatched, e.outcome, e.retry_outcome))
            .collect();
        assert_eq!(
            events,
            [
                (1, false, AttemptOutcome::Transient, RetryOutcome::Retry),
                (1, false, AttemptOutcome::Transient, RetryOutcome::Retry),
                (1, true, AttemptOutcome::Success, RetryOutcome::Done),
            ],
            "the retries before dispatch are not physical attempts"
        );
    });
}

#[test]
fn sts_answering_503_behind_an_assumed_role_is_retried_before_dispatch() {
    paused_system().block_on(async {
        use Answer::*;
        let p = provider(&[Sts503, Credentials]);
        let h = harness(p.clone());
        h.call_once().await.unwrap();
        assert_eq!(p.calls.load(Ordering::SeqCst), 2);
        assert_eq!(h.sent.load(Ordering::SeqCst), 1);
        h.assert_key_untouched().await;
    });
}

#[test]
fn a_provider_that_never_answers_gives_up_within_the_attempt_limit_sending_nothing() {
    paused_system().block_on(async {
        let p = provider(&[Answer::TimedOut]);
        let h = harness(p.clone());
        let err = h.call_once().await.unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Transient, "{err}");
        assert_eq!(err.attempts(), 0, "nothing was sent: {err}");
        assert!(err.message().contains("timed out"), "{err}");
        assert_eq!(
            p.calls.load(Ordering::SeqCst),
            6,
            "at most max_attempts (6) preparations"
        );
        assert_eq!(h.sent.load(Ordering::SeqCst), 0);
        h.assert_key_untouched().await;
        let last = h.telemetry.events().last().cloned().unwrap();
        assert_eq!(last.retry_outcome, RetryOutcome::AttemptsExhausted);
    });
}

#[test]
fn missing_or_expired_credentials_stay_credentials_and_are_asked_for_once() {
    paused_system().block_on(async {
        for answer in [Answer::NotLoaded, Answer::Expired] {
            let p = provider(&[answer]);
            let h = harness(p.clone());
            let err = h.call_once().await.unwrap_err();
            assert_eq!(err.kind(), CallErrorKind::Credentials, "{answer:?}: {err}");
            assert_eq!(p.calls.load(Ordering::SeqCst), 1, "{answer:?}");
            assert_eq!(h.sent.load(Ordering::SeqCst), 0, "{answer:?}");
            h.assert_key_untouched().await;
            let last = h.telemetry.events().last().cloned().unwrap();
            assert_eq!(last.retry_outcome, RetryOutcome::NotRetryable, "{answer:?}");
        }
    });
}
