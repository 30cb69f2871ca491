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
//! Why are some of these messages fused? Through a coordinator every message is a
//! frame it decodes, serves and answers, and the gate's own cost is paid per call
//! (issue 35). A call's first three steps, the reservation, the first attempt's breaker
//! passage and its admission, are one round trip (`AdmissionHandle::reserve_and_pass`;
//! the admission only when the key grants it at that instant and the attempt charges no
//! other budget, else the attempt asks at dispatch); its last three, the last attempt's
//! feedback, its breaker report and the release, are one message
//! (`ReservationGuard::release_with`). Each is done in the order the separate messages
//! were, so what the key and the breaker see is unchanged.
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
//! - this file: the loop that applies decisions: it reserves (and passes the breaker
//!   once), sends, hands the reports on, sleeps the backoff and emits telemetry. `run`
//!   drives one step of a `Call` per state of [`tally::Next`] (`pass_breaker` before
//!   each retry, `prepare`, `back_off`), then `finish`es with the release. It reads time only through
//!   [`crate::clock::now`] (and the admission clock for `startedAtMs`).

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
use tokio::time::{sleep, sleep_until, Instant};
use tollgate_actors::{
    batch_writes, AdmissionError, CanonicalKey, Cleanup, LastBreakerReport, LastFeedback,
    ReservationGuard, WaitOptions,
};
use tollgate_quota::{Grant, Outcome, Passage, ProbeId, QuotaKey};

use crate::aws::backoff::random_unit;
use crate::aws::context::{CallContext, GateInner};
use crate::aws::dispatch::in_attempt;
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::gated::{
    AttemptPlan, AttemptRecord, BreakerRecheck, ConnectorStop, GatedHttpClient,
};
use crate::aws::metric_data::{BudgetKey, MetricDataPlan};
use crate::aws::sdk_error::{describe, FailureFacts};
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::{
    AttemptEvent, AttemptOutcome, Attribution, CleanupOutcome, RetryOutcome,
};
use crate::aws::underlying::{downstream_service, endpoint_without_cloud_control, UnderlyingPlan};
use crate::aws::unfiltered::UnfilteredPlan;
use crate::clock;

use decide::{admission_give_up, decide, AdmissionStop, Standing};
use events::{admission_outcome, attempt_outcome, Events, Prep, Stamp};
use failure::{admission_error, AttemptEnd};
use reports::{reports, KeyReport, PrepEnd};
use tally::{Next, Sent, Tally};

/// What a call charges beside its own key at every attempt: a GetMetricData call's
/// datapoint budgets, a Cloud Control call's underlying operations, an EC2 read's
/// `:unfiltered` budget when the request is sent unfiltered and unpaginated (each `None`
/// for every other call).
#[derive(Debug, Clone, Default)]
pub(crate) struct Beside {
    pub metric_data: Option<Arc<MetricDataPlan>>,
    pub underlying: Option<Arc<UnderlyingPlan>>,
    pub unfiltered: Option<Arc<UnfilteredPlan>>,
}

/// Run one logical call. See the module docs. `beside`: what each attempt charges with
/// its request token.
pub(crate) async fn run<T, E, F, Fut>(
    gate: &GateInner,
    ctx: &CallContext,
    (service, operation): (&str, &str),
    key: QuotaKey,
    beside: Beside,
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
        attribution: attribution(gate, ctx),
    };
    let stamp = Stamp::read(gate);
    // The concurrency reservation, held across every retry, the first attempt's passage
    // through the breaker and, when the key grants it at once, its admission: one round
    // trip (the module docs).
    let (guard, probe, first_grant) = match reserve(gate, ctx, &key, &beside).await {
        Ok((guard, passage, grant)) => (Arc::new(guard), probe_of(passage), grant),
        Err(e) => {
            let (result, mut event) = not_admitted(&events, &Tally::FIRST, stamp, &e, None);
            event.cleanup_outcome = Some(CleanupOutcome::Released);
            events.emit(&event);
            return result;
        }
    };
    let mut call = Call {
        gate,
        ctx,
        key: &key,
        beside,
        events,
        guard,
        tally: Tally::FIRST,
        stamp,
        probe,
        first_grant,
        last_failure: None,
        tail: None,
    };
    let mut next = Next::Prepare;
    let (result, final_event) = loop {
        let step = match next {
            Next::PassBreaker => call.pass_breaker().await,
            Next::Prepare => call.prepare(&mut send).await,
            Next::Backoff(delay) => call.back_off(delay).await,
        };
        match step {
            Step::Next(then) => next = then,
            Step::End(result, event) => break (result, event),
        }
    };
    call.finish(final_event);
    result
}

/// Who the call's work is for: its scan, collector and datasets, and the caller's
/// account when it is resolved.
fn attribution(gate: &GateInner, ctx: &CallContext) -> Attribution {
    let attribution = Attribution::new(ctx.scan_id.to_string(), ctx.collector, &ctx.datasets);
    match &gate.account {
        tollgate_quota::AccountScope::Account(id) => attribution.with_account(id.as_str()),
        _ => attribution,
    }
}

/// What one of the loop's steps leads to: the next state, or the call's end (its result
/// and its last event, which the cleanup completes).
// Not boxed: a box would be an allocation at every call's end, on the hot path. A step
// lives for one turn of the loop, as the `(result, event)` pair it carries did before.
#[allow(clippy::large_enum_variant)]
enum Step<T> {
    Next(Next),
    End(Result<T, CallError>, AttemptEvent),
}

/// One logical call under its reservation: what is fixed for the call, and what its loop
/// carries from one step to the next.
struct Call<'a> {
    gate: &'a GateInner,
    ctx: &'a CallContext,
    key: &'a QuotaKey,
    beside: Beside,
    events: Events<'a>,
    /// The concurrency reservation, held across every retry.
    guard: Arc<ReservationGuard>,
    tally: Tally,
    /// When the current preparation started.
    stamp: Stamp,
    /// The breaker's probe lease this attempt holds.
    probe: Option<ProbeId>,
    /// The first attempt's grant, answered with the reservation: its first preparation
    /// dispatches on it instead of asking for admission.
    first_grant: Option<Grant>,
    /// The failure that asked for a retry.
    last_failure: Option<FailureFacts>,
    /// The last attempt's reports, when it succeeded: sent with the release, in one write.
    tail: Option<(AttemptRecord, PrepEnd)>,
}

impl Call<'_> {
    /// [`Next::PassBreaker`]: ask the scope's breaker for passage, then prepare.
    async fn pass_breaker<T>(&mut self) -> Step<T> {
        match pass_breaker(self.gate, self.ctx, self.key).await {
            Ok(lease) => {
                self.probe = lease;
                Step::Next(Next::Prepare)
            }
            Err(e) => {
                let last = self.last_failure.take();
                let (result, event) = not_admitted(&self.events, &self.tally, self.stamp, &e, last);
                Step::End(result, event)
            }
        }
    }

    /// [`Next::Prepare`]: prepare and send the current attempt once; a success ends the
    /// call (its reports wait for the release), anything else is reported and decided.
    async fn prepare<T, E, F, Fut>(&mut self, send: &mut F) -> Step<T>
    where
        F: FnMut(GatedHttpClient) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        self.tally.prepare();
        self.stamp = Stamp::read(self.gate);
        let (mut answer, record) = send_once(self.gate, self.ctx, self.plan(), send).await;
        if self.beside.underlying.is_some() {
            // A Cloud Control call: an endpoint without the API is fatal, not transient.
            answer = answer.map_err(|end| match end {
                AttemptEnd::Failed(facts) => {
                    AttemptEnd::Failed(endpoint_without_cloud_control(facts))
                }
                other => other,
            });
        }
        // Asked again after a long wait, the breaker may have made it the probe.
        self.probe = self.probe.or(record.probe);
        let (sent, prep, now) = (
            Sent::of(&record),
            Prep::of(&self.tally, self.stamp),
            clock::now(),
        );
        let ended = PrepEnd::of(&answer);
        let end = match answer {
            Ok(value) => {
                let event = self.events.success(prep, &record, now);
                self.tail = Some((record, ended));
                return Step::End(Ok(value), event);
            }
            Err(end) => end,
        };
        let (gate, guard, key) = (self.gate, &self.guard, self.key);
        match self.downstream(&end) {
            Some(throttled) => {
                report_downstream(gate, guard, key, &record, &mut self.probe, throttled)
            }
            None => send_reports(gate, guard, key, &record, &mut self.probe, ended),
        }
        self.tally.ended(sent);
        self.after_failure(end, sent, &record, prep, now)
    }

    /// The underlying keys a downstream throttle is fed back to: a Cloud Control call's
    /// throttling error naming the underlying service (`underlying` module docs).
    fn downstream(&self, end: &AttemptEnd) -> Option<Vec<BudgetKey>> {
        let underlying = self.beside.underlying.as_deref()?;
        let AttemptEnd::Failed(facts) = end else {
            return None;
        };
        if facts.class != ErrorClass::Throttled {
            return None;
        }
        let service = downstream_service(&facts.message)?;
        Some(underlying.throttled(service).into_iter().cloned().collect())
    }

    /// The plan of the current attempt's next preparation: the breaker is asked again
    /// after a long wait unless this attempt is the probe.
    fn plan(&mut self) -> AttemptPlan {
        let breaker = self.probe.is_none().then(|| BreakerRecheck {
            admission: self.gate.admission.clone(),
            key: self.key.clone(),
        });
        AttemptPlan {
            guard: self.guard.clone(),
            retry: self.tally.is_retry(),
            cost: 1,
            scope: self.ctx.scan_id.scope(),
            cancel: self.ctx.cancel.clone(),
            deadline: self.ctx.deadline,
            max_wait: self.gate.signed_request_max_wait,
            breaker,
            granted: self.first_grant.take(),
            metric_data: self.beside.metric_data.clone(),
            underlying: self.beside.underlying.clone(),
            unfiltered: self.beside.unfiltered.clone(),
        }
    }

    /// Apply [`decide`] to a preparation that ended as `end`: its event, and the retry it
    /// asks for or the error the call ends with.
    fn after_failure<T>(
        &mut self,
        end: AttemptEnd,
        sent: Sent,
        record: &AttemptRecord,
        prep: Prep,
        now: Instant,
    ) -> Step<T> {
        let ending = end.ending();
        let standing = Standing {
            // issue 24: a failure before dispatch counts against the limit at
            // once (it was left out until the next failure: 7 preparations for 6).
            attempts_used: self.tally.attempts_used() + u32::from(sent == Sent::Unsent),
            server: record.retry_after,
            time_left: self.ctx.deadline.saturating_duration_since(now),
        };
        let decision = decide(ending, standing, &self.gate.retry, random_unit);
        if !decision.keeps_probe() {
            give_up_probe(self.gate, self.key, &mut self.probe);
        }
        let (outcome, verdict) = (attempt_outcome(ending), decision.retry_outcome());
        let event = self
            .events
            .event(prep, record, outcome, verdict, end.code(), now);
        self.tally.follow(&decision, sent);
        match decision.next() {
            Ok(step) => {
                self.events.emit(&event);
                self.last_failure = end.into_failure().or(self.last_failure.take());
                Step::Next(step)
            }
            Err(kind) => {
                let (last, operation) = (self.last_failure.take(), self.events.operation);
                let error = end.into_error(kind, sent, operation, last, self.tally.dispatched);
                Step::End(Err(error), event)
            }
        }
    }

    /// [`Next::Backoff`]: sleep the backoff, then pass the breaker for the next attempt.
    async fn back_off<T>(&mut self, delay: Duration) -> Step<T> {
        if back_off(self.ctx, delay).await {
            Step::Next(Next::PassBreaker)
        } else {
            let (result, event) = cancelled_in_backoff(&self.events, &self.tally, self.stamp);
            Step::End(result, event)
        }
    }

    /// The call's last messages to the coordinator (a success's feedback and breaker
    /// report, then the release) leave in one write: one wake-up of the coordinator. The
    /// cleanup's outcome completes the call's last event, which is then emitted.
    fn finish(self, mut final_event: AttemptEvent) {
        let Call {
            gate,
            key,
            events,
            guard,
            mut probe,
            tail,
            ..
        } = self;
        let cleanup = batch_writes(|| match &tail {
            Some((record, ended)) => settle(gate, guard, key, record, &mut probe, *ended),
            None => release(guard),
        });
        final_event.cleanup_outcome = Some(cleanup);
        events.emit(&final_event);
    }
}

/// Take the call's concurrency reservation and its first passage through the scope's
/// breaker within its deadline (raced with its cancellation).
async fn reserve(
    gate: &GateInner,
    ctx: &CallContext,
    key: &QuotaKey,
    beside: &Beside,
) -> Result<(ReservationGuard, Passage, Option<Grant>), AdmissionError> {
    let policy = gate.policies.policy_for_key(key);
    let remaining = ctx.deadline.saturating_duration_since(clock::now());
    // An attempt whose admission charges more than its own token (datapoints, underlying
    // operations, an `:unfiltered` budget) is admitted at dispatch, where its request
    // says what to charge.
    let plain =
        beside.metric_data.is_none() && beside.underlying.is_none() && beside.unfiltered.is_none();
    let reserve = gate.admission.reserve_and_pass(
        key,
        policy,
        WaitOptions {
            timeout: remaining,
            scope: Some(ctx.scan_id.scope()),
        },
        plain.then_some(1),
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
    Ok(probe_of(passed?))
}

/// The probe lease a passage gives its attempt, if it made it the probe.
fn probe_of(passage: Passage) -> Option<ProbeId> {
    match passage {
        Passage::Probe(lease) => Some(lease.id),
        Passage::Go | Passage::Wait { .. } => None,
    }
}

/// Prepare and send one preparation of the current attempt (in its dispatch scope, and
/// through a fresh gated client for closures that override the SDK's client),
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
    let attempt = http.attempt();
    let sent = in_attempt(attempt, send(http));
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
/// the preparation's grant (an ungranted preparation tells the key nothing), and the same
/// outcome to the `:unfiltered` budget the grant charged with it, if any; to the
/// scope's breaker with the attempt's probe lease; and the key's pause.
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
        if let (KeyReport::Feedback(outcome), Some(budget)) = (said.key, &record.unfiltered) {
            gate.admission
                .feedback_on(&budget.key, budget.policy, outcome, grant.admitted_at);
        }
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

/// Send the last preparation's reports ([`send_reports`]) and hand the reservation back:
/// the key's feedback and the breaker's report ride on the release, one message to the
/// coordinator where they were three (`Operation::Release`), in the same order. A pause
/// (sent first otherwise, so it keeps its place) or a guard still shared falls back to
/// separate messages.
fn settle(
    gate: &GateInner,
    guard: Arc<ReservationGuard>,
    key: &QuotaKey,
    record: &AttemptRecord,
    probe: &mut Option<ProbeId>,
    end: PrepEnd,
) -> CleanupOutcome {
    let said = reports(end, Sent::of(record), record.status, record.retry_after);
    if said.pause.is_some() {
        send_reports(gate, &guard, key, record, probe, end);
        return release(guard);
    }
    let guard = match Arc::try_unwrap(guard) {
        Ok(guard) => guard,
        Err(shared) => {
            send_reports(gate, &shared, key, record, probe, end);
            return release(shared);
        }
    };
    let mut feedback = None;
    if let Some(grant) = &record.grant {
        if let (KeyReport::Feedback(outcome), Some(budget)) = (said.key, &record.unfiltered) {
            gate.admission
                .feedback_on(&budget.key, budget.policy, outcome, grant.admitted_at);
        }
        feedback = last_feedback(said.key, grant);
    }
    let breaker = said.breaker.map(|outcome| LastBreakerReport {
        outcome: Some(outcome),
        probe: probe.take(),
    });
    match guard.release_with(feedback, breaker) {
        Cleanup::Released => CleanupOutcome::Released,
        Cleanup::Queued => CleanupOutcome::Deferred,
    }
}

/// What [`ReservationGuard::feedback`] or [`ReservationGuard::refund_retry`] would send
/// for `report` on `grant`, to ride on the release.
fn last_feedback(report: KeyReport, grant: &Grant) -> Option<LastFeedback> {
    match report {
        KeyReport::Feedback(outcome) => Some(LastFeedback {
            outcome,
            admitted_at: grant.admitted_at,
            refund_retry: false,
        }),
        KeyReport::RefundRetry if grant.retry_spent => Some(LastFeedback {
            outcome: Outcome::Fatal,
            admitted_at: grant.admitted_at,
            refund_retry: true,
        }),
        KeyReport::RefundRetry | KeyReport::Nothing => None,
    }
}

/// A Cloud Control call whose handler's downstream call was throttled: Cloud Control
/// answered, so its own key and breaker hear a success; the throttle is fed back to
/// the `throttled` underlying keys, which the attempt's grant charged at that instant.
fn report_downstream(
    gate: &GateInner,
    guard: &ReservationGuard,
    key: &QuotaKey,
    record: &AttemptRecord,
    probe: &mut Option<ProbeId>,
    throttled: Vec<BudgetKey>,
) {
    send_reports(gate, guard, key, record, probe, PrepEnd::Success);
    if let Some(grant) = &record.grant {
        for k in throttled {
            gate.admission
                .feedback_on(&k.key, k.policy, Outcome::Throttled, grant.admitted_at);
        }
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
