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
//!   allowance or feedback: nothing reached the service;
//! - before each attempt (not before a fresh signature of the same one) the call asks the
//!   circuit breaker of its scope (service, region, account) for passage: it waits for the
//!   opening to end or the one probe's answer when its deadline allows, and otherwise ends
//!   unsent as [`CallErrorKind::BreakerOpen`]; every answer from the service is reported
//!   to the breaker (the probe's with its lease), and a probe that was never answered
//!   gives its lease up;
//! - a throttle or 503 carrying `Retry-After` / `x-amz-retry-after` pauses the whole key
//!   for every process (`ReservationGuard::pause`); the call's own retry follows
//!   [`crate::aws::backoff`]'s per-header rule.
//!
//! # Layout
//! - [`decide`]: the pure decision after each preparation (done, prepare again, retry
//!   after a delay, give up and why), with its table of cases.
//! - `events`: the attempt events this loop emits.
//! - this file: the loop that applies decisions: it reserves, sends, feeds outcomes back
//!   to the key, sleeps the backoff and emits telemetry.

mod decide;
mod events;

use std::future::Future;
use std::sync::Arc;

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use tokio::time::{sleep, sleep_until, Instant};
use tollgate_actors::{AdmissionError, CanonicalKey, ReservationGuard, WaitOptions};
use tollgate_quota::{Outcome, Passage, ProbeId, QuotaKey};

use crate::aws::backoff::random_unit;
use crate::aws::context::{CallContext, GateInner};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::gated::{AttemptPlan, AttemptRecord, ConnectorStop, GatedHttpClient};
use crate::aws::sdk_error::{describe, FailureFacts};
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::{AttemptOutcome, Attribution, CleanupOutcome, RetryOutcome};

use decide::{admission_give_up, decide, AdmissionStop, Decision, Ending, Standing};
use events::{admission_outcome, attempt_outcome, feedback_of, Events, Prep};

/// What happened to a preparation of an attempt that did not succeed, with what the loop
/// needs to finish the call: the admission error, the failure's facts.
enum AttemptEnd {
    NeedsRefresh,
    Cancelled,
    DeadlinePassed,
    AdmissionFailed(AdmissionError),
    Failed(FailureFacts),
}

impl AttemptEnd {
    /// The decision's view.
    fn ending(&self) -> Ending {
        match self {
            AttemptEnd::NeedsRefresh => Ending::NeedsRefresh,
            AttemptEnd::Cancelled => Ending::Cancelled,
            AttemptEnd::DeadlinePassed => Ending::DeadlinePassed,
            AttemptEnd::AdmissionFailed(e) => Ending::Admission(e.into()),
            AttemptEnd::Failed(facts) => Ending::Failed(facts.class),
        }
    }

    fn code(&self) -> Option<&str> {
        match self {
            AttemptEnd::Failed(facts) => facts.code.as_deref(),
            _ => None,
        }
    }
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

    // The concurrency reservation, held across every retry.
    let remaining = ctx.deadline.saturating_duration_since(Instant::now());
    let reserve = gate.admission.reserve(
        &key,
        policy,
        WaitOptions {
            timeout: remaining,
            scope: Some(ctx.scan_id.scope()),
        },
    );
    let reserved = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(AdmissionError::Cancelled { key: CanonicalKey::new(&key) }),
        reserved = reserve => reserved,
    };
    let guard = match reserved {
        Ok(guard) => Arc::new(guard),
        Err(e) => {
            let stop = AdmissionStop::from(&e);
            let (retry, kind) = admission_give_up(stop);
            let mut event = events.event(
                prep,
                &AttemptRecord::default(),
                admission_outcome(stop),
                retry,
                None,
            );
            event.cleanup_outcome = Some(CleanupOutcome::Released);
            events.emit(&event);
            return Err(admission_error(&e, kind, operation, None, 0));
        }
    };

    let mut dispatched_attempts = 0u32;
    let mut local_retries = 0u32;
    let mut last_failure: Option<FailureFacts> = None;
    // The breaker's probe lease this attempt holds, and whether the next preparation
    // starts a new attempt (and so must pass the breaker first).
    let mut probe: Option<ProbeId> = None;
    let mut new_attempt = true;
    let (result, mut final_event) = loop {
        if new_attempt {
            new_attempt = false;
            match pass_breaker(gate, ctx, &key).await {
                Ok(lease) => probe = lease,
                Err(e) => {
                    let stop = AdmissionStop::from(&e);
                    let (retry, kind) = admission_give_up(stop);
                    let event = events.event(
                        prep,
                        &AttemptRecord::default(),
                        admission_outcome(stop),
                        retry,
                        None,
                    );
                    let error = admission_error(
                        &e,
                        kind,
                        operation,
                        last_failure.take(),
                        dispatched_attempts,
                    );
                    break (Err(error), event);
                }
            }
        }
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
        let mut record = recorder.take();
        let dispatched = record.dispatched_at.is_some();
        let end = match raced {
            None => AttemptEnd::Cancelled,
            Some(None) => AttemptEnd::DeadlinePassed,
            Some(Some(Ok(value))) => {
                if let Some(grant) = &record.grant {
                    guard.feedback(Outcome::Success, grant);
                }
                gate.admission
                    .breaker_report(&key, Some(Outcome::Success), probe.take());
                let event = events.event(
                    prep,
                    &record,
                    AttemptOutcome::Success,
                    RetryOutcome::Done,
                    None,
                );
                break (Ok(value), event);
            }
            Some(Some(Err(err))) => match record.stop.take() {
                Some(ConnectorStop::NeedsRefresh) => AttemptEnd::NeedsRefresh,
                Some(ConnectorStop::Cancelled) => AttemptEnd::Cancelled,
                Some(ConnectorStop::Admission(e)) => AttemptEnd::AdmissionFailed(e),
                None => AttemptEnd::Failed(describe(&err, dispatched)),
            },
        };
        if dispatched {
            dispatched_attempts += 1;
        }
        feed_back(&guard, &record, &end, dispatched);
        if let (AttemptEnd::Failed(facts), true) = (&end, dispatched) {
            let outcome = feedback_of(facts.class).0;
            gate.admission
                .breaker_report(&key, Some(outcome), probe.take());
            let pausing = facts.class == ErrorClass::Throttled || record.status == Some(503);
            if let (true, Some(hint)) = (pausing, record.retry_after.key_pause()) {
                guard.pause(hint);
            }
        }

        let ending = end.ending();
        let decision = decide(
            ending,
            Standing {
                attempts_used: dispatched_attempts + local_retries,
                server: record.retry_after,
                time_left: ctx.deadline.saturating_duration_since(Instant::now()),
            },
            &gate.retry,
            random_unit,
        );
        let outcome = attempt_outcome(ending);
        match decision {
            Decision::Reprepare => {
                events.emit(&events.event(prep, &record, outcome, RetryOutcome::Reprepare, None));
            }
            Decision::GiveUp { retry, kind } => {
                give_up_probe(gate, &key, &mut probe);
                let event = events.event(prep, &record, outcome, retry, end.code());
                let error = match end {
                    AttemptEnd::AdmissionFailed(e) => admission_error(
                        &e,
                        kind,
                        operation,
                        last_failure.take(),
                        dispatched_attempts,
                    ),
                    AttemptEnd::Failed(facts) => {
                        facts.into_error(kind, operation, dispatched_attempts)
                    }
                    _ => {
                        let message = if dispatched {
                            "the request was aborted in flight"
                        } else {
                            "nothing was sent"
                        };
                        let mut error = CallError::new(kind, operation, message);
                        error.attempts = dispatched_attempts;
                        error
                    }
                };
                break (Err(error), event);
            }
            Decision::RetryAfter(delay) => {
                give_up_probe(gate, &key, &mut probe);
                new_attempt = true;
                events.emit(&events.event(prep, &record, outcome, RetryOutcome::Retry, end.code()));
                if let AttemptEnd::Failed(facts) = end {
                    last_failure = Some(facts);
                }
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
                    let mut error =
                        CallError::new(CallErrorKind::Cancelled, operation, "cancelled in backoff");
                    error.attempts = dispatched_attempts;
                    break (Err(error), event);
                }
            }
        }
    };
    final_event.cleanup_outcome = Some(release(guard));
    events.emit(&final_event);
    result
}

/// Ask the breaker of `key`'s scope for passage within the call's deadline (raced with its
/// cancellation). `Some(lease)` when this attempt is the scope's probe.
async fn pass_breaker(
    gate: &GateInner,
    ctx: &CallContext,
    key: &QuotaKey,
) -> Result<Option<ProbeId>, AdmissionError> {
    let time_left = ctx.deadline.saturating_duration_since(Instant::now());
    let passed = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(AdmissionError::Cancelled { key: CanonicalKey::new(key) }),
        passed = gate.admission.breaker_pass(key, time_left) => passed,
    };
    match passed? {
        Passage::Probe(lease) => Ok(Some(lease.id)),
        Passage::Go | Passage::Wait { .. } => Ok(None),
    }
}

/// A probe lease whose attempt got no answer from the service (never sent, aborted in
/// flight) is given up, so the scope's next caller probes at once.
fn give_up_probe(gate: &GateInner, key: &QuotaKey, probe: &mut Option<ProbeId>) {
    if let Some(id) = probe.take() {
        gate.admission.breaker_report(key, None, Some(id));
    }
}

/// Tell the key what a failed attempt says about its capacity. A dispatched failure
/// reports its class; an aborted request says nothing, and a retry unit granted to an
/// attempt that never went out comes back. (A success's feedback is sent where it ends
/// the call.)
fn feed_back(guard: &ReservationGuard, record: &AttemptRecord, end: &AttemptEnd, dispatched: bool) {
    let Some(grant) = &record.grant else {
        return;
    };
    match end {
        AttemptEnd::Cancelled | AttemptEnd::DeadlinePassed if !dispatched => {
            guard.refund_retry(grant)
        }
        AttemptEnd::Failed(facts) if dispatched => {
            guard.feedback(feedback_of(facts.class).0, grant)
        }
        _ => {}
    }
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

/// The call error of an admission that did not grant. An empty retry allowance reports
/// the failure that asked for the retry, with the refusal appended.
fn admission_error(
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
