//! What a replay found: per request, when each physical attempt went out and how the call
//! ended; totals in seed 000's terms; the JSON form and the readable table.
//!
//! Results:
//! - `success`: an attempt succeeded;
//! - `failed`: a non-retryable answer (the script's `fatal`), or admission itself failed;
//! - `retry_exhausted`: a retry was wanted but the key's **shared** retry allowance was
//!   empty (the retry was refused at admission, nothing sent);
//! - `gave_up`: this call's own limits ended it: `max_attempts` answered with throttle or
//!   transient failures, or the scan deadline passed (waiting, in backoff, or in flight);
//! - `cancelled`: `cancel_at_ms` came first (queued: nothing sent; in flight: aborted).
//!
//! Queue wait, per observation (seed 000: "queue statistics include cancelled requests
//! and exhausted retry admissions"): from when an attempt was wanted (the request's start,
//! or the previous answer for a retry, so backoff is included) until it was dispatched,
//! refused or abandoned. Total queue wait sums overlapping waits, so it can exceed the
//! elapsed time.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use tollgate_actors::KeyStatus;
use tollgate_quota::DatapointCharge;

use crate::script::{ScriptedOutcome, ScriptedRequest};
use crate::transport::Exchange;
use tollgate_engine::aws::{CallError, CallErrorKind};

/// How a logical request ended (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestResult {
    /// An attempt succeeded.
    Success,
    /// A non-retryable answer, or admission failed.
    Failed,
    /// The key's shared retry allowance was empty when a retry was wanted.
    RetryExhausted,
    /// `max_attempts` reached, or the deadline passed.
    GaveUp,
    /// Cancelled by `cancel_at_ms`.
    Cancelled,
}

impl RequestResult {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestResult::Success => "success",
            RequestResult::Failed => "failed",
            RequestResult::RetryExhausted => "retry_exhausted",
            RequestResult::GaveUp => "gave_up",
            RequestResult::Cancelled => "cancelled",
        }
    }

    fn of(error: Option<&CallError>) -> Self {
        match error.map(CallError::kind) {
            None => RequestResult::Success,
            Some(CallErrorKind::RetryAllowanceExhausted) => RequestResult::RetryExhausted,
            Some(
                CallErrorKind::Throttled
                | CallErrorKind::Transient
                | CallErrorKind::DeadlineExceeded,
            ) => RequestResult::GaveUp,
            Some(CallErrorKind::Cancelled) => RequestResult::Cancelled,
            Some(_) => RequestResult::Failed,
        }
    }
}

/// What happened to one physical attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptResult {
    /// Answered: success.
    Success,
    /// Answered: throttled.
    Throttle,
    /// Answered: transient failure.
    Transient,
    /// Answered: non-retryable failure.
    Fatal,
    /// Still in flight when the call was cancelled or hit the deadline (a `hold`, or a
    /// transport time that had not elapsed).
    Aborted,
}

impl AttemptResult {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Success => "success",
            AttemptResult::Throttle => "throttle",
            AttemptResult::Transient => "transient",
            AttemptResult::Fatal => "fatal",
            AttemptResult::Aborted => "aborted",
        }
    }
}

/// One physical attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AttemptReport {
    /// 1-based attempt number.
    pub attempt: u32,
    /// Dispatch instant, milliseconds of simulated time from 0.
    pub dispatched_at_ms: u64,
    /// How it ended.
    pub outcome: AttemptResult,
    /// GetMetricData only: the datapoint budget its admission charged and how many
    /// datapoints (`{"budget": "older-datapoints", "cost": 7000}`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datapoints: Option<DatapointCharge>,
}

/// One logical request. The JSON form has `id`, `result` and `attempts`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestReport {
    /// The script's id.
    pub id: String,
    /// How the call ended.
    pub result: RequestResult,
    /// Its physical attempts, in order.
    pub attempts: Vec<AttemptReport>,
    /// The simulated process that made it.
    #[serde(skip)]
    pub process: u32,
    /// Its canonical quota key.
    #[serde(skip)]
    pub key: String,
    /// When the call started (ms from 0).
    #[serde(skip)]
    pub started_at_ms: u64,
    /// When the call returned (ms from 0).
    #[serde(skip)]
    pub ended_at_ms: u64,
    /// Queue wait of each observation (module docs), in milliseconds.
    #[serde(skip)]
    pub queue_waits_ms: Vec<f64>,
    /// The call ended with an attempt wanted but never dispatched (cancelled while
    /// queued or in backoff, retry refused, deadline).
    #[serde(skip)]
    pub stopped_before_dispatch: bool,
    /// The call's error, for the table.
    #[serde(skip)]
    pub error: Option<String>,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn ms_f(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

impl RequestReport {
    /// Build a request's report from what its call returned and what its transport saw.
    pub(crate) fn new(
        request: &ScriptedRequest,
        started: Duration,
        ended: Duration,
        error: Option<CallError>,
        exchanges: &[Exchange],
        datapoints: &[Option<DatapointCharge>],
    ) -> Self {
        let mut wanted = started;
        let mut queue_waits_ms = Vec::with_capacity(exchanges.len() + 1);
        let mut attempts = Vec::with_capacity(exchanges.len());
        for (i, x) in exchanges.iter().enumerate() {
            queue_waits_ms.push(ms_f(x.dispatched_at.saturating_sub(wanted)));
            wanted = x.answered_at.unwrap_or(x.dispatched_at);
            let outcome = match (x.answered_at, x.outcome) {
                (None, _) | (_, ScriptedOutcome::Hold) => AttemptResult::Aborted,
                (Some(_), ScriptedOutcome::Success) => AttemptResult::Success,
                (Some(_), ScriptedOutcome::Throttle) => AttemptResult::Throttle,
                (Some(_), ScriptedOutcome::Transient) => AttemptResult::Transient,
                (Some(_), ScriptedOutcome::Fatal) => AttemptResult::Fatal,
            };
            attempts.push(AttemptReport {
                attempt: i as u32 + 1,
                dispatched_at_ms: ms(x.dispatched_at),
                outcome,
                datapoints: datapoints.get(i).copied().flatten(),
            });
        }
        let result = RequestResult::of(error.as_ref());
        let last_in_flight = exchanges.last().is_some_and(|x| x.answered_at.is_none());
        let answers_ended_it = matches!(
            error.as_ref().map(CallError::kind),
            None | Some(CallErrorKind::Fatal | CallErrorKind::Throttled | CallErrorKind::Transient)
        );
        let stopped_before_dispatch = !answers_ended_it && !last_in_flight;
        if stopped_before_dispatch {
            queue_waits_ms.push(ms_f(ended.saturating_sub(wanted)));
        }
        RequestReport {
            id: request.id.clone(),
            result,
            attempts,
            process: request.process,
            key: request.key.to_string(),
            started_at_ms: ms(started),
            ended_at_ms: ms(ended),
            queue_waits_ms,
            stopped_before_dispatch,
            error: error.map(|e| e.to_string()),
        }
    }

    /// Attempts still in flight when the call ended.
    pub fn aborted(&self) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.outcome == AttemptResult::Aborted)
            .count()
    }
}

/// A replay's outcome. The JSON form is `{"requests": [...], "elapsed_ms": N}`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every request, in script order.
    pub requests: Vec<RequestReport>,
    /// Simulated time from 0 until the last request returned.
    pub elapsed_ms: u64,
    /// Every key's state at the end (penalty, retry units left).
    #[serde(skip)]
    pub keys: Vec<KeyStatus>,
    /// The jitter seed.
    #[serde(skip)]
    pub seed: u64,
}

/// Seed 000's totals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Totals {
    /// Distinct simulated processes.
    pub processes: usize,
    /// Requests in the script.
    pub logical_requests: usize,
    /// Physical attempts dispatched.
    pub physical_attempts: usize,
    /// Attempts after the first, per request.
    pub retries: usize,
    /// Retries refused because the shared allowance was empty.
    pub exhausted_retry_admissions: usize,
    /// Cancelled requests whose last wanted attempt never went out.
    pub cancelled_before_dispatch: usize,
    /// Attempts in flight when their call was cancelled or hit the deadline.
    pub aborted: usize,
    /// Queue-wait observations (attempts plus stopped requests).
    pub observations: usize,
    /// Sum of queue waits, ms.
    pub total_queue_wait_ms: f64,
    /// Mean queue wait per observation, ms.
    pub mean_queue_wait_ms: f64,
    /// Simulated elapsed time, ms.
    pub elapsed_ms: u64,
}

impl Totals {
    /// The table's last part, as name and value rows.
    fn rows(&self) -> [(&'static str, String); 9] {
        let t = self;
        [
            ("processes", t.processes.to_string()),
            ("logical requests", t.logical_requests.to_string()),
            (
                "physical attempts",
                format!("{} ({} retries)", t.physical_attempts, t.retries),
            ),
            (
                "exhausted retry admissions",
                t.exhausted_retry_admissions.to_string(),
            ),
            (
                "cancelled before dispatch",
                t.cancelled_before_dispatch.to_string(),
            ),
            ("aborted in flight", t.aborted.to_string()),
            (
                "total queue wait",
                format!(
                    "{:.0} ms ({} observations)",
                    t.total_queue_wait_ms, t.observations
                ),
            ),
            ("mean queue wait", format!("{:.1} ms", t.mean_queue_wait_ms)),
            ("elapsed (simulated)", format!("{} ms", t.elapsed_ms)),
        ]
    }
}

impl Report {
    /// The totals.
    pub fn totals(&self) -> Totals {
        let r = &self.requests;
        let mut processes: Vec<u32> = r.iter().map(|q| q.process).collect();
        processes.sort_unstable();
        processes.dedup();
        let observations: usize = r.iter().map(|q| q.queue_waits_ms.len()).sum();
        let total: f64 = r.iter().flat_map(|q| q.queue_waits_ms.iter()).sum();
        Totals {
            processes: processes.len(),
            logical_requests: r.len(),
            physical_attempts: r.iter().map(|q| q.attempts.len()).sum(),
            retries: r.iter().map(|q| q.attempts.len().saturating_sub(1)).sum(),
            exhausted_retry_admissions: r
                .iter()
                .filter(|q| q.result == RequestResult::RetryExhausted)
                .count(),
            cancelled_before_dispatch: r
                .iter()
                .filter(|q| q.result == RequestResult::Cancelled && q.stopped_before_dispatch)
                .count(),
            aborted: r.iter().map(RequestReport::aborted).sum(),
            observations,
            total_queue_wait_ms: total,
            mean_queue_wait_ms: if observations == 0 {
                0.0
            } else {
                total / observations as f64
            },
            elapsed_ms: self.elapsed_ms,
        }
    }

    /// The request by id.
    pub fn request(&self, id: &str) -> Option<&RequestReport> {
        self.requests.iter().find(|r| r.id == id)
    }

    /// Pretty JSON: `{"requests": [{"id", "result", "attempts": [{"attempt",
    /// "dispatched_at_ms", "outcome"}]}], "elapsed_ms"}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The readable table: one row per request, every key's final state, the totals.
    pub fn table(&self) -> String {
        let mut out = String::new();
        self.write_requests(&mut out);
        if !self.keys.is_empty() {
            let _ = writeln!(out);
            self.write_keys(&mut out);
        }
        let _ = writeln!(out);
        for (name, value) in self.totals().rows() {
            let _ = writeln!(out, "{name:<27} {value}");
        }
        out
    }

    /// The table's first part: one row per request, with when each attempt went out.
    fn write_requests(&self, out: &mut String) {
        let id_width = self
            .requests
            .iter()
            .map(|r| r.id.chars().count())
            .max()
            .unwrap_or(2)
            .max(2);
        let _ = writeln!(
            out,
            "{:<id_width$}  {:>7}  {:<15}  {:>8}  dispatched at (ms)",
            "id", "process", "result", "attempts"
        );
        for r in &self.requests {
            let at: Vec<String> = r
                .attempts
                .iter()
                .map(|a| match a.outcome {
                    AttemptResult::Success => a.dispatched_at_ms.to_string(),
                    other => format!("{} ({})", a.dispatched_at_ms, other.as_str()),
                })
                .collect();
            let at = if at.is_empty() {
                "-".to_owned()
            } else {
                at.join(", ")
            };
            let _ = writeln!(
                out,
                "{:<id_width$}  {:>7}  {:<15}  {:>8}  {}",
                r.id,
                r.process,
                r.result.as_str(),
                r.attempts.len(),
                at
            );
        }
    }

    /// The table's second part: every key's state at the end.
    fn write_keys(&self, out: &mut String) {
        let key_width = self
            .keys
            .iter()
            .map(|k| k.key.len())
            .max()
            .unwrap_or(3)
            .max("key (state at the end)".len());
        let _ = writeln!(
            out,
            "{:<key_width$}  {:>7}  {:>5}  {:>11}  {:>9}  {:>13}  {:>16}",
            "key (state at the end)",
            "rate/s",
            "burst",
            "concurrency",
            "allowance",
            "penalty steps",
            "retry units left"
        );
        for k in &self.keys {
            let s = &k.state;
            let _ = writeln!(
                out,
                "{:<key_width$}  {:>7}  {:>5}  {:>11}  {:>9}  {:>13}  {:>16}",
                k.key,
                s.policy.rate_per_second(),
                s.policy.burst(),
                s.policy.concurrency(),
                s.policy.retry_capacity(),
                s.penalty_steps,
                s.retry_units
            );
        }
    }
}
