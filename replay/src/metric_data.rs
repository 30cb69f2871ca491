//! A replayed GetMetricData request's `metric_data`: the parts of the request that bound
//! its datapoints (issue 22, item 3), validated into a [`MetricDataRequest`].
//!
//! ```text
//! {"service": "cloudwatch", "operation": "GetMetricData",
//!  "metric_data": {"start_time": "2025-12-22T00:00:00Z", "end_time": "2026-01-05T00:00:00Z",
//!                  "max_datapoints": 100800,
//!                  "queries": [{"period_s": 86400, "return_data": true},
//!                              {"expression": "SUM(m1)"}]}}
//! ```
//!
//! Times are RFC 3339 instants on the script's clock: its `start_at` is simulated time
//! 0, so a start 14 days before `start_at` is 14 days old at a request's `at_ms` 0, and
//! exactly 3 hours old three hours later. Each attempt, retries included, is charged
//! what [`DatapointCharge::for_attempt`](tollgate_quota::DatapointCharge) gives at its
//! admission, and the report's attempts say so as `"datapoints": {"budget", "cost"}`.
//! `max_datapoints` is taken as given (an invalid one caps the page at 100,800, as for
//! AWS); `return_data` defaults to true and does not change the bound. Only
//! `cloudwatch:GetMetricData` requests may carry `metric_data`; one without it is gated
//! on its request key alone, as before.

use serde::Deserialize;
use serde_json::value::RawValue;
use tollgate_quota::{MetricDataRequest, MetricQuery, QuotaKey, WallClock};

use crate::ScriptError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetricData {
    start_time: String,
    end_time: String,
    max_datapoints: Option<i64>,
    queries: Vec<RawQuery>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawQuery {
    MetricStat(RawMetricStat),
    Expression(RawExpression),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetricStat {
    period_s: i64,
    #[serde(default = "yes")]
    return_data: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpression {
    /// Checked only for being there: an expression's bound does not depend on its text.
    expression: String,
}

fn yes() -> bool {
    true
}

fn located(location: String, problem: impl Into<String>) -> ScriptError {
    ScriptError {
        location: Some(location),
        problem: problem.into(),
    }
}

/// The `metric_data` of the request at `here` whose key is `key`.
pub(crate) fn parse(
    here: &str,
    key: &QuotaKey,
    raw: &RawValue,
) -> Result<MetricDataRequest, ScriptError> {
    let at = format!("{here}.metric_data");
    if (key.service(), key.group()) != ("cloudwatch", "GetMetricData") {
        return Err(located(
            at,
            format!(
                "only a cloudwatch GetMetricData request charges datapoints, not {}:{}; remove metric_data",
                key.service(),
                key.group()
            ),
        ));
    }
    let m: RawMetricData = serde_json::from_str(raw.get()).map_err(|e| {
        located(
            at.clone(),
            format!(
                "{}; metric_data has start_time, end_time (RFC 3339), max_datapoints and queries ([{{\"period_s\", \"return_data\"}} or {{\"expression\"}}])",
                crate::serde_message::message(&e)
            ),
        )
    })?;
    let time = |field: &str, text: &str| {
        WallClock::parse_rfc3339(text)
            .map(WallClock::unix_millis)
            .map_err(|_| {
                located(
                    format!("{at}.{field}"),
                    "must be an RFC 3339 instant from 1970 on, such as 2026-01-05T00:00:00Z",
                )
            })
    };
    if m.queries.is_empty() {
        return Err(located(
            format!("{at}.queries"),
            "is empty; GetMetricData needs at least one query",
        ));
    }
    if let Some(i) = m
        .queries
        .iter()
        .position(|q| matches!(q, RawQuery::Expression(e) if e.expression.trim().is_empty()))
    {
        return Err(located(
            format!("{at}.queries[{i}].expression"),
            "is empty; give the expression's text (it reserves the whole page cap whatever it says)",
        ));
    }
    Ok(MetricDataRequest {
        start_time_ms: Some(time("start_time", &m.start_time)?),
        end_time_ms: Some(time("end_time", &m.end_time)?),
        max_datapoints: m.max_datapoints,
        queries: m
            .queries
            .into_iter()
            .map(|q| match q {
                RawQuery::MetricStat(s) => MetricQuery::MetricStat {
                    period_s: Some(s.period_s),
                    return_data: s.return_data,
                },
                RawQuery::Expression(_) => MetricQuery::Expression,
            })
            .collect(),
    })
}
