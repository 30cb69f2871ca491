//! What a GetMetricData call charges besides its request token: the datapoint budget of
//! each attempt (issue 22; seed 000's "CloudWatch datapoints").
//!
//! [`AwsGate::call_metric_data`](crate::aws::AwsGate::call_metric_data) makes a
//! [`MetricDataPlan`] once per call (one per page: each page is its own call) from the
//! request as the gate sees it and the two budget keys beside the call's request key.
//! The connector asks it for each physical attempt, retries included, immediately before
//! final admission: [`MetricDataPlan::charge_at`] computes
//! [`DatapointCharge::for_attempt`] at that instant (so a retry that crosses the 3-hour
//! mark charges `older-datapoints`), and the admission charges the request token and
//! the datapoints together (`tollgate_actors::paired`). Prior pages' responses never
//! lower a later page's charge: the plan holds the request, never a response.

use tollgate_quota::datapoints::DatapointBudget;
use tollgate_quota::{
    DatapointCharge, KeyError, MetricDataRequest, Policy, PolicyTable, QuotaKey, Timestamp,
    WallClock,
};

/// A budget's key and the caller's policy for it.
#[derive(Debug, Clone)]
pub(crate) struct BudgetKey {
    pub key: QuotaKey,
    pub policy: Policy,
}

/// One GetMetricData call's request and its two datapoint budgets.
#[derive(Debug, Clone)]
pub(crate) struct MetricDataPlan {
    request: MetricDataRequest,
    recent: BudgetKey,
    older: BudgetKey,
}

impl MetricDataPlan {
    /// The plan of `request` sent under `request_key` (`cloudwatch:GetMetricData` of an
    /// account and region), with the budgets' policies from `policies`.
    pub fn new(
        request: MetricDataRequest,
        request_key: &QuotaKey,
        policies: &PolicyTable,
    ) -> Result<MetricDataPlan, KeyError> {
        let budget = |b: DatapointBudget| -> Result<BudgetKey, KeyError> {
            let key = b.key_beside(request_key)?;
            let policy = policies.policy_for_key(&key);
            Ok(BudgetKey { key, policy })
        };
        Ok(MetricDataPlan {
            request,
            recent: budget(DatapointBudget::Recent)?,
            older: budget(DatapointBudget::Older)?,
        })
    }

    /// The charge of an attempt admitted at `now` on the admission clock (which counts
    /// Unix time: `TokioClock::system`, and a replay's clock from its `start_at`), and
    /// the budget key it goes to.
    pub fn charge_at(&self, now: Timestamp) -> (DatapointCharge, &BudgetKey) {
        let at = WallClock::from_timestamp(now, WallClock::UNIX_EPOCH);
        let charge = DatapointCharge::for_attempt(&self.request, at);
        let key = match charge.budget {
            DatapointBudget::Recent => &self.recent,
            DatapointBudget::Older => &self.older,
        };
        (charge, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::MetricQuery;

    fn at(text: &str) -> Timestamp {
        WallClock::parse_rfc3339(text)
            .unwrap()
            .to_timestamp(WallClock::UNIX_EPOCH)
    }

    fn plan(start_ms: Option<i64>) -> MetricDataPlan {
        let key: QuotaKey = "aws/123456789012/eu-west-1/cloudwatch:GetMetricData"
            .parse()
            .unwrap();
        let request = MetricDataRequest {
            start_time_ms: start_ms,
            end_time_ms: Some(
                WallClock::parse_rfc3339("2026-01-05T12:00:00Z")
                    .unwrap()
                    .unix_millis(),
            ),
            max_datapoints: None,
            queries: vec![MetricQuery::metric_stat(60)],
        };
        MetricDataPlan::new(request, &key, &PolicyTable::defaults()).unwrap()
    }

    fn ms(text: &str) -> Option<i64> {
        Some(WallClock::parse_rfc3339(text).unwrap().unix_millis())
    }

    #[test]
    fn an_attempt_charges_the_budget_its_start_is_old_enough_for_beside_its_request_key() {
        let noon = at("2026-01-05T12:00:00Z");
        // (case, StartTime, budget key)
        let cases = [
            (
                "exactly 3 h old is recent",
                ms("2026-01-05T09:00:00Z"),
                "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:recent-datapoints",
            ),
            (
                "a millisecond older is older",
                ms("2026-01-05T08:59:59.999Z"),
                "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:older-datapoints",
            ),
            (
                "an invalid start uses recent",
                Some(-5),
                "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:recent-datapoints",
            ),
            (
                "a missing start uses recent",
                None,
                "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:recent-datapoints",
            ),
        ];
        for (case, start, key) in cases {
            let plan = plan(start);
            let (charge, budget) = plan.charge_at(noon);
            assert_eq!(budget.key.to_string(), key, "{case}");
            assert_eq!(charge.budget.group(), budget.key.group(), "{case}");
            assert_eq!(
                budget.policy.rate_per_second(),
                match charge.budget {
                    DatapointBudget::Recent => 180_000.0,
                    DatapointBudget::Older => 396_000.0,
                },
                "{case}"
            );
        }
        // Three hours of one-minute buckets; the invalid start reserves the page cap.
        assert_eq!(plan(ms("2026-01-05T09:00:00Z")).charge_at(noon).0.cost, 180);
        assert_eq!(plan(Some(-5)).charge_at(noon).0.cost, 100_800);
    }

    #[test]
    fn a_retry_that_crosses_the_three_hour_mark_moves_to_older() {
        let plan = plan(ms("2026-01-05T09:00:00Z"));
        let first = plan.charge_at(at("2026-01-05T12:00:00Z")).0;
        let retry = plan.charge_at(at("2026-01-05T12:00:00.001Z")).0;
        assert_eq!(first.budget, DatapointBudget::Recent);
        assert_eq!(retry.budget, DatapointBudget::Older);
    }
}
