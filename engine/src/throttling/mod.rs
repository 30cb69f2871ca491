//! The report's `throttling` block: per scan and per quota key, what throttling cost.
//!
//! `ScanTelemetry` is the [`TelemetrySink`] the discovery runtime gives its gates. It
//! forwards every attempt event to the user's sink (`--telemetry FILE`) and tallies, per
//! scan and per quota key, calls, throttled responses, transient failures, retries, calls
//! that gave up or met an open breaker, and time queued, so the report can say where the
//! account pushed back without anyone parsing telemetry.
//!
//! What events cannot say (how far a key's rate was cut, whether its breaker opened) is
//! observed from the admission runtime: the supervisor samples the coordinator's status
//! while a scan has seen a throttle, a transient failure or a breaker refusal since the
//! last look ([`ScanTelemetry::hot_scans`], [`ScanTelemetry::observe`]), and once more as
//! the scan ends. [`summary`] turns the tallies into the block.
//!
//! # Layout
//! - this file: the sink and its per-scan tallies;
//! - [`summary`]: the pure step from tallies to the report's block, and its messages.

pub(crate) mod summary;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tollgate_actors::{BreakerStatus, KeyStatus};
use tollgate_quota::breaker::{BreakerScope, BreakerState};
use tollgate_quota::QuotaKey;

use crate::aws::telemetry::{AttemptEvent, AttemptOutcome, RetryOutcome, TelemetrySink};
use crate::report::{KeyThrottling, ThrottlingSummary};
use summary::{summarize, BreakerTally, KeyTally};

/// One scan's tallies.
#[derive(Debug, Default)]
struct ScanTally {
    keys: BTreeMap<String, KeyTally>,
    breakers: BTreeMap<String, BreakerTally>,
    /// Something since the last observation asks for another look at the runtime.
    hot: bool,
}

/// How many taken scans are remembered, so that an attempt event arriving after its
/// scan's report took the tallies is forwarded but not tallied again (it would start a
/// tally nobody takes: a leak per scan in a long-running service). Such events come
/// within moments of the report; a thousand scans is far more than run at once.
const TAKEN_REMEMBERED: usize = 1_024;

/// The tallies of the scans running, and the scans already taken (oldest first).
#[derive(Debug, Default)]
struct Tallies {
    scans: HashMap<String, ScanTally>,
    taken: VecDeque<String>,
    taken_set: HashSet<String>,
}

impl Tallies {
    fn forget(&mut self, scan_id: &str) -> Option<ScanTally> {
        if self.taken_set.insert(scan_id.to_owned()) {
            self.taken.push_back(scan_id.to_owned());
            if self.taken.len() > TAKEN_REMEMBERED {
                if let Some(oldest) = self.taken.pop_front() {
                    self.taken_set.remove(&oldest);
                }
            }
        }
        self.scans.remove(scan_id)
    }
}

/// Routes attempt events to the user's sink and to per-scan tallies.
#[derive(Debug, Clone)]
pub struct ScanTelemetry {
    user: Arc<dyn TelemetrySink>,
    tallies: Arc<Mutex<Tallies>>,
}

impl ScanTelemetry {
    /// Forward to `user` and tally.
    pub fn new(user: Arc<dyn TelemetrySink>) -> Self {
        ScanTelemetry {
            user,
            tallies: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tallies> {
        self.tallies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every quota key one scan has used so far (quiet ones too).
    pub fn keys(&self, scan_id: &str) -> BTreeSet<String> {
        self.lock()
            .scans
            .get(scan_id)
            .map(|t| t.keys.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether one scan has something to report so far.
    pub fn is_eventful(&self, scan_id: &str) -> bool {
        self.lock()
            .scans
            .get(scan_id)
            .is_some_and(|t| t.keys.values().any(|k| !k.counters.is_quiet()))
    }

    /// Scans that saw a throttle, a transient failure or a breaker refusal since they
    /// were last observed.
    pub fn hot_scans(&self) -> Vec<String> {
        self.lock()
            .scans
            .iter()
            .filter(|(_, t)| t.hot)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Note what the admission runtime says of one scan's keys now: each key's effective
    /// and policy rate (the lowest rate is kept), and each of their breakers' state (a
    /// breaker seen open after being seen otherwise counts an opening).
    pub fn observe(&self, scan_id: &str, keys: &[KeyStatus], breakers: &[BreakerStatus]) {
        let mut tallies = self.lock();
        let Some(scan) = tallies.scans.get_mut(scan_id) else {
            return;
        };
        scan.hot = false;
        // Indexed once: an organization scan has thousands of keys, and a search of the
        // status list per key would cost keys × statuses per sample.
        let by_key: HashMap<&str, &KeyStatus> = keys.iter().map(|k| (k.key.as_str(), k)).collect();
        let mut scopes = BTreeSet::new();
        for (key, tally) in scan.keys.iter_mut() {
            if let Ok(parsed) = key.parse::<QuotaKey>() {
                scopes.insert(BreakerScope::of(&parsed).to_string());
            }
            let Some(status) = by_key.get(key.as_str()) else {
                continue;
            };
            let rate = status.state.effective_rate_per_second;
            tally.lowest_rate = Some(tally.lowest_rate.map_or(rate, |low| low.min(rate)));
            tally.policy_rate = Some(status.state.policy.rate_per_second());
        }
        for breaker in breakers.iter().filter(|b| scopes.contains(&b.scope)) {
            let state = match breaker.state {
                BreakerState::Closed { .. } => "closed",
                BreakerState::Open { .. } => "open",
                BreakerState::HalfOpen { .. } => "half_open",
            };
            let tally = scan
                .breakers
                .entry(breaker.scope.clone())
                .or_insert(BreakerTally {
                    state: "closed",
                    openings: 0,
                });
            if state == "open" && tally.state != "open" {
                tally.openings += 1;
            }
            tally.state = state;
        }
    }

    /// Take (and forget) one scan's block; `None` when nothing eventful happened. Later
    /// events of that scan are still forwarded, not tallied.
    pub fn take(&self, scan_id: &str) -> Option<ThrottlingSummary> {
        let tally = self.lock().forget(scan_id).unwrap_or_default();
        summarize(&tally.keys, &tally.breakers)
    }
}

impl TelemetrySink for ScanTelemetry {
    fn record(&self, event: &AttemptEvent) {
        self.user.record(event);
        let key = event
            .quota
            .clone()
            .unwrap_or_else(|| format!("unkeyed/{}:{}", event.service, event.operation));
        let mut tallies = self.lock();
        if tallies.taken_set.contains(&event.attribution.scan_id) {
            return;
        }
        let scan = tallies
            .scans
            .entry(event.attribution.scan_id.clone())
            .or_default();
        // A GetMetricData attempt also counts under the datapoint budget it charged, so
        // a throttled or long-queued scan names that budget beside the request key (AWS's
        // throttle does not say which of the two ran out). `summary` keeps these
        // repeated counts out of the totals.
        let budget = budget_key(&key, event);
        let entry = scan.keys.entry(key).or_default();
        scan.hot |= tally(&mut entry.counters, event);
        if let Some(budget) = budget {
            tally(&mut scan.keys.entry(budget).or_default().counters, event);
        }
    }
}

/// The datapoint budget key a GetMetricData event under `key` charged, if it did.
fn budget_key(key: &str, event: &AttemptEvent) -> Option<String> {
    let charge = event.datapoints?;
    let request_key: QuotaKey = key.parse().ok()?;
    charge
        .budget
        .key_beside(&request_key)
        .ok()
        .map(|k| k.to_string())
}

/// Add one event to a key's tally; true when it asks for a look at the key's rate and
/// breaker (a throttle, a transient failure after dispatch, a breaker refusal).
fn tally(entry: &mut KeyThrottling, event: &AttemptEvent) -> bool {
    let throttled = event.outcome == AttemptOutcome::Throttle;
    let transient = event.dispatched && event.outcome == AttemptOutcome::Transient;
    let rejected = event.retry_outcome == RetryOutcome::BreakerOpen;
    if throttled {
        entry.throttled_responses += 1;
    }
    if transient {
        entry.transient_errors += 1;
    }
    if rejected {
        entry.rejected += 1;
    }
    if event.dispatched && event.retry_count > 0 {
        entry.retries += 1;
    }
    if !matches!(
        event.retry_outcome,
        RetryOutcome::Retry | RetryOutcome::Reprepare
    ) {
        entry.calls += 1;
    }
    if matches!(
        event.retry_outcome,
        RetryOutcome::AttemptsExhausted | RetryOutcome::AllowanceExhausted | RetryOutcome::Deadline
    ) {
        entry.gave_up_calls += 1;
    }
    entry.wait_seconds += event.queue_duration_ms as f64 / 1000.0;
    throttled || transient || rejected
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
            datapoints: None,
            unfiltered_quota: None,
            region: None,
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
        assert_eq!(sink.hot_scans(), ["a"], "a throttle asks for a look");
        let a = sink.take("a").expect("eventful");
        let t = a.keys["aws/123456789012/us-east-1/kms:GetKeyLastUsage"];
        assert_eq!(t.throttled_responses, 3);
        assert_eq!(t.retries, 2);
        assert_eq!(t.gave_up_calls, 1);
        assert_eq!(t.calls, 2, "one call gave up, one succeeded");
        assert_eq!(a.totals.calls, 2);
        assert_eq!(a.messages.len(), 1);
        assert_eq!(
            sink.keys("b").into_iter().collect::<Vec<_>>(),
            ["aws/123456789012/us-east-1/kms:GetKeyLastUsage"],
            "quiet keys are still keys the scan used"
        );
        assert_eq!(sink.take("b"), None, "a quiet scan has no block");
        assert_eq!(sink.take("a"), None, "taken once");
    }

    #[test]
    fn an_event_after_its_scans_report_is_forwarded_but_starts_no_tally() {
        let user = MemoryTelemetry::new();
        let sink = ScanTelemetry::new(Arc::new(user.clone()));
        use AttemptOutcome::*;
        use RetryOutcome::*;
        sink.record(&event("a", 1, Throttle, Retry));
        assert!(sink.take("a").is_some());
        sink.record(&event("a", 2, Throttle, AllowanceExhausted));
        assert_eq!(user.events().len(), 2, "still forwarded to the user's sink");
        assert!(sink.lock().scans.is_empty(), "no tally left behind");
        assert!(sink.hot_scans().is_empty());
        // Only the last TAKEN_REMEMBERED scans are remembered.
        for i in 0..TAKEN_REMEMBERED + 5 {
            let id = format!("s{i}");
            sink.record(&event(&id, 1, Success, Done));
            sink.take(&id);
        }
        let tallies = sink.lock();
        assert_eq!(tallies.taken.len(), TAKEN_REMEMBERED);
        assert_eq!(tallies.taken_set.len(), TAKEN_REMEMBERED);
        assert!(tallies.scans.is_empty());
    }

    #[test]
    fn a_throttled_get_metric_data_call_names_its_datapoint_budget_beside_its_key() {
        let sink = ScanTelemetry::new(Arc::new(MemoryTelemetry::new()));
        let metric_data = |attempt, outcome, retry| AttemptEvent {
            service: "cloudwatch".into(),
            operation: "GetMetricData".into(),
            quota: Some("aws/123456789012/us-east-1/cloudwatch:GetMetricData".into()),
            datapoints: Some(tollgate_quota::DatapointCharge {
                budget: tollgate_quota::DatapointBudget::Older,
                cost: 7_000,
                basis: tollgate_quota::datapoints::Basis::Counted,
            }),
            ..event("s", attempt, outcome, retry)
        };
        sink.record(&metric_data(
            1,
            AttemptOutcome::Throttle,
            RetryOutcome::Retry,
        ));
        sink.record(&metric_data(2, AttemptOutcome::Success, RetryOutcome::Done));
        sink.record(&event("s", 1, AttemptOutcome::Success, RetryOutcome::Done));
        assert_eq!(
            sink.keys("s").into_iter().collect::<Vec<_>>(),
            [
                "aws/123456789012/us-east-1/cloudwatch:GetMetricData",
                "aws/123456789012/us-east-1/cloudwatch:GetMetricData:older-datapoints",
                "aws/123456789012/us-east-1/kms:GetKeyLastUsage",
            ]
        );
        let block = sink.take("s").expect("a throttle is eventful");
        let budget =
            block.keys["aws/123456789012/us-east-1/cloudwatch:GetMetricData:older-datapoints"];
        assert_eq!((budget.throttled_responses, budget.calls), (1, 1));
        assert_eq!(
            block.totals.calls, 2,
            "the budget's counts are not added twice"
        );
        assert_eq!(block.totals.throttled, 1);
        assert!(
            block
                .messages
                .iter()
                .any(|m| m.contains("older-datapoints")),
            "{:?}",
            block.messages
        );
    }
}
