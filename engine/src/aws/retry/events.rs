//! One call's telemetry: the `aws: attempt` event of each preparation, built from what
//! the connector recorded and how the preparation ended.
//!
//! Split from the retry loop so that the loop reads as the decisions it applies; this
//! file only measures (queue and transport durations) and names outcomes.

use std::time::Duration;

use tokio::time::Instant;
use tollgate_quota::Outcome;

use crate::aws::context::GateInner;
use crate::aws::gated::AttemptRecord;
use crate::aws::retry::decide::{AdmissionStop, Ending};
use crate::aws::retry::tally::Tally;
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::{emit, AttemptEvent, AttemptOutcome, Attribution, RetryOutcome};
use crate::clock;

/// Builds one call's telemetry events.
pub(super) struct Events<'a> {
    pub gate: &'a GateInner,
    pub service: &'a str,
    pub operation: &'a str,
    pub quota: Option<String>,
    pub attribution: Attribution,
}

/// Per-preparation measurements.
#[derive(Debug, Clone, Copy)]
pub(super) struct Prep {
    pub attempt: u32,
    pub preparation: u32,
    pub started_at_ms: u64,
    pub started: Instant,
}

/// When a preparation started: `startedAtMs` on the admission clock (which processes
/// share), and the instant its queue duration counts from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stamp {
    pub at_ms: u64,
    pub at: Instant,
}

impl Stamp {
    /// Now, on both clocks.
    pub fn read(gate: &GateInner) -> Self {
        Stamp {
            at_ms: gate.admission.now().as_micros() / 1_000,
            at: clock::now(),
        }
    }
}

impl Prep {
    /// The preparation `tally` counts, started at `stamp`.
    pub fn of(tally: &Tally, stamp: Stamp) -> Self {
        Prep {
            attempt: tally.attempt,
            preparation: tally.preparation,
            started_at_ms: stamp.at_ms,
            started: stamp.at,
        }
    }
}

impl Events<'_> {
    /// The event of `prep` as measured `now`.
    pub fn event(
        &self,
        prep: Prep,
        record: &AttemptRecord,
        outcome: AttemptOutcome,
        retry: RetryOutcome,
        code: Option<&str>,
        now: Instant,
    ) -> AttemptEvent {
        let end = record.dispatched_at.unwrap_or(now);
        let transport = match (record.dispatched_at, record.finished_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            (Some(a), None) => now.saturating_duration_since(a),
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
            datapoints: record.datapoints,
            unfiltered_quota: record.unfiltered.as_ref().map(|b| b.key.to_string()),
            region: None,
        }
    }

    /// The event of `prep`'s success, as measured `now`.
    pub fn success(&self, prep: Prep, record: &AttemptRecord, now: Instant) -> AttemptEvent {
        let (outcome, done) = (AttemptOutcome::Success, RetryOutcome::Done);
        self.event(prep, record, outcome, done, None, now)
    }

    pub fn emit(&self, event: &AttemptEvent) {
        emit(&*self.gate.telemetry, event);
    }
}

/// The telemetry outcome of an attempt that did not succeed.
pub(super) fn attempt_outcome(ending: Ending) -> AttemptOutcome {
    match ending {
        Ending::NeedsRefresh | Ending::BreakerOpened => AttemptOutcome::Reprepare,
        Ending::Cancelled => AttemptOutcome::Cancelled,
        Ending::DeadlinePassed => AttemptOutcome::DeadlineExceeded,
        Ending::Admission(stop) => admission_outcome(stop),
        Ending::Failed(class) => feedback_of(class).1,
    }
}

/// The attempt outcome of an admission that did not grant.
pub(super) fn admission_outcome(stop: AdmissionStop) -> AttemptOutcome {
    match stop {
        AdmissionStop::AllowanceExhausted => AttemptOutcome::Exhausted,
        AdmissionStop::CalendarAllowance => AttemptOutcome::AdmissionFailed,
        AdmissionStop::Cancelled => AttemptOutcome::Cancelled,
        AdmissionStop::DeadlineExceeded => AttemptOutcome::DeadlineExceeded,
        AdmissionStop::Failed | AdmissionStop::BreakerOpen => AttemptOutcome::AdmissionFailed,
    }
}

/// What a failure of `class` tells the key, and its telemetry outcome.
pub(super) fn feedback_of(class: ErrorClass) -> (Outcome, AttemptOutcome) {
    match class {
        ErrorClass::Throttled => (Outcome::Throttled, AttemptOutcome::Throttle),
        ErrorClass::Transient => (Outcome::Transient, AttemptOutcome::Transient),
        // Expired or missing credentials say nothing about capacity either.
        ErrorClass::Fatal | ErrorClass::Credentials => (Outcome::Fatal, AttemptOutcome::Fatal),
    }
}
