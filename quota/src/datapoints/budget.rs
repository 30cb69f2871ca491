//! Which account/region datapoint budget a GetMetricData attempt charges (issue 22,
//! item 1, the pure part).
//!
//! AWS meters GetMetricData datapoints against two separate quotas, chosen by how old
//! the request's `StartTime` is. Seed 000: "The recent bucket applies when StartTime is
//! at most 3 hours old, including exactly 3 hours. A request starting earlier uses the
//! older bucket even when its end includes recent metrics. […] Invalid start times use
//! the stricter recent bucket." The choice is made per attempt, from the attempt instant
//! the caller passes, so a retry that crosses the 3-hour mark moves to `older`.
//!
//! A start in the future is less than 3 hours old and uses `recent`; a missing start, or
//! one outside [`WallClock`]'s range, is invalid and uses `recent`.

use std::time::Duration;

use crate::defaults::{self, DefaultRow, OLDER_DATAPOINTS_GROUP, RECENT_DATAPOINTS_GROUP};
use crate::key::{KeyError, QuotaKey, ServiceGroup};
use crate::schedule::WallClock;

/// The oldest `StartTime` (inclusive) that still charges [`DatapointBudget::Recent`].
pub const RECENT_MAX_AGE: Duration = Duration::from_secs(3 * 3_600);

/// The service whose keys hold the datapoint budgets.
pub const DATAPOINTS_SERVICE: &str = "cloudwatch";

/// One of the two datapoint budgets of an account and region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum DatapointBudget {
    /// `cloudwatch:GetMetricData:recent-datapoints` (180,000/s, burst 180,000).
    #[serde(rename = "recent-datapoints")]
    Recent,
    /// `cloudwatch:GetMetricData:older-datapoints` (396,000/s, burst 396,000).
    #[serde(rename = "older-datapoints")]
    Older,
}

impl DatapointBudget {
    /// The budget an attempt at `at` charges for a request whose `StartTime` is
    /// `start_time_ms` (Unix milliseconds, `None` if absent).
    pub fn for_start(start_time_ms: Option<i64>, at: WallClock) -> DatapointBudget {
        let Some(start) = start_time_ms.and_then(WallClock::from_unix_millis) else {
            return DatapointBudget::Recent;
        };
        // Both are in range, so the difference cannot overflow; negative is the future.
        let age_ms = at.unix_millis() - start.unix_millis();
        if age_ms <= RECENT_MAX_AGE.as_millis() as i64 {
            DatapointBudget::Recent
        } else {
            DatapointBudget::Older
        }
    }

    /// The quota group of this budget within [`DATAPOINTS_SERVICE`], as in
    /// [`defaults::DEFAULT_ROWS`] and `TOLLGATE_QUOTA_OVERRIDES` keys.
    pub fn group(self) -> &'static str {
        match self {
            DatapointBudget::Recent => RECENT_DATAPOINTS_GROUP,
            DatapointBudget::Older => OLDER_DATAPOINTS_GROUP,
        }
    }

    /// The budget's short name, `recent-datapoints` or `older-datapoints` (telemetry's
    /// and replay's `datapoints.budget`).
    pub fn label(self) -> &'static str {
        match self {
            DatapointBudget::Recent => "recent-datapoints",
            DatapointBudget::Older => "older-datapoints",
        }
    }

    /// The canonical name, `cloudwatch:GetMetricData:recent-datapoints` or
    /// `…:older-datapoints` (the override key and `tollgate policies` row).
    pub fn service_group(self) -> ServiceGroup {
        ServiceGroup::new(DATAPOINTS_SERVICE, self.group()).expect("both groups are canonical")
    }

    /// This budget's key in the partition, account and region of `request_key` (the
    /// `cloudwatch:GetMetricData` key of the attempt).
    pub fn key_beside(self, request_key: &QuotaKey) -> Result<QuotaKey, KeyError> {
        QuotaKey::new(
            request_key.partition(),
            request_key.account(),
            request_key.region(),
            DATAPOINTS_SERVICE,
            self.group(),
        )
    }

    /// The default row of this budget.
    pub fn default_row(self) -> &'static DefaultRow {
        defaults::lookup(DATAPOINTS_SERVICE, self.group())
            .expect("both datapoint budgets have a default row")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::Verified;

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn exactly_three_hours_old_is_recent_and_a_millisecond_more_is_older() {
        let at = w("2026-01-05T12:00:00Z");
        let start = |text| Some(w(text).unix_millis());
        let cases: &[(Option<i64>, DatapointBudget)] = &[
            (start("2026-01-05T09:00:00Z"), DatapointBudget::Recent),
            (start("2026-01-05T08:59:59.999Z"), DatapointBudget::Older),
            (start("2026-01-05T11:59:59Z"), DatapointBudget::Recent),
            (start("2026-01-05T13:00:00Z"), DatapointBudget::Recent),
            (start("2025-12-22T00:00:00Z"), DatapointBudget::Older),
            (None, DatapointBudget::Recent),
            (Some(-1), DatapointBudget::Recent),
            (Some(i64::MAX), DatapointBudget::Recent),
            (Some(i64::MIN), DatapointBudget::Recent),
        ];
        for &(start, budget) in cases {
            assert_eq!(DatapointBudget::for_start(start, at), budget, "{start:?}");
        }
    }

    #[test]
    fn a_budget_key_shares_the_request_keys_account_and_region() {
        let request: QuotaKey = "aws/123456789012/eu-west-1/cloudwatch:GetMetricData"
            .parse()
            .unwrap();
        let key = DatapointBudget::Older.key_beside(&request).unwrap();
        assert_eq!(
            key.to_string(),
            "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:older-datapoints"
        );
    }

    #[test]
    fn the_budgets_are_the_seed_rows_and_verified() {
        let figures = |b: DatapointBudget| {
            let r = b.default_row();
            (r.service, r.rate_per_second, r.burst, r.verified)
        };
        assert_eq!(
            figures(DatapointBudget::Recent),
            ("cloudwatch", 180_000.0, 180_000.0, Verified::AwsDocs)
        );
        assert_eq!(
            figures(DatapointBudget::Older),
            ("cloudwatch", 396_000.0, 396_000.0, Verified::AwsDocs)
        );
        for b in [DatapointBudget::Recent, DatapointBudget::Older] {
            assert_eq!(b.group(), format!("GetMetricData:{}", b.label()));
            let name = format!("cloudwatch:GetMetricData:{}", b.label());
            assert_eq!(name.parse::<ServiceGroup>().unwrap(), b.service_group());
            assert_eq!(
                serde_json::to_string(&b).unwrap(),
                format!("\"{}\"", b.label())
            );
        }
    }
}
