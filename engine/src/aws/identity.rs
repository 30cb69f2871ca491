//! Caller identity: STS `GetCallerIdentity` once per run, before any gated call.
//!
//! The signing caller's account keys every quota, so it must be known before admission
//! can be shared with other processes. The request therefore cannot itself take part in
//! account-scoped admission (seed 000): it has its own small budget instead, at most
//! [`IDENTITY_MAX_ATTEMPTS`] attempts with backoff, within [`IDENTITY_TIMEOUT`] and the
//! caller's deadline, and it stops on cancellation.
//!
//! If it fails, the run goes on with `AccountScope::Unresolved(run-id)`: the caller uses
//! an isolated in-memory admission runtime ([`isolated_admission`]) for that run and
//! says so ([`CallerIdentity::unresolved_reason`]). Pacing and retry limits still apply
//! within the run; only cross-process sharing is lost.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sts::operation::get_caller_identity::GetCallerIdentityOutput;
use aws_smithy_async::time::SharedTimeSource;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::{monotonic_now, since};
use tollgate_actors::{AdmissionError, AdmissionRuntime, RuntimeConfig};
use tollgate_quota::key::{AccountId, RunId};
use tollgate_quota::{AccountScope, Partition};
use tollgate_storage::MemoryStore;

use crate::aws::backoff::{random_unit, RetrySettings, ServerDelay};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::sdk_error::describe;
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::{
    emit, AttemptEvent, AttemptOutcome, Attribution, RetryOutcome, TelemetrySink,
};

/// Attempts of the identity request.
pub const IDENTITY_MAX_ATTEMPTS: u32 = 3;
/// The identity request's own deadline.
pub const IDENTITY_TIMEOUT: Duration = Duration::from_secs(30);

/// Who signs this run's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerIdentity {
    /// The partition (`aws`, `aws-cn`, `aws-us-gov`), from the caller's ARN (or the
    /// region when unresolved).
    pub partition: Partition,
    /// The caller's account, or `unresolved:<run-id>`.
    pub account: AccountScope,
    /// The caller's ARN, when resolved.
    pub arn: Option<String>,
    /// Why the identity is unresolved (for output and telemetry).
    pub unresolved_reason: Option<String>,
}

impl CallerIdentity {
    /// A resolved identity.
    pub fn resolved(partition: Partition, account: AccountId, arn: Option<String>) -> Self {
        CallerIdentity {
            partition,
            account: AccountScope::Account(account),
            arn,
            unresolved_reason: None,
        }
    }

    /// The identity of a run whose caller could not be resolved.
    pub fn unresolved(run_id: RunId, region: Option<&str>, reason: impl Into<String>) -> Self {
        CallerIdentity {
            partition: partition_of_region(region),
            account: AccountScope::Unresolved(run_id),
            arn: None,
            unresolved_reason: Some(reason.into()),
        }
    }

    /// Whether the account is known (admission can be shared across processes).
    pub fn is_resolved(&self) -> bool {
        self.account.is_resolved()
    }
}

/// The partition a region belongs to, for an unresolved caller.
pub fn partition_of_region(region: Option<&str>) -> Partition {
    let name = match region {
        Some(r) if r.starts_with("cn-") => "aws-cn",
        Some(r) if r.starts_with("us-gov-") => "aws-us-gov",
        Some(r) if r.starts_with("us-iso-") => "aws-iso",
        Some(r) if r.starts_with("us-isob-") => "aws-iso-b",
        _ => "aws",
    };
    Partition::new(name).unwrap_or_else(|_| Partition::aws())
}

/// `arn:<partition>:<service>:<region>:<account>:<resource>` → partition and account.
pub fn parse_arn(arn: &str) -> Option<(Partition, AccountId)> {
    let arn: tollgate_quota::Arn = arn.parse().ok()?;
    Some((arn.partition().clone(), arn.account()?.clone()))
}

/// A fresh in-memory admission runtime on its own thread, for a run whose identity is
/// unresolved: its keys (`unresolved:<run-id>`) are never shared, so they need no
/// directory, lock or coordinator.
pub fn isolated_admission() -> Result<AdmissionRuntime, AdmissionError> {
    AdmissionRuntime::start(RuntimeConfig::for_this_process(
        Arc::new(MemoryStore::new()),
    ))
}

/// The operation [`resolve_identity`] sends.
const OPERATION: &str = "GetCallerIdentity";

/// Resolve the caller with `sts` (a client from [`sdk_config`](crate::aws::sdk_config)),
/// sending through `http` (the inner client: this request is not gated). Falls back to
/// `unresolved:<run_id>` on any failure except cancellation, which is an error.
pub async fn resolve_identity(
    sts: &aws_sdk_sts::Client,
    http: &SharedHttpClient,
    run_id: RunId,
    cancel: &CancellationToken,
    deadline: Instant,
    telemetry: &dyn TelemetrySink,
) -> Result<CallerIdentity, CallError> {
    let region = sts.config().region().map(|r| r.as_ref().to_owned());
    let deadline = deadline.min(monotonic_now() + IDENTITY_TIMEOUT);
    let settings = RetrySettings::default();
    let report = AttemptReport {
        sink: telemetry,
        attribution: Attribution::new(run_id.as_str().to_owned(), "caller-identity", &[]),
        time_source: sts.config().time_source(),
    };
    let cancelled = || CallError::new(CallErrorKind::Cancelled, OPERATION, "cancelled");
    let mut last = String::new();
    for number in 1..=IDENTITY_MAX_ATTEMPTS {
        let attempt = report.start(number);
        let send = sts
            .get_caller_identity()
            .customize()
            .config_override(aws_sdk_sts::Config::builder().http_client(http.clone()))
            .send();
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                report.emit(&attempt, None, AttemptOutcome::Cancelled, RetryOutcome::Cancelled);
                return Err(cancelled());
            }
            _ = tokio::time::sleep_until(deadline) => {
                report.emit(&attempt, None, AttemptOutcome::DeadlineExceeded, RetryOutcome::Deadline);
                last = "timed out".into();
                break;
            }
            result = send => result,
        };
        let err = match result {
            Ok(out) => {
                report.emit(
                    &attempt,
                    Some(200),
                    AttemptOutcome::Success,
                    RetryOutcome::Done,
                );
                return Ok(identity_of(&out, run_id, region.as_deref()));
            }
            Err(err) => err,
        };
        let status = err.raw_response().map(|r| r.status().as_u16());
        let facts = describe(&err, status.is_some());
        let (outcome, retryable) = attempt_outcome(facts.class);
        let delay = settings.backoff(number, facts.class, ServerDelay::default(), random_unit);
        let retry = retry_outcome(retryable, number, monotonic_now() + delay >= deadline);
        let mut event = report.event(&attempt, status, outcome, retry);
        event.error_code = facts.code.clone();
        emit(telemetry, &event);
        last = match facts.code {
            Some(code) => format!("{code}: {}", facts.message),
            None => facts.message,
        };
        if retry != RetryOutcome::Retry {
            break;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            _ = sleep(delay) => {}
        }
    }
    Ok(CallerIdentity::unresolved(
        run_id,
        region.as_deref(),
        format!(
            "caller identity could not be resolved ({last}); admission is isolated to this run"
        ),
    ))
}

/// The identity in a `GetCallerIdentity` answer: the partition from its ARN, the account
/// as answered (else from the ARN); unresolved when the ARN is missing or invalid.
fn identity_of(
    out: &GetCallerIdentityOutput,
    run_id: RunId,
    region: Option<&str>,
) -> CallerIdentity {
    let arn = out.arn().map(str::to_owned);
    let parsed = arn.as_deref().and_then(parse_arn);
    let account = out.account().and_then(|a| AccountId::new(a).ok());
    match (parsed, account) {
        (Some((partition, from_arn)), account) => {
            CallerIdentity::resolved(partition, account.unwrap_or(from_arn), arn)
        }
        (None, _) => CallerIdentity::unresolved(
            run_id,
            region,
            "GetCallerIdentity answered without a valid ARN",
        ),
    }
}

/// A failed attempt's outcome, and whether another attempt may see a different one.
fn attempt_outcome(class: ErrorClass) -> (AttemptOutcome, bool) {
    match class {
        ErrorClass::Throttled => (AttemptOutcome::Throttle, true),
        ErrorClass::Transient => (AttemptOutcome::Transient, true),
        ErrorClass::Fatal | ErrorClass::Credentials => (AttemptOutcome::Fatal, false),
    }
}

/// What follows failed attempt `number`: another one only if the failure is retryable,
/// attempts remain and the backoff ends before the deadline (`past_deadline`).
fn retry_outcome(retryable: bool, number: u32, past_deadline: bool) -> RetryOutcome {
    if !retryable {
        RetryOutcome::NotRetryable
    } else if number == IDENTITY_MAX_ATTEMPTS {
        RetryOutcome::AttemptsExhausted
    } else if past_deadline {
        RetryOutcome::Deadline
    } else {
        RetryOutcome::Retry
    }
}

/// One identity attempt: its number, and when it started (monotonic, and wall-clock
/// milliseconds on the client's time source).
struct Attempt {
    number: u32,
    started: Instant,
    started_at_ms: u64,
}

/// The telemetry of the identity attempts: each one's [`AttemptEvent`].
struct AttemptReport<'a> {
    sink: &'a dyn TelemetrySink,
    attribution: Attribution,
    time_source: Option<SharedTimeSource>,
}

impl AttemptReport<'_> {
    /// Attempt `number`, starting now.
    fn start(&self, number: u32) -> Attempt {
        let started_at_ms = self
            .time_source
            .as_ref()
            .and_then(|t| t.now().duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64);
        Attempt {
            number,
            started: monotonic_now(),
            started_at_ms,
        }
    }

    /// The event of `attempt`, ended now (`status`: the HTTP status, if it was sent).
    fn event(
        &self,
        attempt: &Attempt,
        status: Option<u16>,
        outcome: AttemptOutcome,
        retry: RetryOutcome,
    ) -> AttemptEvent {
        AttemptEvent {
            service: "sts".into(),
            operation: OPERATION.into(),
            quota: None,
            attempt: attempt.number,
            retry_count: attempt.number - 1,
            started_at_ms: attempt.started_at_ms,
            preparation_count: 1,
            queue_duration_ms: 0,
            transport_duration_ms: since(attempt.started).as_millis() as u64,
            dispatched: status.is_some(),
            status_code: status,
            outcome,
            retry_outcome: retry,
            error_code: None,
            attribution: self.attribution.clone(),
            cleanup_outcome: None,
            datapoints: None,
            unfiltered_quota: None,
            region: None,
        }
    }

    /// Emit the event of `attempt`.
    fn emit(
        &self,
        attempt: &Attempt,
        status: Option<u16>,
        outcome: AttemptOutcome,
        retry: RetryOutcome,
    ) {
        emit(self.sink, &self.event(attempt, status, outcome, retry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_partition_and_account_from_arns() {
        let (p, a) = parse_arn("arn:aws:iam::123456789012:user/alice").unwrap();
        assert_eq!((p.as_str(), a.as_str()), ("aws", "123456789012"));
        let (p, _) = parse_arn("arn:aws-cn:sts::123456789012:assumed-role/r/s").unwrap();
        assert_eq!(p.as_str(), "aws-cn");
        assert!(parse_arn("arn:aws:iam::12345:user/short").is_none());
        assert!(parse_arn("not-an-arn").is_none());
    }

    #[test]
    fn unresolved_scope_names_the_run() {
        let id =
            CallerIdentity::unresolved(RunId::new("run-7").unwrap(), Some("us-gov-west-1"), "x");
        assert_eq!(id.account.to_string(), "unresolved:run-7");
        assert_eq!(id.partition.as_str(), "aws-us-gov");
        assert!(!id.is_resolved());
    }
}
