//! The "throttled gaps" report: per quota key, what throttling cost a scan.
//!
//! `ScanTelemetry` is the [`TelemetrySink`] the discovery runtime gives its gates. It
//! forwards every attempt event to the user's sink (`--telemetry FILE`) and tallies, per
//! scan and per quota key, the throttled responses, the retries sent and the calls that
//! gave up, so the report can say where the account pushed back without anyone parsing
//! telemetry.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::aws::telemetry::{AttemptEvent, AttemptOutcome, RetryOutcome, TelemetrySink};
use crate::output::KeyThrottling;

/// Routes attempt events to the user's sink and to per-scan tallies.
#[derive(Debug, Clone)]
pub struct ScanTelemetry {
    user: Arc<dyn TelemetrySink>,
    tallies: Arc<Mutex<HashMap<String, BTreeMap<String, KeyThrottling>>>>,
}

impl ScanTelemetry {
    /// Forward to `user` and tally.
    pub fn new(user: Arc<dyn TelemetrySink>) -> Self {
        ScanTelemetry {
            user,
            tallies: Arc::default(),
        }
    }

    /// Every quota key one scan has used so far (quiet ones too).
    pub fn keys(&self, scan_id: &str) -> BTreeSet<String> {
        let tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        tallies
            .get(scan_id)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Take (and forget) one scan's tally; keys with nothing to report are left out.
    pub fn take(&self, scan_id: &str) -> BTreeMap<String, KeyThrottling> {
        let mut tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        let mut tally = tallies.remove(scan_id).unwrap_or_default();
        tally.retain(|_, t| !t.is_quiet());
        tally
    }
}

impl TelemetrySink for ScanTelemetry {
    fn record(&self, event: &AttemptEvent) {
        self.user.record(event);
        let key = event
            .quota
            .clone()
            .unwrap_or_else(|| format!("unkeyed/{}:{}", event.service, event.operation));
        let mut tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        let entry = tallies
            .entry(event.attribution.scan_id.clone())
            .or_default()
            .entry(key)
            .or_default();
        tally(entry, event);
    }
}

/// Add one event to a key's tally.
fn tally(entry: &mut KeyThrottling, event: &AttemptEvent) {
    if event.outcome == AttemptOutcome::Throttle {
        entry.throttled_responses += 1;
    }
    if event.dispatched && event.retry_count > 0 {
        entry.retries += 1;
    }
    if matches!(
        event.retry_outcome,
        RetryOutcome::AttemptsExhausted | RetryOutcome::AllowanceExhausted | RetryOutcome::Deadline
    ) {
        entry.gave_up_calls += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::telemetry::{Attribution, MemoryTelemetry};

    fn event(
        scan: &str,
        attempt: u32,
        outcome: AttemptOutcome,
        retry: RetryOutcome,
    ) -> AttemptEvent {
        AttemptEvent {
            service: "kms".into(),
            operation: "GetKeyLastUsage".into(),
            quota: Some("aws/123456789012/us-east-1/kms:GetKeyLastUsage".into()),
            attempt,
            retry_count: attempt - 1,
            started_at_ms: 0,
            preparation_count: 1,
            queue_duration_ms: 0,
            transport_duration_ms: 1,
            dispatched: true,
            status_code: Some(400),
            outcome,
            retry_outcome: retry,
            error_code: None,
            attribution: Attribution::new(scan.into(), "kms", &["kms-keys".into()]),
            cleanup_outcome: None,
        }
    }

    #[test]
    fn tallies_per_scan_and_key_and_forwards() {
        let user = MemoryTelemetry::new();
        let sink = ScanTelemetry::new(Arc::new(user.clone()));
        use AttemptOutcome::*;
        use RetryOutcome::*;
        sink.record(&event("a", 1, Throttle, Retry));
        sink.record(&event("a", 2, Throttle, Retry));
        sink.record(&event("a", 3, Throttle, AllowanceExhausted));
        sink.record(&event("a", 1, Success, Done));
        sink.record(&event("b", 1, Success, Done));
        assert_eq!(user.events().len(), 5);
        let a = sink.take("a");
        let t = a["aws/123456789012/us-east-1/kms:GetKeyLastUsage"];
        assert_eq!(t.throttled_responses, 3);
        assert_eq!(t.retries, 2);
        assert_eq!(t.gave_up_calls, 1);
        assert_eq!(
            sink.keys("b").into_iter().collect::<Vec<_>>(),
            ["aws/123456789012/us-east-1/kms:GetKeyLastUsage"],
            "quiet keys are still keys the scan used"
        );
        assert!(sink.take("b").is_empty(), "quiet keys are left out");
        assert!(sink.take("a").is_empty(), "taken once");
    }
}
