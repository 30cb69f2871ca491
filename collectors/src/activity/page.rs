//! One GetMetricData page through the gate: the SDK request, and beside it the
//! [`MetricDataRequest`] the datapoint budget is charged from.
//!
//! Every page of the activity collector goes through [`send_page`], the one place that
//! calls the gate for CloudWatch: `gate.call_metric_data(ctx, region, &request, send)`
//! charges each attempt's request token and its datapoint budget together. The request
//! carries every query of the page's batch and its window, not `NextToken`: each page reserves the whole request's bound (seed 000: prior responses
//! never reduce a later page's reservation).

use aws_sdk_cloudwatch::operation::get_metric_data::GetMetricDataOutput;
use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, ScanBy};
use aws_smithy_types::DateTime;
use tollgate_quota::datapoints::{MetricDataRequest, MetricQuery};

use super::plan::{Batch, Window, PERIOD_S};
use crate::operation;
use crate::Operation;
use tollgate_engine::aws::{AwsGate, CallContext, CallError};

/// The operation every page is.
pub const GET_METRIC_DATA: Operation = operation!("cloudwatch", "GetMetricData");

/// The query id of a batch's `i`th query (ids must start with a lower-case letter).
pub fn query_id(i: usize) -> String {
    format!("q{i}")
}

/// The index a result's id names, if it is one of ours.
pub fn query_index(id: &str) -> Option<usize> {
    id.strip_prefix('q')?.parse().ok()
}

/// The SDK queries of a batch, in order, ids from [`query_id`].
pub fn sdk_queries(batch: &Batch) -> Vec<MetricDataQuery> {
    batch
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut dimensions = vec![Dimension::builder()
                .name(q.spec.dimension)
                .value(&q.resource)
                .build()];
            if let Some((name, value)) = q.spec.fixed {
                dimensions.push(Dimension::builder().name(name).value(value).build());
            }
            MetricDataQuery::builder()
                .id(query_id(i))
                .metric_stat(
                    MetricStat::builder()
                        .metric(
                            Metric::builder()
                                .namespace(q.spec.namespace)
                                .metric_name(q.spec.metric)
                                .set_dimensions(Some(dimensions))
                                .build(),
                        )
                        .period(PERIOD_S as i32)
                        .stat(q.spec.stat)
                        .build(),
                )
                .return_data(true)
                .build()
        })
        .collect()
}

/// What the datapoint budget sees of a page of `queries` daily MetricStat queries over
/// `window`.
pub fn metric_data_request(queries: usize, window: Window) -> MetricDataRequest {
    MetricDataRequest {
        start_time_ms: Some(window.start_ms),
        end_time_ms: Some(window.end_ms),
        max_datapoints: None,
        queries: vec![MetricQuery::metric_stat(i64::from(PERIOD_S)); queries],
    }
}

/// One page: `token` is the previous page's `NextToken` (`None` for the first).
pub async fn send_page(
    gate: &AwsGate,
    ctx: &CallContext,
    client: &aws_sdk_cloudwatch::Client,
    region: &str,
    queries: &[MetricDataQuery],
    window: Window,
    token: Option<String>,
) -> Result<GetMetricDataOutput, CallError> {
    let request = metric_data_request(queries.len(), window);
    let send = |_| {
        client
            .get_metric_data()
            .set_metric_data_queries(Some(queries.to_vec()))
            .start_time(DateTime::from_millis(window.start_ms))
            .end_time(DateTime::from_millis(window.end_ms))
            .scan_by(ScanBy::TimestampAscending)
            .set_next_token(token.clone())
            .send()
    };
    tracing::trace!(queries = request.queries.len(), "GetMetricData page");
    gate.call_metric_data(ctx, region, &request, send).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::datapoints::datapoint_bound;
    use tollgate_quota::schedule::WallClock;

    #[test]
    fn a_full_page_of_daily_series_over_fourteen_days_reserves_7000() {
        let end = 20_400 * 86_400_000;
        let window = Window {
            start_ms: end - 14 * 86_400_000,
            end_ms: end,
        };
        let request = metric_data_request(500, window);
        let at = WallClock::from_unix_millis(end + 3_600_000).unwrap();
        assert_eq!(datapoint_bound(&request, at).cost, 7_000);
    }

    #[test]
    fn query_ids_round_trip() {
        assert_eq!(query_index(&query_id(499)), Some(499));
        assert_eq!(query_index("x1"), None);
    }
}
