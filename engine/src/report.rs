//! The gate's part of a scan's report: the `throttling` block (what quota keys cost the
//! scan), the `fleet_degraded` notes (keys that admitted without the fleet table) and the
//! report's RFC 3339 timestamps. The rest of the report (datasets, items, reasons) is the
//! collectors' (`tollgate_collectors::output`), which re-exports these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tollgate_quota::Timestamp;

/// The report's `throttling` block (seed 001's shape): per-key counters, totals, one
/// readable line per eventful key, the keys whose rate was slowed and the breakers that
/// opened. Built by [`crate::throttling`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThrottlingSummary {
    /// Per quota key, what throttling cost it (eventful keys only).
    pub keys: BTreeMap<String, KeyThrottling>,
    /// The scan's sums over every key it used.
    pub totals: ThrottlingTotals,
    /// One line per eventful key, e.g. `aws/123456789012/us-east-1/kms:GetKeyLastUsage:
    /// throttled 11×, slowed to 1.25/s (policy 5/s), 10 retries, 1 call gave up`.
    pub messages: Vec<String>,
    /// Keys whose effective rate was cut below their policy while the scan ran.
    pub slowed: BTreeMap<String, SlowedKey>,
    /// Breaker scopes (`partition/account/region/service`) that opened during the scan
    /// or were not closed at its end.
    pub breakers: BTreeMap<String, BreakerSummary>,
}

/// The scan's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThrottlingTotals {
    /// Logical calls (each with all its attempts).
    pub calls: u64,
    /// Attempts answered with a throttling error.
    pub throttled: u64,
    /// Attempts that failed transiently after dispatch (5xx, timeouts, resets).
    pub transient_errors: u64,
    /// Retries sent.
    pub retries: u64,
    /// Calls that gave up (attempts, retry allowance or deadline ran out).
    pub gave_up: u64,
    /// Calls that ended unsent because their scope's breaker stayed open.
    pub rejected: u64,
    /// Openings of the scan's breakers seen while it ran.
    pub breaker_trips: u64,
    /// Time calls spent queued before dispatch (admission, signing), summed.
    pub wait_seconds: f64,
}

/// A key whose rate tollgate slowed after throttling or transient failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SlowedKey {
    /// The lowest effective rate seen while the scan ran, requests per second.
    pub effective_rate_per_second: f64,
    /// The key's policy rate.
    pub policy_rate_per_second: f64,
    /// Throttled attempts of this scan on the key.
    pub throttles: u64,
}

/// One breaker scope's part in the scan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BreakerSummary {
    /// `closed`, `open` or `half_open` when the scan ended.
    pub state: String,
    /// Openings seen while the scan ran.
    pub openings: u64,
}

/// What throttling cost one quota key during the scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeyThrottling {
    /// Physical attempts answered with a throttling error.
    pub throttled_responses: u64,
    /// Retries sent (attempts after the first of a call).
    pub retries: u64,
    /// Calls that ended without success for want of retries, time or patience (throttled,
    /// transient, retry allowance exhausted, deadline).
    pub gave_up_calls: u64,
    /// Logical calls on the key.
    pub calls: u64,
    /// Attempts that failed transiently after dispatch.
    pub transient_errors: u64,
    /// Calls that ended unsent because the key's breaker stayed open.
    pub rejected: u64,
    /// Time the key's calls spent queued before dispatch, summed, in seconds.
    pub wait_seconds: f64,
}

/// Queued time, summed over a key's calls, from which a key with no other event is
/// reported ("waited 418.6 s for rate limit"). Seed 001 counts a single second; tollgate
/// paces every call by design (kms:GetKeyLastUsage at 5/s queues 10 keys for 9 s in
/// total), so only a queue that dominated the scan is news.
pub const LONG_WAIT_SECONDS: f64 = 30.0;

impl KeyThrottling {
    /// True when nothing happened worth reporting: no throttle, transient failure, retry,
    /// give-up or breaker rejection, and less than [`LONG_WAIT_SECONDS`] queued.
    pub fn is_quiet(&self) -> bool {
        self.throttled_responses == 0
            && self.retries == 0
            && self.gave_up_calls == 0
            && self.transient_errors == 0
            && self.rejected == 0
            && self.wait_seconds < LONG_WAIT_SECONDS
    }
}

/// One key that admitted without the fleet table during the scan (docs/fleet.md,
/// "Degraded mode").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetDegraded {
    /// The canonical quota key.
    pub key: String,
    /// How the key admitted without the table.
    pub mode: DegradedMode,
    /// The table's error that degraded the key; it names the table.
    pub error: String,
    /// When the key left fleet mode, RFC 3339 UTC.
    pub since: String,
    /// When the table answered again; `null` if the key was still degraded when the
    /// scan finished.
    pub rejoined_at: Option<String>,
}

/// How a key admitted while the fleet table failed (`on_error`). Serialised in kebab case
/// (`local-share`), as the report has always spelled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DegradedMode {
    /// Admitted at the key's rate divided by the hosts seen.
    LocalShare,
    /// Requests refused.
    Stop,
}

impl DegradedMode {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DegradedMode::LocalShare => "local-share",
            DegradedMode::Stop => "stop",
        }
    }
}

impl std::fmt::Display for DegradedMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// RFC 3339 UTC with millisecond precision, for `started_at`/`finished_at`.
pub fn rfc3339(at: Timestamp) -> String {
    let micros = at.as_micros();
    let secs = (micros / 1_000_000) as i64;
    let nanos = ((micros % 1_000_000) / 1_000 * 1_000_000) as u32;
    format_date_time(&aws_smithy_types::DateTime::from_secs_and_nanos(
        secs, nanos,
    ))
}

/// RFC 3339 for an SDK timestamp.
pub fn format_date_time(at: &aws_smithy_types::DateTime) -> String {
    at.fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap_or_else(|_| at.secs().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degraded_modes_keep_their_json_spelling() {
        for (mode, text) in [
            (DegradedMode::LocalShare, "local-share"),
            (DegradedMode::Stop, "stop"),
        ] {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, text, "{mode:?}");
            assert_eq!(mode.as_str(), text);
            assert_eq!(serde_json::from_value::<DegradedMode>(json).unwrap(), mode);
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = Timestamp::from_millis(1_764_491_978_123);
        assert_eq!(rfc3339(at), "2025-11-30T08:39:38.123Z");
    }
}
