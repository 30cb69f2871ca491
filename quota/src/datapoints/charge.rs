//! What one GetMetricData attempt charges besides its request token: a budget and a
//! cost, decided together from the request and the attempt instant.
//!
//! The gate calls [`DatapointCharge::for_attempt`] for every page and every retry,
//! immediately before transport, and charges `cost` to `budget` atomically with the
//! request key (that wiring is not in this crate). Telemetry and replay report the
//! result as `datapoints: {budget, cost}`.

use super::bound::{datapoint_bound, Basis, DatapointBound};
use super::budget::DatapointBudget;
use super::query::MetricDataRequest;
use crate::schedule::WallClock;

/// The datapoint charge of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DatapointCharge {
    /// The budget charged.
    pub budget: DatapointBudget,
    /// Datapoints charged to it.
    pub cost: u32,
    /// How `cost` was reached (not serialized: telemetry carries budget and cost only).
    #[serde(skip)]
    pub basis: Basis,
}

impl DatapointCharge {
    /// The charge of an attempt at `at` sending `request`.
    pub fn for_attempt(request: &MetricDataRequest, at: WallClock) -> DatapointCharge {
        let DatapointBound { cost, basis } = datapoint_bound(request, at);
        DatapointCharge {
            budget: DatapointBudget::for_start(request.start_time_ms, at),
            cost,
            basis,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapoints::MetricQuery;

    #[test]
    fn a_charge_serializes_as_telemetrys_budget_and_cost() {
        let start = WallClock::parse_rfc3339("2026-01-05T09:00:00Z").unwrap();
        let at = WallClock::parse_rfc3339("2026-01-05T12:00:00Z").unwrap();
        let request = MetricDataRequest {
            start_time_ms: Some(start.unix_millis()),
            end_time_ms: Some(at.unix_millis()),
            max_datapoints: None,
            queries: vec![MetricQuery::metric_stat(60); 2],
        };
        let charge = DatapointCharge::for_attempt(&request, at);
        assert_eq!(
            serde_json::to_value(charge).unwrap(),
            serde_json::json!({"budget": "recent-datapoints", "cost": 360})
        );
    }
}
