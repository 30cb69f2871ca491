//! `ServiceMetrics`: the Prometheus text exposition at `GET /metrics` (prometheus-client).
//!
//! Two kinds of figures:
//! - **counted as they happen**: every attempt event of every scan (the service's
//!   [`TelemetrySink`]) — admissions, admission wait, throttled responses, retries, calls
//!   given up, per quota key (`account/region/service:group`) — and every finished scan
//!   by status, with its duration;
//! - **read at scrape time**: scans queued and running, and each quota key's live
//!   penalty, effective rate, and whether dispatch is stopped (the breaker), from the
//!   admission actors' status.
//!
//! Cardinality: a counter's series lives as long as the process, so its label must come
//! from a bounded set. A full key is `partition/account/region/service:group`: accounts
//! are the ones the service scans (its targets and ad-hoc requests), regions and groups
//! are fixed lists. The one unbounded part is an unresolved caller's account,
//! `unresolved:<scan-id>`, new for every such scan: [`label_of`] folds those into one
//! `unresolved` account. Scrape-time gauges are cleared before each scrape, so they show
//! only the keys admission holds now.

use std::fmt::Write;
use std::sync::Mutex;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tollgate_actors::KeyStatus;
use tollgate_engine::aws::telemetry::{AttemptEvent, AttemptOutcome, RetryOutcome, TelemetrySink};

use crate::record::ScanStatus;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyLabel {
    key: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

fn wait_histogram() -> Histogram {
    // 1 ms to ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

fn duration_histogram() -> Histogram {
    // 0.1 s to ~55 min.
    Histogram::new(exponential_buckets(0.1, 2.0, 16))
}

/// The service's metrics (shared; every method takes `&self`).
#[derive(Debug)]
pub struct ServiceMetrics {
    registry: Registry,
    admissions: Family<KeyLabel, Counter>,
    admission_wait: Family<KeyLabel, Histogram, fn() -> Histogram>,
    throttled: Family<KeyLabel, Counter>,
    retries: Family<KeyLabel, Counter>,
    gave_up: Family<KeyLabel, Counter>,
    scans_finished: Family<StatusLabel, Counter>,
    scan_duration: Family<StatusLabel, Histogram, fn() -> Histogram>,
    /// Scrape-time gauges, cleared before each scrape so vanished keys disappear.
    scans_active: Family<StatusLabel, Gauge>,
    penalty: Family<KeyLabel, Gauge>,
    rate_millis: Family<KeyLabel, Gauge>,
    stopped: Family<KeyLabel, Gauge>,
    scrape: Mutex<()>,
}

impl Default for ServiceMetrics {
    fn default() -> Self {
        ServiceMetrics::new()
    }
}

impl ServiceMetrics {
    /// Every metric registered, all zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("tollgate");
        let admissions = Family::<KeyLabel, Counter>::default();
        let admission_wait =
            Family::<KeyLabel, Histogram, fn() -> Histogram>::new_with_constructor(wait_histogram);
        let throttled = Family::<KeyLabel, Counter>::default();
        let retries = Family::<KeyLabel, Counter>::default();
        let gave_up = Family::<KeyLabel, Counter>::default();
        let scans_finished = Family::<StatusLabel, Counter>::default();
        let scan_duration =
            Family::<StatusLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        let scans_active = Family::<StatusLabel, Gauge>::default();
        let penalty = Family::<KeyLabel, Gauge>::default();
        let rate_millis = Family::<KeyLabel, Gauge>::default();
        let stopped = Family::<KeyLabel, Gauge>::default();
        registry.register(
            "admissions",
            "Attempts admitted by the gate, per quota key",
            admissions.clone(),
        );
        registry.register(
            "admission_wait_seconds",
            "Wait before transport (admission, credentials, signing), per quota key",
            admission_wait.clone(),
        );
        registry.register(
            "throttled_responses",
            "Responses that said the caller was throttled, per quota key",
            throttled.clone(),
        );
        registry.register(
            "retries",
            "Attempts that were retries, per quota key",
            retries.clone(),
        );
        registry.register(
            "calls_given_up",
            "Calls given up after a retryable failure, per quota key",
            gave_up.clone(),
        );
        registry.register(
            "scans_finished",
            "Scans finished, by status",
            scans_finished.clone(),
        );
        registry.register(
            "scan_duration_seconds",
            "Scan run time from start to stored report, by status",
            scan_duration.clone(),
        );
        registry.register(
            "scans_active",
            "Scans queued or running now",
            scans_active.clone(),
        );
        registry.register(
            "quota_penalty_steps",
            "Each quota key's penalty steps now",
            penalty.clone(),
        );
        registry.register(
            "quota_effective_rate_millis",
            "Each quota key's effective rate now, in thousandths of a request per second",
            rate_millis.clone(),
        );
        registry.register(
            "quota_dispatch_stopped",
            "1 when a quota key's dispatch is stopped (storage failure breaker)",
            stopped.clone(),
        );
        ServiceMetrics {
            registry,
            admissions,
            admission_wait,
            throttled,
            retries,
            gave_up,
            scans_finished,
            scan_duration,
            scans_active,
            penalty,
            rate_millis,
            stopped,
            scrape: Mutex::new(()),
        }
    }

    /// A scan finished with `status` after `seconds` of running (`None`: never ran).
    pub fn scan_finished(&self, status: ScanStatus, seconds: Option<f64>) {
        let label = StatusLabel {
            status: status.as_str().to_string(),
        };
        self.scans_finished.get_or_create(&label).inc();
        if let Some(seconds) = seconds {
            self.scan_duration.get_or_create(&label).observe(seconds);
        }
    }

    /// The text exposition, with `queued`/`running` counts and `keys` read just now.
    pub fn render(&self, queued: usize, running: usize, keys: &[KeyStatus]) -> String {
        let _one_scrape = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.scans_active.clear();
        self.penalty.clear();
        self.rate_millis.clear();
        self.stopped.clear();
        for (status, n) in [("queued", queued), ("running", running)] {
            self.scans_active
                .get_or_create(&StatusLabel {
                    status: status.to_string(),
                })
                .set(n as i64);
        }
        for k in keys {
            let label = KeyLabel {
                key: k.key.to_string(),
            };
            self.penalty
                .get_or_create(&label)
                .set(i64::from(k.state.penalty_steps));
            self.rate_millis
                .get_or_create(&label)
                .set((k.state.effective_rate_per_second * 1000.0).round() as i64);
            self.stopped
                .get_or_create(&label)
                .set(i64::from(k.storage_failure.is_some()));
        }
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            let _ = writeln!(text, "# encoding failed");
        }
        text
    }
}

impl TelemetrySink for ServiceMetrics {
    fn record(&self, event: &AttemptEvent) {
        let Some(key) = &event.quota else {
            return;
        };
        let label = label_of(key);
        if event.dispatched {
            self.admissions.get_or_create(&label).inc();
            self.admission_wait
                .get_or_create(&label)
                .observe(event.queue_duration_ms as f64 / 1000.0);
        }
        if event.outcome == AttemptOutcome::Throttle {
            self.throttled.get_or_create(&label).inc();
        }
        if event.retry_count > 0 && event.dispatched {
            self.retries.get_or_create(&label).inc();
        }
        if matches!(
            event.retry_outcome,
            RetryOutcome::AttemptsExhausted
                | RetryOutcome::AllowanceExhausted
                | RetryOutcome::Deadline
        ) {
            self.gave_up.get_or_create(&label).inc();
        }
    }
}

/// A key's counter label: the key, with an unresolved caller's per-scan account folded
/// into `unresolved` (module docs).
fn label_of(key: &str) -> KeyLabel {
    let mut parts: Vec<&str> = key.splitn(3, '/').collect();
    if parts
        .get(1)
        .is_some_and(|a| a.starts_with(tollgate_quota::key::UNRESOLVED_PREFIX))
    {
        parts[1] = "unresolved";
    }
    KeyLabel {
        key: parts.join("/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_accounts_share_one_label() {
        let a = label_of("aws/unresolved:scan-00000000000000a1/us-east-1/s3:control-plane");
        let b = label_of("aws/unresolved:scan-00000000000000b2/us-east-1/s3:control-plane");
        assert_eq!(a, b);
        assert_eq!(a.key, "aws/unresolved/us-east-1/s3:control-plane");
        let resolved = "aws/123456789012/us-east-1/s3:control-plane";
        assert_eq!(label_of(resolved).key, resolved);
    }

    #[test]
    fn finished_scans_and_active_counts_appear_in_the_exposition() {
        let metrics = ServiceMetrics::new();
        metrics.scan_finished(ScanStatus::Complete, Some(2.0));
        metrics.scan_finished(ScanStatus::Complete, Some(3.0));
        let text = metrics.render(1, 2, &[]);
        assert!(
            text.contains("tollgate_scans_finished_total{status=\"complete\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("tollgate_scans_active{status=\"queued\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("tollgate_scan_duration_seconds_count{status=\"complete\"} 2"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
