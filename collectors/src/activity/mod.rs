//! CloudWatch activity (`--metrics`): after the datasets are collected, every Lambda
//! function, DynamoDB table and S3 bucket gains an `activity` object with its daily
//! series over the last 14 complete UTC days (Lambda `Invocations` and `Errors`,
//! DynamoDB consumed read and write capacity: daily `Sum`; S3 `BucketSizeBytes` of
//! `StandardStorage` and `NumberOfObjects` of `AllStorageTypes`: daily `Average`).
//!
//! Why a phase after the collectors rather than a dataset of its own? The series belong
//! to items of three datasets, and CloudWatch's quotas are per account and region: one
//! planner per region ([`plan`]) packs every dataset's queries into requests of at most
//! 500 (a request may serve two datasets; its single attempt event lists both), and
//! each request is read page by page with `NextToken` ([`page::send_page`], the one call
//! into the gate). A scan has one account (the caller's, or the role's), so a region is
//! an account and region.
//!
//! A request that fails leaves its series `null` and makes every dataset it served
//! `partial` with the reason (`cloudwatch:GetMetricData`, field `activity`); its items
//! are kept. Opt-in because GetMetricData is billed per metric requested; without
//! `--metrics` this module makes no call at all.

pub mod page;
pub mod plan;

use std::collections::BTreeMap;

use futures_util::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_quota::Timestamp;

use crate::clients::{ClientSettings, Clients};
use crate::dataset::Dataset;
use crate::output::{
    format_date_time, Activity, ActivityDatapoint, ActivitySeries, DatasetReport, Item,
};
use crate::{ReportBuilder, ServiceClient};
use page::{query_index, sdk_queries, send_page, GET_METRIC_DATA};
use plan::{specs_of, Batch, Window, PERIOD_S};
use tollgate_engine::aws::{AwsGate, CallContext, CallError, CallErrorKind, ScanId};

/// Requests of one scan read at once (each is paced by the gate anyway; this bounds the
/// answers held in memory).
pub const CONCURRENT_REQUESTS: usize = 4;

/// The telemetry collector of every activity request.
pub const COLLECTOR: &str = "cloudwatch";

/// The item field a failed read leaves `null`.
const FIELD: &str = "activity";

/// What the activity phase of one scan runs with.
pub struct ActivityRun {
    pub gate: AwsGate,
    pub sdk: aws_config::SdkConfig,
    pub scan_id: ScanId,
    pub deadline: Instant,
    pub cancel: CancellationToken,
    /// The scan's start (Unix-epoch timestamp): the window ends at its UTC midnight.
    pub now: Timestamp,
}

/// One request's series (by query index) or why it could not be read.
struct BatchOutcome {
    batch: Batch,
    series: Vec<Option<Vec<(i64, f64)>>>,
    failures: Vec<CallError>,
}

/// Read every item's activity and add it to the reports.
pub async fn annotate(
    run: &ActivityRun,
    mut reports: BTreeMap<Dataset, DatasetReport>,
) -> BTreeMap<Dataset, DatasetReport> {
    if run.cancel.is_cancelled() {
        return reports;
    }
    let window = Window::last_complete_days(run.now);
    let batches = plan::plan(&reports);
    let clients = Clients::default();
    let outcomes: Vec<BatchOutcome> = futures_util::stream::iter(batches)
        .map(|batch| read_batch(run, &clients, window, batch))
        .buffer_unordered(CONCURRENT_REQUESTS)
        .collect()
        .await;

    // Every item with activity gets the object; series stay null unless read.
    let (start, end) = (
        format_date_time(&aws_smithy_types::DateTime::from_millis(window.start_ms)),
        format_date_time(&aws_smithy_types::DateTime::from_millis(window.end_ms)),
    );
    for report in reports.values_mut() {
        for item in &mut report.items {
            let Some((specs, _, _)) = specs_of(item) else {
                continue;
            };
            let activity = Activity {
                start: start.clone(),
                end: end.clone(),
                period_s: PERIOD_S,
                series: specs.iter().map(|s| (s.metric.to_string(), None)).collect(),
            };
            set_activity(item, activity);
        }
    }
    let mut failures: BTreeMap<Dataset, Vec<CallError>> = BTreeMap::new();
    for outcome in outcomes {
        for q in outcome.batch.queries.iter().zip(outcome.series) {
            let (planned, series) = q;
            let Some(points) = series else { continue };
            let Some(report) = reports.get_mut(&planned.dataset) else {
                continue;
            };
            let Some(activity) = report.items.get_mut(planned.item).and_then(activity_of) else {
                continue;
            };
            let datapoints = points
                .into_iter()
                .filter_map(|(t, v)| {
                    Some(ActivityDatapoint {
                        timestamp: format_date_time(&aws_smithy_types::DateTime::from_secs(t)),
                        value: serde_json::Number::from_f64(v)?,
                    })
                })
                .collect();
            activity.series.insert(
                planned.spec.metric.to_string(),
                Some(ActivitySeries {
                    namespace: planned.spec.namespace.to_string(),
                    stat: planned.spec.stat.to_string(),
                    datapoints,
                }),
            );
        }
        let served: Vec<Dataset> = {
            let mut d: Vec<Dataset> = outcome.batch.queries.iter().map(|q| q.dataset).collect();
            d.dedup();
            d
        };
        for error in outcome.failures {
            for dataset in &served {
                failures.entry(*dataset).or_default().push(error.clone());
            }
        }
    }
    for (dataset, errors) in failures {
        let Some(report) = reports.remove(&dataset) else {
            continue;
        };
        let mut builder = ReportBuilder::from_report(report);
        for error in &errors {
            builder.enrichment_missing(GET_METRIC_DATA, FIELD, error);
        }
        reports.insert(dataset, builder.finish());
    }
    reports
}

fn set_activity(item: &mut Item, activity: Activity) {
    match item {
        Item::LambdaFunction(f) => f.activity = Some(activity),
        Item::DynamoDbTable(t) => t.activity = Some(activity),
        Item::S3Bucket(b) => b.activity = Some(activity),
        Item::KmsKey(_) | Item::Resource(_) => {}
    }
}

fn activity_of(item: &mut Item) -> Option<&mut Activity> {
    match item {
        Item::LambdaFunction(f) => f.activity.as_mut(),
        Item::DynamoDbTable(t) => t.activity.as_mut(),
        Item::S3Bucket(b) => b.activity.as_mut(),
        Item::KmsKey(_) | Item::Resource(_) => None,
    }
}

/// Read one request, every page, merging each query's datapoints across pages. A page
/// that fails fails the whole request's series; a query CloudWatch did not answer
/// `Complete` on its last page is a failure of its own.
async fn read_batch(
    run: &ActivityRun,
    clients: &Clients,
    window: Window,
    batch: Batch,
) -> BatchOutcome {
    let ctx = CallContext {
        scan_id: run.scan_id,
        collector: COLLECTOR,
        datasets: batch.datasets(),
        deadline: run.deadline,
        cancel: run.cancel.clone(),
    };
    let client = aws_sdk_cloudwatch::Client::cached(
        clients,
        ClientSettings {
            sdk: &run.sdk,
            region: &batch.region,
            force_path_style: false,
        },
    );
    let queries = sdk_queries(&batch);
    let mut points: Vec<Vec<(i64, f64)>> = vec![Vec::new(); queries.len()];
    let mut status: Vec<Option<String>> = vec![None; queries.len()];
    let mut token: Option<String> = None;
    loop {
        let page = send_page(
            &run.gate,
            &ctx,
            &client,
            &batch.region,
            &queries,
            window,
            token.take(),
        )
        .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                let n = queries.len();
                return BatchOutcome {
                    batch,
                    series: vec![None; n],
                    failures: vec![e],
                };
            }
        };
        for result in page.metric_data_results() {
            let Some(i) = result
                .id()
                .and_then(query_index)
                .filter(|i| *i < queries.len())
            else {
                continue;
            };
            points[i].extend(
                result
                    .timestamps()
                    .iter()
                    .map(|t| t.secs())
                    .zip(result.values().iter().copied()),
            );
            status[i] = result.status_code().map(|s| s.as_str().to_string());
        }
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    let mut failures = Vec::new();
    let series = points
        .into_iter()
        .zip(status)
        .map(|(mut p, status)| match status.as_deref() {
            Some("Complete") => {
                p.sort_by_key(|(t, _)| *t);
                Some(p)
            }
            other => {
                failures.push(CallError::in_answer(
                    CallErrorKind::Fatal,
                    GET_METRIC_DATA.name(),
                    other.map(str::to_string),
                    format!(
                        "CloudWatch answered a query with status {} after its last page",
                        other.unwrap_or("(none)")
                    ),
                ));
                None
            }
        })
        .collect();
    BatchOutcome {
        batch,
        series,
        failures,
    }
}
