//! The retry owner: one logical call, its reservation, its physical attempts.
//!
//! Why does the engine own retries instead of the SDK? The SDK's retry quota is per
//! client instance (seed 004): a fleet of processes each holding a full budget multiplies
//! load exactly when a service struggles. Here the SDK makes one attempt per `send`
//! (`RetryConfig::disabled()`), and this loop decides about the next one:
//!
//! - the concurrency reservation is taken before the first preparation and held across
//!   every retry (a [`ReservationGuard`]); it is released at the end;
//! - at most `max_attempts` physical attempts (default 6);
//! - each retry re-enters final admission with `retry = true`, spending one unit of the
//!   key's shared retry allowance; an empty allowance stops retries
//!   ([`CallErrorKind::RetryAllowanceExhausted`]), never first attempts;
//! - throttled and transient failures retry after jittered exponential backoff that is
//!   never shorter than the server's `Retry-After` ([`crate::aws::backoff`]);
//! - every dispatched attempt's outcome is fed back to the key: success refunds a retry
//!   unit and steps the penalty down, throttles and transient failures deepen it, fatal
//!   answers say nothing about capacity;
//! - a signed request that waited too long for admission is prepared again
//!   (`preparationCount` + 1) without counting an attempt or spending a retry;
//! - failures before dispatch (credential resolution, request construction) retry only
//!   when transient, within the same attempt limit, without touching the shared
//!   allowance or feedback: nothing reached the service.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use tokio::time::{sleep, sleep_until, Instant};
use tollgate_actors::{AdmissionError, ReservationGuard, WaitOptions};
use tollgate_quota::{Outcome, QuotaKey, Refusal};

use crate::aws::backoff::random_unit;
use crate::aws::call::{CallContext, GateInner};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::gated::{AttemptPlan, AttemptRecord, GatedHttpClient};
use crate::aws::sdk_error::{describe, FailureFacts};
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::{
    emit, AttemptEvent, AttemptOutcome, Attribution, CleanupOutcome, RetryOutcome,
};

fn kind_of(class: ErrorClass) -> CallErrorKind {
    match class {
        ErrorClass::Throttled => CallErrorKind::Throttled,
        ErrorClass::Transient => CallErrorKind::Transient,
        ErrorClass::Fatal => CallErrorKind::Fatal,
    }
}

fn outcome_of(class: ErrorClass) -> (Outcome, AttemptOutcome) {
    match class {
        ErrorClass::Throttled => (Outcome::Throttled, AttemptOutcome::Throttle),
        ErrorClass::Transient => (Outcome::Transient, AttemptOutcome::Transient),
        ErrorClass::Fatal => (Outcome::Fatal, AttemptOutcome::Fatal),
    }
}

/// Builds one call's telemetry events.
struct Events<'a> {
    gate: &'a GateInner,
    service: &'a str,
    operation: &'a str,
    quota: Option<String>,
    attribution: Attribution,
}

/// Per-preparation measurements.
#[derive(Debug, Clone, Copy)]
struct Prep {
    attempt: u32,
    preparation: u32,
    started_at_ms: u64,
    started: Instant,
}

impl Events<'_> {
    fn event(
        &self,
        prep: Prep,
        record: &AttemptRecord,
        outcome: AttemptOutcome,
        retry: RetryOutcome,
        code: Option<&str>,
    ) -> AttemptEvent {
        let end = record.dispatched_at.unwrap_or_else(Instant::now);
        let transport = match (record.dispatched_at, record.finished_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            (Some(a), None) => Instant::now().saturating_duration_since(a),
            _ => Duration::ZERO,
        };
        AttemptEvent {
            service: self.service.to_owned(),
            operation: self.operation.to_owned(),
            quota: self.quota.clone(),
            attempt: prep.attempt,
            retry_count: prep.attempt.saturating_sub(1),
            started_at_ms: prep.started_at_ms,
            preparation_count: prep.preparation,
            queue_duration_ms: end.saturating_duration_since(prep.started).as_millis() as u64,
            transport_duration_ms: transport.as_millis() as u64,
            dispatched: record.dispatched_at.is_some(),
            status_code: record.status,
            outcome,
            retry_outcome: retry,
            error_code: code.map(str::to_owned),
            attribution: self.attribution.clone(),
            cleanup_outcome: None,
        }
    }

    fn emit(&self, event: &AttemptEvent) {
        emit(&*self.gate.telemetry, event);
    }
}

/// How one preparation ended, as the loop sees it.
enum Ended<T> {
    Success(T),
    Cancelled,
    Deadline,
    Refresh,
    Admission(AdmissionError),
    Failed(FailureFacts),
}

/// Run one logical call. See the module docs.
pub(crate) async fn run<T, E, F, Fut>(
    gate: &GateInner,
    ctx: &CallContext,
    service: &str,
    operation: &str,
    key: QuotaKey,
    mut send: F,
) -> Result<T, CallError>
where
    F: FnMut(GatedHttpClient) -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let events = Events {
        gate,
        service,
        operation,
        quota: Some(key.to_string()),
        attribution: Attribution::new(ctx.scan_id.to_string(), ctx.collector, &ctx.datasets),
    };
    let policy = gate.policies.policy_for_key(&key);
    let mut prep = Prep {
        attempt: 1,
        preparation: 0,
        started_at_ms: gate.admission.now().as_micros() / 1_000,
        started: Instant::now(),
    };
    let fail = |kind, message: &str| CallError::new(kind, operation, message);

    // The concurrency reservation, held across every retry.
    let remaining = ctx.deadline.saturating_duration_since(Instant::now());
    let reserve = gate.admission.reserve(
        &key,
        policy,
        WaitOptions {
            timeout: remaining,
            scope: ctx.scan_id.scope(),
        },
    );
    let reserved = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(AdmissionError::Cancelled { key: key.to_string() }),
        reserved = reserve => reserved,
    };
    let guard = match reserved {
        Ok(guard) => Arc::new(guard),
        Err(e) => {
            let (outcome, retry, error) = admission_failure(&e, operation, None, 0);
            let mut event = events.event(prep, &AttemptRecord::default(), outcome, retry, None);
            event.cleanup_outcome = Some(CleanupOutcome::Released);
            events.emit(&event);
            return Err(error);
        }
    };

    let mut dispatched_attempts = 0u32;
    let mut local_retries = 0u32;
    let mut last_failure: Option<FailureFacts> = None;
    let max_attempts = gate.retry.max_attempts.get();
    let (result, mut final_event) = loop {
        prep.preparation += 1;
        prep.started = Instant::now();
        prep.started_at_ms = gate.admission.now().as_micros() / 1_000;
        let http = GatedHttpClient::new(
            gate.http.clone(),
            AttemptPlan {
                guard: guard.clone(),
                retry: prep.attempt > 1 && dispatched_attempts > 0,
                cost: 1,
                scope: ctx.scan_id.scope(),
                cancel: ctx.cancel.clone(),
                deadline: ctx.deadline,
                max_wait: gate.signed_request_max_wait,
            },
        );
        let recorder = http.recorder();
        let sent = send(http);
        let raced = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => None,
            _ = sleep_until(ctx.deadline) => Some(None),
            result = sent => Some(Some(result)),
        };
        let record = recorder.take();
        let dispatched = record.dispatched_at.is_some();
        let ended = match raced {
            None => Ended::Cancelled,
            Some(None) => Ended::Deadline,
            Some(Some(Ok(value))) => Ended::Success(value),
            Some(Some(Err(_))) if record.needs_refresh => Ended::Refresh,
            Some(Some(Err(_))) if record.cancelled => Ended::Cancelled,
            Some(Some(Err(_))) if record.admission_error.is_some() => {
                Ended::Admission(record.admission_error.clone().expect("checked"))
            }
            Some(Some(Err(err))) => Ended::Failed(describe(&err, dispatched)),
        };
        if dispatched {
            dispatched_attempts += 1;
        }
        match ended {
            Ended::Success(value) => {
                if let Some(grant) = &record.grant {
                    guard.feedback(Outcome::Success, grant);
                }
                let event = events.event(
                    prep,
                    &record,
                    AttemptOutcome::Success,
                    RetryOutcome::Done,
                    None,
                );
                break (Ok(value), event);
            }
            Ended::Refresh => {
                events.emit(&events.event(
                    prep,
                    &record,
                    AttemptOutcome::Reprepare,
                    RetryOutcome::Reprepare,
                    None,
                ));
                continue;
            }
            Ended::Cancelled | Ended::Deadline => {
                // An aborted request says nothing about capacity: no feedback. A retry
                // unit granted to an attempt that never went out comes back.
                if let (Some(grant), false) = (&record.grant, dispatched) {
                    guard.refund_retry(grant);
                }
                let (kind, outcome, retry) = match ended {
                    Ended::Cancelled => (
                        CallErrorKind::Cancelled,
                        AttemptOutcome::Cancelled,
                        RetryOutcome::Cancelled,
                    ),
                    _ => (
                        CallErrorKind::DeadlineExceeded,
                        AttemptOutcome::DeadlineExceeded,
                        RetryOutcome::Deadline,
                    ),
                };
                let event = events.event(prep, &record, outcome, retry, None);
                let message = if dispatched {
                    "the request was aborted in flight"
                } else {
                    "nothing was sent"
                };
                let mut error = fail(kind, message);
                error.attempts = dispatched_attempts;
                break (Err(error), event);
            }
            Ended::Admission(e) => {
                let (outcome, retry, error) =
                    admission_failure(&e, operation, last_failure.clone(), dispatched_attempts);
                let event = events.event(prep, &record, outcome, retry, None);
                break (Err(error), event);
            }
            Ended::Failed(facts) => {
                let (feedback, outcome) = outcome_of(facts.class);
                if let (Some(grant), true) = (&record.grant, dispatched) {
                    guard.feedback(feedback, grant);
                }
                let used = dispatched_attempts + local_retries;
                let decision = if !facts.class.is_retryable() {
                    Err((RetryOutcome::NotRetryable, kind_of(facts.class)))
                } else if used >= max_attempts {
                    Err((RetryOutcome::AttemptsExhausted, kind_of(facts.class)))
                } else {
                    let delay =
                        gate.retry
                            .backoff(used, facts.class, record.retry_after, random_unit);
                    if Instant::now() + delay >= ctx.deadline {
                        Err((RetryOutcome::Deadline, CallErrorKind::DeadlineExceeded))
                    } else {
                        Ok(delay)
                    }
                };
                let code = facts.code.clone();
                match decision {
                    Err((retry, kind)) => {
                        let event = events.event(prep, &record, outcome, retry, code.as_deref());
                        break (
                            Err(facts.into_error(kind, operation, dispatched_attempts)),
                            event,
                        );
                    }
                    Ok(delay) => {
                        events.emit(&events.event(
                            prep,
                            &record,
                            outcome,
                            RetryOutcome::Retry,
                            code.as_deref(),
                        ));
                        last_failure = Some(facts);
                        let slept = tokio::select! {
                            biased;
                            _ = ctx.cancel.cancelled() => false,
                            _ = sleep(delay) => true,
                        };
                        if dispatched {
                            prep.attempt += 1;
                        } else {
                            local_retries += 1;
                        }
                        prep.preparation = 0;
                        if !slept {
                            let event = events.event(
                                Prep {
                                    preparation: 0,
                                    started: Instant::now(),
                                    ..prep
                                },
                                &AttemptRecord::default(),
                                AttemptOutcome::Cancelled,
                                RetryOutcome::Cancelled,
                                None,
                            );
                            let mut error = fail(CallErrorKind::Cancelled, "cancelled in backoff");
                            error.attempts = dispatched_attempts;
                            break (Err(error), event);
                        }
                    }
                }
            }
        }
    };
    final_event.cleanup_outcome = Some(release(guard));
    events.emit(&final_event);
    result
}

/// Hand the reservation back. Released when this was the last holder; otherwise the SDK
/// still holds a clone (a leaked future), and the slot goes when that drops.
fn release(guard: Arc<ReservationGuard>) -> CleanupOutcome {
    match Arc::try_unwrap(guard) {
        Ok(guard) => {
            guard.release();
            CleanupOutcome::Released
        }
        Err(_) => CleanupOutcome::Deferred,
    }
}

/// Map an admission failure to its event outcome, retry decision and call error.
fn admission_failure(
    e: &AdmissionError,
    operation: &str,
    last: Option<FailureFacts>,
    attempts: u32,
) -> (AttemptOutcome, RetryOutcome, CallError) {
    let (outcome, retry, kind) = match e {
        AdmissionError::Refused {
            refusal: Refusal::RetryAllowanceExhausted,
            ..
        } => (
            AttemptOutcome::Exhausted,
            RetryOutcome::AllowanceExhausted,
            CallErrorKind::RetryAllowanceExhausted,
        ),
        AdmissionError::Cancelled { .. } => (
            AttemptOutcome::Cancelled,
            RetryOutcome::Cancelled,
            CallErrorKind::Cancelled,
        ),
        AdmissionError::DeadlineExceeded { .. } => (
            AttemptOutcome::DeadlineExceeded,
            RetryOutcome::Deadline,
            CallErrorKind::DeadlineExceeded,
        ),
        _ => (
            AttemptOutcome::AdmissionFailed,
            RetryOutcome::NotRetryable,
            CallErrorKind::Admission,
        ),
    };
    let error = match (kind, last) {
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
    };
    (outcome, retry, error)
}
