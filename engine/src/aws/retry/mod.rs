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
//!   gives its lease up; an attempt whose grant took a second or more asks the breaker
//!   again before it is sent (issue 24: it passed the breaker before queueing, and the
//!   breaker may have opened since), holds its grant there while its signature stays
//!   fresh, and otherwise passes the breaker again ([`crate::aws::gated`]);
//! - a throttle or 503 carrying `Retry-After` / `x-amz-retry-after` pauses the whole key
//!   for every process (`ReservationGuard::pause`); the call's own retry follows
//!   [`crate::aws::backoff`]'s per-header rule.
//!
//! # Layout
//! - [`decide`]: the pure decision after each preparation (done, prepare again, retry
//!   after a delay, give up and why), with its table of cases.
//! - `tally`: the loop's states ([`tally::Next`]: pass the breaker, prepare, back off)
//!   and the call's counts, and what each decision does to them; pure, with a table.
//! - `reports`: what a preparation's end tells the key (feedback, refund, pause) and the
//!   scope's breaker; pure, with a table.
//! - `failure`: how a preparation ended and the call error it leaves.
//! - `events`: the attempt events this loop emits.
//! - this file: the loop that applies decisions: it reserves, passes the breaker,
//!   sends, hands the reports on, sleeps the backoff and emits telemetry. It reads time
//!   only through [`crate::clock::now`] (and the admission clock for `startedAtMs`).

mod decide;
mod events;
mod failure;
mod reports;
mod tally;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use tokio::time::{sleep, sleep_until};
use tollgate_actors::{
    batch_writes, AdmissionError, CanonicalKey, Cleanup, ReservationGuard, WaitOptions,
};
use tollgate_quota::{Passage, ProbeId, QuotaKey};

use crate::aws::backoff::random_unit;
use crate::aws::context::{CallContext, GateInner};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::gated::{
    AttemptPlan, AttemptRecord, BreakerRecheck, ConnectorStop, GatedHttpClient,
};
use crate::aws::metric_data::MetricDataPlan;
use crate::aws::sdk_error::{describe, FailureFacts};
use crate::aws::telemetry::{
    AttemptEvent, AttemptOutcome, Attribution, CleanupOutcome, RetryOutcome,
};
use crate::clock;

use decide::{admission_give_up, decide, AdmissionStop, Standing};
use events::{admission_outcome, attempt_outcome, Events, Prep, Stamp};
use failure::{admission_error, AttemptEnd};
use reports::{reports, KeyReport, PrepEnd};
use tally::{Next, Sent, Tally};

/// Run one logical call. See the module docs. `metric_data`: a GetMetricData call's
/// datapoint budgets, charged with each attempt's request token.
pub(crate) async fn run<T, E, F, Fut>(
    gate: &GateInner,
    ctx: &CallContext,
    (service, operation): (&str, &str),
    key: QuotaKey,
    metric_data: Option<Arc<MetricDataPlan>>,
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
        attribution: match &gate.account {
            tollgate_quota::AccountScope::Account(id) => {
                Attribution::new(ctx.scan_id.to_string(), ctx.collector, &ctx.datasets)
                    .with_account(id.as_str())
            }
            _ => Attribution::new(ctx.scan_id.to_string(), ctx.collector, &ctx.datasets),
        },
    };
    let mut tally = Tally::FIRST;
    let mut stamp = Stamp::read(gate);
    // The concurrency reservation, held across every retry.
    let guard = match reserve(gate, ctx, &key).await {
        Ok(guard) => Arc::new(guard),
        Err(e) => {
            let (result, mut event) = not_admitted(&events, &tally, stamp, &e, None);
            event.cleanup_outcome = Some(CleanupOutcome::Released);
            events.emit(&event);
            return result;
        }
    };
    // The breaker's probe lease this attempt holds; the failure that asked for a retry.
    let mut probe: Option<ProbeId> = None;
    let mut last_failure: Option<FailureFacts> = None;
    let mut next = Next::PassBreaker;
    // The last attempt's reports, when it succeeded: sent with the release, in one write.
    let mut tail: Option<(AttemptRecord, PrepEnd)> = None;
    let (result, mut final_event) = loop {
        match next {
            Next::PassBreaker => match pass_breaker(gate, ctx, &key).await {
                Ok(lease) => (probe, next) = (lease, Next::Prepare),
                Err(e) => break not_admitted(&events, &tally, stamp, &e, last_failure.take()),
            },
            Next::Prepare => {
                tally.prepare();
                stamp = Stamp::read(gate);
                let breaker = probe.is_none().then(|| BreakerRecheck {
                    admission: gate.admission.clone(),
                    key: key.clone(),
                });
                let plan = AttemptPlan {
                    guard: guard.clone(),
                    retry: tally.is_retry(),
                    cost: 1,
                    scope: ctx.scan_id.scope(),
                    cancel: ctx.cancel.clone(),
                    deadline: ctx.deadline,
                    max_wait: gate.signed_request_max_wait,
                    breaker,
                    metric_data: metric_data.clone(),
                };
                let (answer, record) = send_once(gate, ctx, plan, &mut send).await;
                // Asked again after a long wait, the breaker may have made it the probe.
                probe = probe.or(record.probe);
                let (sent, prep, now) = (Sent::of(&record), Prep::of(&tally, stamp), clock::now());
                let ended = PrepEnd::of(&answer);
                let end = match answer {
                    Ok(value) => {
                        let event = events.success(prep, &record, now);
                        tail = Some((record, ended));
                        break (Ok(value), event);
                    }
                    Err(end) => end,
                };
                send_reports(gate, &guard, &key, &record, &mut probe, ended);
                tally.ended(sent);
                let ending = end.ending();
                let standing = Standing {
                    // issue 24: a failure before dispatch counts against the limit at
                    // once (it was left out until the next failure: 7 preparations for 6).
                    attempts_used: tally.attempts_used() + u32::from(sent == Sent::Unsent),
                    server: record.retry_after,
                    time_left: ctx.deadline.saturating_duration_since(now),
                };
                let decision = decide(ending, standing, &gate.retry, random_unit);
                if !decision.keeps_probe() {
                    give_up_probe(gate, &key, &mut probe);
                }
                let (outcome, verdict) = (attempt_outcome(ending), decision.retry_outcome());
                let event = events.event(prep, &record, outcome, verdict, end.code(), now);
                tally.follow(&decision, sent);
                match decision.next() {
                    Ok(step) => {
                        events.emit(&event);
                        last_failure = end.into_failure().or(last_failure);
                        next = step;
                    }
                    Err(kind) => {
                        let last = last_failure.take();
                        let error = end.into_error(kind, sent, operation, last, tally.dispatched);
                        break (Err(error), event);
                    }
                }
            }
            Next::Backoff(delay) => {
                if !back_off(ctx, delay).await {
                    break cancelled_in_backoff(&events, &tally, stamp);
                }
                next = Next::PassBreaker;
            }
        }
    };
    // The call's last messages to the coordinator (a success's feedback and breaker
    // report, then the release) leave in one write: one wake-up of the coordinator.
    let cleanup = batch_writes(|| {
        if let Some((record, ended)) = &tail {
            send_reports(gate, &guard, &key, record, &mut probe, *ended);
        }
        release(guard)
    });
    final_event.cleanup_outcome = Some(cleanup);
    events.emit(&final_event);
    result
}

/// Take the call's concurrency reservation within its deadline (raced with its
/// cancellation).
async fn reserve(
    gate: &GateInner,
    ctx: &CallContext,
    key: &QuotaKey,
) -> Result<ReservationGuard, AdmissionError> {
    let policy = gate.policies.policy_for_key(key);
    let remaining = ctx.deadline.saturating_duration_since(clock::now());
    let reserve = gate.admission.reserve(
        key,
        policy,
        WaitOptions {
            timeout: remaining,
            scope: Some(ctx.scan_id.scope()),
        },
    );
    tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err(AdmissionError::Cancelled { key: CanonicalKey::new(key) }),
        reserved = reserve => reserved,
    }
}

/// Ask the breaker of `key`'s scope for passage within the call's deadline (raced with its
/// cancellation). `Some(lease)` when this attempt is the scope's probe.
async fn pass_breaker(
    gate: &GateInner,
    ctx: &CallContext,
    key: &QuotaKey,
) -> Result<Option<ProbeId>, AdmissionError> {
    let time_left = ctx.deadline.saturating_duration_since(clock::now());
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

/// Prepare and send one preparation of the current attempt through a fresh gated client,
/// raced with the call's cancellation and deadline: its answer, and what the connector
/// recorded of it.
async fn send_once<T, E, F, Fut>(
    gate: &GateInner,
    ctx: &CallContext,
    plan: AttemptPlan,
    send: &mut F,
) -> (Result<T, AttemptEnd>, AttemptRecord)
where
    F: FnMut(GatedHttpClient) -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let http = GatedHttpClient::new(gate.http.clone(), plan);
    let recorder = http.recorder();
    let sent = send(http);
    let raced = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => None,
        _ = sleep_until(ctx.deadline) => Some(None),
        result = sent => Some(Some(result)),
    };
    let mut record = recorder.take();
    let answer = match raced {
        None => Err(AttemptEnd::Cancelled),
        Some(None) => Err(AttemptEnd::DeadlinePassed),
        Some(Some(Ok(value))) => Ok(value),
        Some(Some(Err(err))) => Err(match record.stop.take() {
            Some(ConnectorStop::NeedsRefresh) => AttemptEnd::NeedsRefresh,
            Some(ConnectorStop::BreakerOpened) => AttemptEnd::BreakerOpened,
            Some(ConnectorStop::Cancelled) => AttemptEnd::Cancelled,
            Some(ConnectorStop::Admission(e)) => AttemptEnd::AdmissionFailed(e),
            None => AttemptEnd::Failed(describe(&err, record.dispatched_at.is_some())),
        }),
    };
    (answer, record)
}

/// Send what a preparation that ended as `end` reports ([`reports`]): to the key through
/// the preparation's grant (an ungranted preparation tells the key nothing), to the
/// scope's breaker with the attempt's probe lease, and the key's pause.
fn send_reports(
    gate: &GateInner,
    guard: &ReservationGuard,
    key: &QuotaKey,
    record: &AttemptRecord,
    probe: &mut Option<ProbeId>,
    end: PrepEnd,
) {
    let said = reports(end, Sent::of(record), record.status, record.retry_after);
    if let Some(grant) = &record.grant {
        match said.key {
            KeyReport::Feedback(outcome) => guard.feedback(outcome, grant),
            KeyReport::RefundRetry => guard.refund_retry(grant),
            KeyReport::Nothing => {}
        }
    }
    if let Some(outcome) = said.breaker {
        gate.admission
            .breaker_report(key, Some(outcome), probe.take());
    }
    if let Some(hint) = said.pause {
        guard.pause(hint);
    }
}

/// A probe lease whose attempt got no answer from the service (never sent, aborted in
/// flight) is given up, so the scope's next caller probes at once.
fn give_up_probe(gate: &GateInner, key: &QuotaKey, probe: &mut Option<ProbeId>) {
    if let Some(id) = probe.take() {
        gate.admission.breaker_report(key, None, Some(id));
    }
}

/// Sleep the backoff unless the call is cancelled first: true if it slept.
async fn back_off(ctx: &CallContext, delay: Duration) -> bool {
    tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => false,
        _ = sleep(delay) => true,
    }
}

/// The error and event of a call cancelled while it backed off.
fn cancelled_in_backoff<T>(
    events: &Events<'_>,
    tally: &Tally,
    stamp: Stamp,
) -> (Result<T, CallError>, AttemptEvent) {
    let now = clock::now();
    let prep = Prep::of(tally, Stamp { at: now, ..stamp });
    let (outcome, verdict) = (AttemptOutcome::Cancelled, RetryOutcome::Cancelled);
    let event = events.event(prep, &AttemptRecord::default(), outcome, verdict, None, now);
    let mut error = CallError::new(
        CallErrorKind::Cancelled,
        events.operation,
        "cancelled in backoff",
    );
    error.attempts = tally.dispatched;
    (Err(error), event)
}

/// The end of a call at an admission step (the reservation, the breaker's passage) that
/// did not grant; `last` is the failure that asked for the retry, if any.
fn not_admitted<T>(
    events: &Events<'_>,
    tally: &Tally,
    stamp: Stamp,
    e: &AdmissionError,
    last: Option<FailureFacts>,
) -> (Result<T, CallError>, AttemptEvent) {
    let stop = AdmissionStop::from(e);
    let (retry, kind) = admission_give_up(stop);
    let (record, outcome) = (AttemptRecord::default(), admission_outcome(stop));
    let event = events.event(
        Prep::of(tally, stamp),
        &record,
        outcome,
        retry,
        None,
        clock::now(),
    );
    let error = admission_error(e, kind, events.operation, last, tally.dispatched);
    (Err(error), event)
}

/// Hand the reservation back (seed 000's `cleanupOutcome`). Deferred when the release
/// could not complete now and was queued: the coordinator's store refuses writes (the
/// persister retries the release's record until it is writable), no coordinator
/// connection is up (the client re-sends it after the failover), or the SDK still holds
/// a clone of the reservation (a leaked future: the slot goes when that drops). The
/// reservation's expiry bounds each case.
fn release(guard: Arc<ReservationGuard>) -> CleanupOutcome {
    match Arc::try_unwrap(guard).map(ReservationGuard::release) {
        Ok(Cleanup::Released) => CleanupOutcome::Released,
        Ok(Cleanup::Queued) | Err(_) => CleanupOutcome::Deferred,
    }
}
