//! Attempt telemetry: one JSON event per admission or physical attempt (`aws: attempt`).
//!
//! The fields are seed 000's table, in its camelCase spelling, so the events read the
//! same as the prior art's. Events carry no request or response bodies, no headers and no
//! credentials: only the operation, the canonical quota key, counts, durations, the HTTP
//! status and the attribution of the work (scan, collector, datasets).
//!
//! Every event goes to `tracing` at debug level (target `aws`) and to the gate's
//! [`TelemetrySink`]: a JSON-lines file for `--telemetry FILE`, an in-memory collector for
//! tests, or nothing.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tollgate_quota::DatapointCharge;

/// What happened to one admission or attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    /// The service answered successfully.
    Success,
    /// The service throttled the attempt.
    Throttle,
    /// A retryable failure (5xx, timeout, connection).
    Transient,
    /// A non-retryable failure.
    Fatal,
    /// The call was cancelled (before dispatch, or in flight and aborted).
    Cancelled,
    /// The call's deadline passed.
    DeadlineExceeded,
    /// The key's shared retry allowance was empty: the retry was not sent.
    Exhausted,
    /// The signed request waited too long for admission and is being re-prepared.
    Reprepare,
    /// Admission itself failed (storage, coordination, stopped runtime).
    AdmissionFailed,
}

/// What the retry owner decided after the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryOutcome {
    /// Done: the call succeeded.
    Done,
    /// Another attempt follows after backoff.
    Retry,
    /// The same attempt is prepared again for a fresh signature.
    Reprepare,
    /// Given up: the failure is not retryable.
    NotRetryable,
    /// Given up: the maximum number of physical attempts was reached.
    AttemptsExhausted,
    /// Given up: the key's retry allowance is empty.
    AllowanceExhausted,
    /// Given up: the deadline passed or would pass during the backoff.
    Deadline,
    /// Given up: the call was cancelled.
    Cancelled,
    /// Given up before sending: the scope's circuit breaker stays open past the deadline.
    BreakerOpen,
}

/// How the call's reservation was cleaned up (set on a call's last event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CleanupOutcome {
    /// The reservation was handed back.
    Released,
    /// Cleanup could not complete now and was queued (seed 000): the coordinator's store
    /// refused writes, no coordinator connection was up, or the SDK still held the
    /// reservation; retried until it goes through, bounded by the reservation's expiry.
    Deferred,
}

/// Who the work was for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attribution {
    /// The scan (request budget) that owns the call.
    pub scan_id: String,
    /// The collector that made the call.
    pub collector: String,
    /// Datasets the call serves: sorted, deduplicated.
    pub datasets: Vec<String>,
    /// The dataset, when there is exactly one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// The account whose quota the call was charged to (the gate's account; in an
    /// organization scan, each member's own, the caller's for the hub calls); absent
    /// when the caller is unresolved and outside a request budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

impl Attribution {
    /// Sort and deduplicate `datasets`, and fill `dataset` when there is one.
    pub fn new(scan_id: String, collector: &str, datasets: &[String]) -> Self {
        let mut datasets = datasets.to_vec();
        datasets.sort();
        datasets.dedup();
        let dataset = match datasets.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        };
        Attribution {
            scan_id,
            collector: collector.to_owned(),
            datasets,
            dataset,
            account: None,
        }
    }

    /// The same, naming the account the call was charged to.
    pub fn with_account(mut self, account: impl Into<String>) -> Self {
        self.account = Some(account.into());
        self
    }
}

/// One `aws: attempt` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptEvent {
    /// Service (as the caller named it).
    pub service: String,
    /// Operation (`ListBuckets`).
    pub operation: String,
    /// The canonical quota key; `null` outside a request budget (caller identity).
    pub quota: Option<String>,
    /// Physical attempt number this event belongs to (1-based).
    pub attempt: u32,
    /// Retries completed before this attempt (`attempt - 1`).
    pub retry_count: u32,
    /// When this preparation started, Unix milliseconds (the admission clock).
    pub started_at_ms: u64,
    /// SDK preparations for this attempt, including signature refreshes before dispatch.
    pub preparation_count: u32,
    /// Wait before transport: admission, credential resolution and signing.
    pub queue_duration_ms: u64,
    /// Time from dispatch to the response head (0 when not dispatched).
    pub transport_duration_ms: u64,
    /// Whether bytes went out.
    pub dispatched: bool,
    /// HTTP status, when a response arrived.
    pub status_code: Option<u16>,
    /// What happened.
    pub outcome: AttemptOutcome,
    /// What the retry owner decided next.
    pub retry_outcome: RetryOutcome,
    /// The service's error code, when there was one (never its message or payload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Who the work was for.
    pub attribution: Attribution,
    /// Cleanup of the call's reservation; present on the call's last event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_outcome: Option<CleanupOutcome>,
    /// GetMetricData only: the datapoint budget the attempt's admission charged and how
    /// many datapoints (`{"budget": "recent-datapoints", "cost": 7000}`, seed 000's
    /// "optional CloudWatch datapoint scope and charged cost"); absent otherwise, and on
    /// an attempt that was never admitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datapoints: Option<DatapointCharge>,
    /// EC2 reads sent with neither a filter nor pagination only: the `:unfiltered`
    /// budget's key the attempt's admission charged beside `quota`
    /// (`aws/123456789012/us-east-1/ec2:DescribeVolumes:unfiltered`); absent otherwise,
    /// and on an attempt that was never admitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unfiltered_quota: Option<String>,
    /// The region of a call without a quota key that names one (a public price list
    /// read); absent otherwise (`quota` names the region).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

impl AttemptEvent {
    /// The event as one JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// Where attempt events go besides `tracing`.
pub trait TelemetrySink: Send + Sync + std::fmt::Debug {
    /// Record one event. Must not block for long: it runs on the caller's task.
    fn record(&self, event: &AttemptEvent);
}

impl<T: TelemetrySink + ?Sized> TelemetrySink for Arc<T> {
    fn record(&self, event: &AttemptEvent) {
        (**self).record(event);
    }
}

/// Emit `event` to `tracing` (`aws: attempt {json}`, debug, target `aws`) and to `sink`.
pub fn emit(sink: &dyn TelemetrySink, event: &AttemptEvent) {
    tracing::debug!(target: "aws", "aws: attempt {}", event.to_json());
    sink.record(event);
}

/// Drops events (they still reach `tracing`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTelemetry;

impl TelemetrySink for NoTelemetry {
    fn record(&self, _event: &AttemptEvent) {}
}

/// Keeps events in memory, for tests and embedders.
#[derive(Debug, Default, Clone)]
pub struct MemoryTelemetry {
    events: Arc<Mutex<Vec<AttemptEvent>>>,
}

impl MemoryTelemetry {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<AttemptEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl TelemetrySink for MemoryTelemetry {
    fn record(&self, event: &AttemptEvent) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

/// Writes one JSON line per event to a file (`--telemetry FILE`).
#[derive(Debug)]
pub struct FileTelemetry {
    file: Mutex<std::io::LineWriter<std::fs::File>>,
}

impl FileTelemetry {
    /// Create (or truncate) `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(FileTelemetry {
            file: Mutex::new(std::io::LineWriter::new(file)),
        })
    }
}

impl TelemetrySink for FileTelemetry {
    fn record(&self, event: &AttemptEvent) {
        if let Ok(mut file) = self.file.lock() {
            // A full disk must not fail discovery: telemetry is best effort.
            let _ = writeln!(file, "{}", event.to_json());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> AttemptEvent {
        AttemptEvent {
            service: "s3".into(),
            operation: "ListBuckets".into(),
            quota: Some("aws/123456789012/us-east-1/s3:ListBuckets".into()),
            attempt: 2,
            retry_count: 1,
            started_at_ms: 1_000,
            preparation_count: 1,
            queue_duration_ms: 5,
            transport_duration_ms: 7,
            dispatched: true,
            status_code: Some(503),
            outcome: AttemptOutcome::Throttle,
            retry_outcome: RetryOutcome::Retry,
            error_code: Some("SlowDown".into()),
            attribution: Attribution::new(
                "scan-1".into(),
                "s3-buckets",
                &["s3-buckets".into(), "s3-buckets".into()],
            ),
            cleanup_outcome: None,
            datapoints: None,
            unfiltered_quota: None,
            region: None,
        }
    }

    #[test]
    fn serializes_seed_000_field_names() {
        let json: serde_json::Value = serde_json::from_str(&event().to_json()).unwrap();
        for field in [
            "operation",
            "quota",
            "attempt",
            "retryCount",
            "startedAtMs",
            "preparationCount",
            "queueDurationMs",
            "transportDurationMs",
            "dispatched",
            "statusCode",
            "outcome",
            "retryOutcome",
            "attribution",
        ] {
            assert!(json.get(field).is_some(), "missing {field}: {json}");
        }
        assert_eq!(json["outcome"], "throttle");
        assert_eq!(json["retryOutcome"], "retry");
        assert_eq!(json["attribution"]["scanId"], "scan-1");
        assert_eq!(
            json["attribution"]["datasets"],
            serde_json::json!(["s3-buckets"])
        );
        assert_eq!(json["attribution"]["dataset"], "s3-buckets");
        assert!(json.get("cleanupOutcome").is_none());
    }

    #[test]
    fn several_datasets_are_sorted_and_have_no_single_dataset() {
        let a = Attribution::new("s".into(), "c", &["b".into(), "a".into(), "b".into()]);
        assert_eq!(a.datasets, ["a", "b"]);
        assert_eq!(a.dataset, None);
    }

    #[test]
    fn file_sink_writes_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let sink = FileTelemetry::create(&path).unwrap();
        emit(&sink, &event());
        emit(&sink, &event());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}
