//! `ServiceMetrics`: the Prometheus text exposition at `GET /metrics` (prometheus-client).
//!
//! Two kinds of figures:
//! - **counted as they happen**: every attempt event of every scan (the service's
//!   [`TelemetrySink`]) — admissions, admission wait, throttled responses, retries, calls
//!   given up, per quota key (`account/region/service:group`) — and every finished scan
//!   by status, with its duration;
//! - **read at scrape time**: scans queued and running, each listed quota key's live
//!   penalty, effective rate, and whether dispatch is stopped (the breaker), from the
//!   admission actors' status, and each busy account's admissions and throttled
//!   responses over the last five minutes (from [`Activity`]).
//!
//! Cardinality is bounded whatever the number of accounts (an organization target scans
//! hundreds), and says so in the exposition:
//! - a counter's series lives as long as the process, and must not change meaning, so
//!   its account part is sticky: the first [`COUNTED_ACCOUNTS`] accounts the service
//!   counts keep their own, every later one is counted under `other` (and an unresolved
//!   caller's per-scan account, `unresolved:<scan-id>`, under `unresolved`, see
//!   [`label_of`]). At most `COUNTED_ACCOUNTS + 2` accounts × regions × groups keys.
//! - per-account gauges are read at scrape time, so they can follow activity: the
//!   [`TOP_ACCOUNTS`] accounts with the most admissions over the last five minutes get a
//!   series each, the rest are summed under `other`.
//! - per-key gauges are cleared before each scrape and written for at most
//!   [`LISTED_KEYS`] keys, the most held back first (dispatch stopped, then most penalty
//!   steps); `tollgate_quota_keys{listed="false"}` counts the ones left out.
//! - `tollgate_inventory_resources{resource_type, account}`: the resources of each
//!   account's latest stored scan (docs/inventory.md), for the [`INVENTORY_SERIES`]
//!   largest type-and-account pairs; the rest are summed under `other`/`other`.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tollgate_actors::KeyStatus;
use tollgate_engine::aws::telemetry::{AttemptEvent, AttemptOutcome, RetryOutcome, TelemetrySink};

use crate::activity::{Activity, ScanAccounts};
use crate::record::ScanStatus;

/// Accounts whose counters carry their own account; later ones count under `other`.
pub const COUNTED_ACCOUNTS: usize = 8;
/// Accounts with a series of their own in the per-account gauges (by recent activity).
pub const TOP_ACCOUNTS: usize = 10;
/// Keys with per-key gauges in one scrape (the most held back first).
pub const LISTED_KEYS: usize = 100;
/// Type-and-account series of `tollgate_inventory_resources` (the rest: `other`).
pub const INVENTORY_SERIES: usize = 100;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyLabel {
    key: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AccountLabel {
    account: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InventoryLabel {
    resource_type: String,
    account: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListedLabel {
    listed: String,
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
    quota_keys: Family<ListedLabel, Gauge>,
    account_admissions: Family<AccountLabel, Gauge>,
    account_throttled: Family<AccountLabel, Gauge>,
    inventory: Family<InventoryLabel, Gauge>,
    /// Resources per account and type of each account's latest stored scan.
    stored: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    /// The accounts whose counters carry their own account (sticky, at most
    /// [`COUNTED_ACCOUNTS`]).
    counted: Mutex<HashSet<String>>,
    /// Every key's recent admissions and throttled responses (the page's charts).
    activity: Arc<Activity>,
    /// The accounts each running scan has called (the API places scans by them).
    scan_accounts: ScanAccounts,
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
        let mut metrics = ServiceMetrics {
            registry: Registry::with_prefix("tollgate"),
            admissions: Family::default(),
            admission_wait: Family::new_with_constructor(wait_histogram),
            throttled: Family::default(),
            retries: Family::default(),
            gave_up: Family::default(),
            scans_finished: Family::default(),
            scan_duration: Family::new_with_constructor(duration_histogram),
            scans_active: Family::default(),
            penalty: Family::default(),
            rate_millis: Family::default(),
            stopped: Family::default(),
            quota_keys: Family::default(),
            account_admissions: Family::default(),
            account_throttled: Family::default(),
            inventory: Family::default(),
            stored: Mutex::new(BTreeMap::new()),
            counted: Mutex::new(HashSet::new()),
            activity: Arc::new(Activity::default()),
            scan_accounts: ScanAccounts::default(),
            scrape: Mutex::new(()),
        };
        metrics.register_counted();
        metrics.register_scraped();
        metrics
    }

    /// Registers the figures counted as they happen (module docs), in exposition order.
    fn register_counted(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "admissions",
            "Attempts admitted by the gate, per quota key",
            self.admissions.clone(),
        );
        registry.register(
            "admission_wait_seconds",
            "Wait before transport (admission, credentials, signing), per quota key",
            self.admission_wait.clone(),
        );
        registry.register(
            "throttled_responses",
            "Responses that said the caller was throttled, per quota key",
            self.throttled.clone(),
        );
        registry.register(
            "retries",
            "Attempts that were retries, per quota key",
            self.retries.clone(),
        );
        registry.register(
            "calls_given_up",
            "Calls given up after a retryable failure, per quota key",
            self.gave_up.clone(),
        );
        registry.register(
            "scans_finished",
            "Scans finished, by status",
            self.scans_finished.clone(),
        );
        registry.register(
            "scan_duration_seconds",
            "Scan run time from start to stored report, by status",
            self.scan_duration.clone(),
        );
    }

    /// Registers the gauges read at scrape time (module docs), after the counted ones.
    fn register_scraped(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "scans_active",
            "Scans queued or running now",
            self.scans_active.clone(),
        );
        registry.register(
            "quota_penalty_steps",
            "Each quota key's penalty steps now",
            self.penalty.clone(),
        );
        registry.register(
            "quota_effective_rate_millis",
            "Each quota key's effective rate now, in thousandths of a request per second",
            self.rate_millis.clone(),
        );
        registry.register(
            "quota_dispatch_stopped",
            "1 when a quota key's dispatch is stopped (storage failure breaker)",
            self.stopped.clone(),
        );
        registry.register(
            "quota_keys",
            "Quota keys admission holds now, by whether their per-key gauges are listed",
            self.quota_keys.clone(),
        );
        registry.register(
            "account_recent_admissions",
            "Attempts admitted over the last five minutes, for the busiest accounts and `other`",
            self.account_admissions.clone(),
        );
        registry.register(
            "account_recent_throttled_responses",
            "Throttled responses over the last five minutes, for the busiest accounts and `other`",
            self.account_throttled.clone(),
        );
        registry.register(
            "inventory_resources",
            "Resources in each account's latest stored scan, by type, for the largest type-and-account pairs and `other`",
            self.inventory.clone(),
        );
    }

    /// A report was stored: each of its accounts' resources by type replace that
    /// account's previous figures.
    pub fn inventory_stored(&self, report: &serde_json::Value) {
        let accounts: Vec<&serde_json::Value> = match report["accounts"].as_array() {
            Some(accounts) => accounts.iter().collect(),
            None => vec![report],
        };
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        for doc in accounts {
            let account = doc["account"].as_str().unwrap_or("unknown").to_owned();
            let mut by_type = BTreeMap::new();
            for dataset in doc["datasets"]
                .as_object()
                .into_iter()
                .flat_map(|d| d.values())
            {
                for item in dataset["items"].as_array().into_iter().flatten() {
                    let t = item["resource_type"]
                        .as_str()
                        .unwrap_or("unknown")
                        .to_owned();
                    *by_type.entry(t).or_insert(0) += 1;
                }
            }
            stored.insert(account, by_type);
        }
    }

    /// Every key's recent admissions and throttled responses.
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    /// The accounts each running scan has called so far (by the engine's scan id).
    pub fn scan_accounts(&self) -> &ScanAccounts {
        &self.scan_accounts
    }

    /// A counter's label for `key`: [`label_of`], with the account folded into `other`
    /// past the first [`COUNTED_ACCOUNTS`] (module docs).
    fn counter_label(&self, key: &str) -> KeyLabel {
        let label = label_of(key);
        let mut parts: Vec<&str> = label.key.splitn(3, '/').collect();
        let Some(account) = parts.get(1).copied() else {
            return label;
        };
        if account == "unresolved" {
            return label;
        }
        let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        if counted.contains(account) {
            return label;
        }
        if counted.len() < COUNTED_ACCOUNTS {
            counted.insert(account.to_string());
            return label;
        }
        parts[1] = "other";
        KeyLabel {
            key: parts.join("/"),
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

    /// The text exposition, with `queued`/`running` counts and `keys` read just now, at
    /// `now_ms` (Unix milliseconds, the admission clock).
    pub fn render(&self, queued: usize, running: usize, keys: &[KeyStatus], now_ms: u64) -> String {
        let _one_scrape = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.scans_active.clear();
        self.penalty.clear();
        self.rate_millis.clear();
        self.stopped.clear();
        self.quota_keys.clear();
        self.account_admissions.clear();
        self.account_throttled.clear();
        self.inventory.clear();
        let stored = self
            .stored
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for ((resource_type, account), n) in top_inventory(&stored) {
            self.inventory
                .get_or_create(&InventoryLabel {
                    resource_type,
                    account,
                })
                .set(n as i64);
        }
        for (account, (admitted, throttled)) in top_accounts(self.activity.per_account(now_ms)) {
            let label = AccountLabel { account };
            self.account_admissions
                .get_or_create(&label)
                .set(admitted as i64);
            self.account_throttled
                .get_or_create(&label)
                .set(throttled as i64);
        }
        let listed = listed_keys(keys);
        for (listed_too, n) in [("true", listed.len()), ("false", keys.len() - listed.len())] {
            self.quota_keys
                .get_or_create(&ListedLabel {
                    listed: listed_too.to_string(),
                })
                .set(n as i64);
        }
        for (status, n) in [("queued", queued), ("running", running)] {
            self.scans_active
                .get_or_create(&StatusLabel {
                    status: status.to_string(),
                })
                .set(n as i64);
        }
        for k in listed {
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
        self.scan_accounts.note(&event.attribution.scan_id, key);
        let throttled = event.outcome == AttemptOutcome::Throttle;
        if event.dispatched || throttled {
            let sent_at = event.started_at_ms.saturating_add(event.queue_duration_ms);
            self.activity.record(
                key,
                sent_at,
                u32::from(event.dispatched),
                u32::from(throttled),
            );
        }
        let label = self.counter_label(key);
        if event.dispatched {
            self.admissions.get_or_create(&label).inc();
            self.admission_wait
                .get_or_create(&label)
                .observe(event.queue_duration_ms as f64 / 1000.0);
        }
        if throttled {
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

/// The [`TOP_ACCOUNTS`] accounts with the most recent admissions (then throttled
/// responses, then id), each with its sums, and the rest summed as `other`.
fn top_accounts(
    per_account: std::collections::HashMap<String, (u64, u64)>,
) -> Vec<(String, (u64, u64))> {
    let mut ranked: Vec<(String, (u64, u64))> = per_account.into_iter().collect();
    ranked.sort_by(|(a, (a_adm, a_thr)), (b, (b_adm, b_thr))| {
        (b_adm, b_thr).cmp(&(a_adm, a_thr)).then_with(|| a.cmp(b))
    });
    if ranked.len() <= TOP_ACCOUNTS {
        return ranked;
    }
    let rest = ranked.split_off(TOP_ACCOUNTS);
    let other = rest
        .iter()
        .fold((0, 0), |(a, t), (_, (ra, rt))| (a + ra, t + rt));
    ranked.push(("other".to_string(), other));
    ranked
}

/// The [`INVENTORY_SERIES`] largest (type, account) pairs, then the rest summed under
/// (`other`, `other`).
fn top_inventory(stored: &BTreeMap<String, BTreeMap<String, u64>>) -> Vec<((String, String), u64)> {
    let mut ranked: Vec<((String, String), u64)> = stored
        .iter()
        .flat_map(|(account, types)| {
            types
                .iter()
                .map(move |(t, n)| ((t.clone(), account.clone()), *n))
        })
        .collect();
    ranked.sort_by(|(a, an), (b, bn)| bn.cmp(an).then_with(|| a.cmp(b)));
    if ranked.len() > INVENTORY_SERIES {
        let rest: u64 = ranked
            .split_off(INVENTORY_SERIES)
            .iter()
            .map(|(_, n)| n)
            .sum();
        ranked.push((("other".to_owned(), "other".to_owned()), rest));
    }
    ranked
}

/// The keys whose per-key gauges are written: at most [`LISTED_KEYS`], dispatch stopped
/// first, then the most penalty steps, then by key.
fn listed_keys(keys: &[KeyStatus]) -> Vec<&KeyStatus> {
    let mut ranked: Vec<&KeyStatus> = keys.iter().collect();
    ranked.sort_by(|a, b| {
        let held = |k: &KeyStatus| (k.storage_failure.is_some(), k.state.penalty_steps);
        held(b).cmp(&held(a)).then_with(|| a.key.cmp(&b.key))
    });
    ranked.truncate(LISTED_KEYS);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inventory_series_are_bounded_and_the_rest_is_other() {
        let metrics = ServiceMetrics::new();
        let accounts: Vec<serde_json::Value> = (0..60)
            .map(|a| {
                serde_json::json!({"account": format!("{a:012}"), "datasets": {
                    "s3-buckets": {"items": [{"resource_type": "AWS::S3::Bucket"}, {"resource_type": "AWS::S3::Bucket"}]},
                    "kms-keys": {"items": [{"resource_type": "AWS::KMS::Key"}]},
                }})
            })
            .collect();
        metrics.inventory_stored(&serde_json::json!({ "accounts": accounts }));
        let text = metrics.render(0, 0, &[], 0);
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("tollgate_inventory_resources{"))
            .collect();
        assert_eq!(series.len(), INVENTORY_SERIES + 1, "{text}");
        // 60 accounts x 2 types = 120 pairs: the 60 bucket pairs (2 each) first, then
        // 40 key pairs; 20 keys summed under other.
        assert!(
            series
                .iter()
                .any(|l| l.contains(r#"account="other""#) && l.ends_with(" 20")),
            "{series:?}"
        );
        // A later scan of one account replaces that account's figures.
        metrics.inventory_stored(&serde_json::json!({"account": "000000000000", "datasets": {}}));
        let text = metrics.render(0, 0, &[], 0);
        assert!(!text.contains(r#"account="000000000000""#), "{text}");
    }

    #[test]
    fn unresolved_accounts_share_one_label() {
        let a = label_of("aws/unresolved:scan-00000000000000a1/us-east-1/s3:control-plane");
        let b = label_of("aws/unresolved:scan-00000000000000b2/us-east-1/s3:control-plane");
        assert_eq!(a, b);
        assert_eq!(a.key, "aws/unresolved/us-east-1/s3:control-plane");
        let resolved = "aws/123456789012/us-east-1/s3:control-plane";
        assert_eq!(label_of(resolved).key, resolved);
    }

    fn attempt(key: &str, at_ms: u64, outcome: AttemptOutcome) -> AttemptEvent {
        AttemptEvent {
            service: "kms".into(),
            operation: "ListKeys".into(),
            quota: Some(key.into()),
            attempt: 1,
            retry_count: 0,
            started_at_ms: at_ms,
            preparation_count: 1,
            queue_duration_ms: 0,
            transport_duration_ms: 1,
            dispatched: true,
            status_code: Some(200),
            outcome,
            retry_outcome: RetryOutcome::Done,
            error_code: None,
            attribution: tollgate_engine::aws::telemetry::Attribution::new(
                "scan-1".into(),
                "kms",
                &["kms-keys".into()],
            ),
            cleanup_outcome: None,
            datapoints: None,
            unfiltered_quota: None,
            region: None,
        }
    }

    fn status_of(key: &str, penalty_steps: u8) -> KeyStatus {
        let now = tollgate_quota::Timestamp::from_millis(T0);
        let policy = tollgate_quota::Policy::new(10.0, 10.0, 10, 20).unwrap();
        let mut state = tollgate_quota::QuotaState::new(policy, now).snapshot(now);
        state.penalty_steps = penalty_steps;
        KeyStatus {
            key: key.into(),
            state,
            waiting_for_reservation: 0,
            waiting_for_admission: 0,
            storage_failure: None,
            calendar: None,
            fleet: None,
            fleet_degraded: None,
        }
    }

    const T0: u64 = 1_800_000_000_000;

    /// The label values of `metric`'s series in `text`.
    fn series<'a>(text: &'a str, metric: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{metric}{{")))
            .collect()
    }

    #[test]
    fn two_hundred_accounts_keep_the_exposition_s_series_bounded() {
        let metrics = ServiceMetrics::new();
        let mut statuses = Vec::new();
        // Account i makes i + 1 calls per key: the busiest accounts are the last ones.
        for account in 0..200u64 {
            for region in ["us-east-1", "eu-west-1", "ap-south-1"] {
                for op in ["kms:ListKeys", "lambda:ListFunctions"] {
                    let key = format!("aws/{:012}/{region}/{op}", account);
                    for _ in 0..=account {
                        metrics.record(&attempt(&key, T0, AttemptOutcome::Success));
                    }
                    metrics.record(&attempt(&key, T0, AttemptOutcome::Throttle));
                    statuses.push(status_of(&key, u8::from(account == 3)));
                }
            }
        }
        let text = metrics.render(0, 1, &statuses, T0 + 1_000);
        let admissions = series(&text, "tollgate_admissions_total");
        // 8 named accounts and `other`, 6 keys each.
        assert_eq!(
            admissions.len(),
            (COUNTED_ACCOUNTS + 1) * 6,
            "{admissions:#?}"
        );
        let other = "tollgate_admissions_total{key=\"aws/other/us-east-1/kms:ListKeys\"}";
        let others = admissions.iter().find(|l| l.starts_with(other)).unwrap();
        let folded: u64 = (COUNTED_ACCOUNTS as u64..200).map(|a| a + 2).sum();
        assert!(
            others.ends_with(&format!(" {folded}")),
            "{others}: {folded}"
        );
        assert_eq!(
            series(&text, "tollgate_quota_penalty_steps").len(),
            LISTED_KEYS
        );
        assert!(
            text.contains(
                "tollgate_quota_penalty_steps{key=\"aws/000000000003/ap-south-1/kms:ListKeys\"} 1"
            ),
            "the most held back keys are listed first"
        );
        assert!(
            text.contains("tollgate_quota_keys{listed=\"false\"} 1100"),
            "{text}"
        );
        let busiest = series(&text, "tollgate_account_recent_admissions");
        assert_eq!(busiest.len(), TOP_ACCOUNTS + 1, "{busiest:#?}");
        assert!(
            busiest.contains(&"tollgate_account_recent_admissions{account=\"000000000199\"} 1206"),
            "{busiest:#?}"
        );
        let rest: u64 = (0..190u64).map(|a| (a + 2) * 6).sum();
        assert!(
            busiest.contains(
                &format!("tollgate_account_recent_admissions{{account=\"other\"}} {rest}").as_str()
            ),
            "{busiest:#?}"
        );
        assert!(text
            .contains("tollgate_account_recent_throttled_responses{account=\"000000000199\"} 6"));
    }

    #[test]
    fn finished_scans_and_active_counts_appear_in_the_exposition() {
        let metrics = ServiceMetrics::new();
        metrics.scan_finished(ScanStatus::Complete, Some(2.0));
        metrics.scan_finished(ScanStatus::Complete, Some(3.0));
        let text = metrics.render(1, 2, &[], 0);
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
