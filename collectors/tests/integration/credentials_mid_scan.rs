//! Credentials that stop working mid-scan (issue 16): the gate's calls over a fake
//! transport, signed by a provider that gives credentials for a while and then fails (a
//! `credential_process` whose session ran out, its stderr holding a secret), or answered
//! by the service with `ExpiredTokenException`.
//!
//! What must hold: the failed call's kind is `Credentials` (reason kind `credentials`, not
//! `transient`), no retry is spent (one preparation, nothing re-sent, the key's retry
//! allowance untouched), the dataset is `partial` when a per-item read was lost and
//! `failed` when the listing was, and the secret reaches neither error nor report.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::sts_gate::{sts_gate, Reply, StsGate, IDENTITY_XML};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{future, ProvideCredentials};
use aws_sdk_sts::config::Credentials;
use tollgate_actors::paused_system;
use tollgate_collectors::output::ReasonKind;
use tollgate_collectors::report_builder::ReportBuilder;
use tollgate_collectors::DatasetStatus;
use tollgate_engine::aws::{CallError, CallErrorKind, RetryOutcome, RetrySettings};

const SECRET: &str = "TOLLGATE-TEST-SECRET-mid-scan";

/// Gives credentials `good` times, then fails as aws-config's `credential_process`
/// provider does when the process exits non-zero.
#[derive(Debug, Clone)]
struct ExpiringProvider {
    calls: Arc<AtomicU32>,
    good: u32,
}

impl ProvideCredentials for ExpiringProvider {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        future::ProvideCredentials::ready(if n < self.good {
            Ok(Credentials::new(
                "AKIDTEST",
                "test-secret",
                None,
                None,
                "test",
            ))
        } else {
            Err(CredentialsError::provider_error(format!(
                "Error retrieving credentials: external process exited with code exit status: 2. \
                 Stderr: session expired, aws_secret_access_key={SECRET}"
            )))
        })
    }
}

const EXPIRED_XML: &str = r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>ExpiredTokenException</Code><Message>The security token included in the request is expired</Message></Error>
  <RequestId>r2</RequestId>
</ErrorResponse>"#;

/// The gate over a transport answering `status`/`body` to every request, signing with
/// `provider` on every call.
fn harness(provider: ExpiringProvider, status: u16, body: &'static str) -> StsGate {
    sts_gate(provider, Reply { status, body }, RetrySettings::default())
}

impl StsGate {
    async fn call_mid_scan(&self) -> Result<(), CallError> {
        self.call(16).await
    }

    async fn retry_units(&self) -> u32 {
        self.handle.status().await.unwrap()[0].state.retry_units
    }

    /// No attempt event of the scan says "retry".
    fn assert_no_retry(&self) {
        let events = self.telemetry.events();
        assert!(
            events
                .iter()
                .all(|e| e.retry_outcome != RetryOutcome::Retry),
            "{events:?}"
        );
    }
}

fn provider(good: u32) -> ExpiringProvider {
    ExpiringProvider {
        calls: Arc::new(AtomicU32::new(0)),
        good,
    }
}

#[test]
fn credentials_failing_mid_scan_are_kind_credentials_and_spend_no_retry() {
    paused_system().block_on(async {
        let p = provider(2);
        let h = harness(p.clone(), 200, IDENTITY_XML);
        h.call_mid_scan().await.unwrap();
        h.call_mid_scan().await.unwrap();
        let err = h.call_mid_scan().await.unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Credentials, "{err}");
        assert_eq!(err.attempts(), 0, "nothing was sent: {err}");
        assert!(err.message().contains("exit status: 2"), "{err}");
        assert!(!err.to_string().contains(SECRET), "{err}");
        // One preparation asked the provider once; nothing more was sent.
        assert_eq!(p.calls.load(Ordering::SeqCst), 3);
        assert_eq!(h.sent.load(Ordering::SeqCst), 2);
        assert_eq!(h.retry_units().await, 20);
        h.assert_no_retry();
        let last = h.telemetry.events().last().cloned().unwrap();
        assert_eq!(last.retry_outcome, RetryOutcome::NotRetryable);
        assert!(!format!("{last:?}").contains(SECRET));

        // A per-item read lost: partial; the listing lost: failed. One reason each.
        let mut partial = ReportBuilder::new();
        partial.value_missing("kms:GetKeyLastUsage", "last_used_at", &err);
        partial.value_missing("kms:GetKeyLastUsage", "last_used_at", &err);
        let report = partial.finish();
        assert_eq!(report.status, DatasetStatus::Partial);
        assert_eq!(report.reasons.len(), 1);
        assert_eq!(
            (report.reasons[0].kind.as_str(), report.reasons[0].count),
            ("credentials", 2)
        );
        assert!(!report.reasons[0].message.contains(SECRET));
        let mut failed = ReportBuilder::new();
        failed.listing_failed("kms:ListKeys", &err);
        let report = failed.finish();
        assert_eq!(report.status, DatasetStatus::Failed);
        assert_eq!(report.reasons[0].kind, ReasonKind::Credentials);
    });
}

#[test]
fn an_expired_token_answer_is_kind_credentials_after_one_attempt() {
    paused_system().block_on(async {
        let h = harness(provider(u32::MAX), 400, EXPIRED_XML);
        let err = h.call_mid_scan().await.unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Credentials, "{err}");
        assert_eq!(
            (err.code(), err.attempts()),
            (Some("ExpiredTokenException"), 1)
        );
        assert!(!err.is_access_denied());
        assert_eq!(h.sent.load(Ordering::SeqCst), 1);
        assert_eq!(h.retry_units().await, 20);
        h.assert_no_retry();
    });
}
