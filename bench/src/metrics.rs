//! `tollgate bench metrics`: K readers of the same account's CloudWatch activity through
//! one fixture simulator whose datapoint quota, not its request rate, is what binds
//! (`fixtures/scenarios/metrics.toml`), in two worker kinds:
//! - `tollgate`: K `tollgate discover --metrics` processes sharing one admission
//!   directory, their datapoint budgets set to the scenario's server quotas
//!   (TOLLGATE_QUOTA_OVERRIDES, as a user matches a lowered account quota), with the
//!   default arrival-jitter allowance (100 ms: the gate's bucket holds the burst less
//!   100 ms of refill, so pages arriving a little closer than admitted are not throttled);
//! - `sdk-standard`: K plain aws-sdk-cloudwatch clients (standard retry: 3 attempts,
//!   nothing shared) in this process, each reading every item's series with the same
//!   requests as tollgate's planner (500 queries, 14 daily datapoints each), all at once.
//!   They skip the discovery calls (the bench hands them the inventory), which only
//!   brings their CloudWatch burst earlier.
//!
//! Each kind gets a fresh simulator. Its counters are the ground truth: GetMetricData
//! pages served, pages refused by a datapoint quota (`datapoint throttles`), by the
//! request quota, and datapoints charged. Series read counts the series that came back
//! against the series asked for. The table prints one row per worker kind.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, ScanBy};
use clap::Args;
use tollgate_sim::scenario::Quota;
use tollgate_sim::{Scenario, Simulator, Stats};

/// Queries per request (AWS's most, and tollgate's planner's).
const MAX_QUERIES: usize = 500;
const DAY_MS: i64 = 86_400_000;

/// Which worker kinds run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsMode {
    /// K `tollgate discover --metrics` processes, shared admission.
    Tollgate,
    /// K plain SDK clients, standard retry.
    SdkStandard,
    /// Both, tollgate first.
    All,
}

/// `bench metrics` flags.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Readers per worker kind.
    #[arg(long, default_value_t = 3)]
    pub processes: usize,
    /// Scenario file (default: the bundled fixtures/scenarios/metrics.toml).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = MetricsMode::All)]
    pub mode: MetricsMode,
}

/// One worker kind's row.
#[derive(Debug)]
struct Row {
    kind: &'static str,
    pages: u64,
    datapoint_throttles: u64,
    request_throttles: u64,
    charged: u64,
    series_read: u64,
    series_asked: u64,
    elapsed_s: f64,
    failed: usize,
}

pub fn run(args: &MetricsArgs) -> anyhow::Result<ExitCode> {
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::parse(tollgate_sim::bundled::METRICS, "<metrics.toml>")?,
    };
    anyhow::ensure!(args.processes >= 1, "--processes must be at least 1");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let scratch = tempfile::tempdir()?;
    let mut rows = Vec::new();
    if matches!(args.mode, MetricsMode::Tollgate | MetricsMode::All) {
        rows.push(tollgate(&rt, &scenario, args.processes, scratch.path())?);
    }
    if matches!(args.mode, MetricsMode::SdkStandard | MetricsMode::All) {
        rows.push(rt.block_on(sdk(&scenario, args.processes))?);
    }
    let c = scenario.inventory_counts();
    let older = scenario.cloudwatch.older_datapoints;
    let jitter = tollgate_quota::defaults::DATAPOINT_ARRIVAL_JITTER_MS;
    println!(
        "bench metrics: {} functions, {} tables, {} buckets; older-datapoints quota {}/s (burst {}), tollgate's bucket {} ({} ms arrival jitter); {} readers per kind",
        c.functions,
        c.tables,
        c.buckets,
        older.rate_per_second,
        older.burst,
        tollgate_quota::arrival_jitter::admission_burst(
            f64::from(older.burst),
            older.rate_per_second,
            jitter
        ),
        jitter,
        args.processes
    );
    println!(
        "{:<14} {:>7} {:>11} {:>10} {:>12} {:>15} {:>9} {:>7}",
        "worker kind",
        "pages",
        "dp throttles",
        "req thr.",
        "datapoints",
        "series read",
        "elapsed_s",
        "failed"
    );
    for r in &rows {
        println!(
            "{:<14} {:>7} {:>11} {:>10} {:>12} {:>15} {:>9.1} {:>7}",
            r.kind,
            r.pages,
            r.datapoint_throttles,
            r.request_throttles,
            r.charged,
            format!("{}/{}", r.series_read, r.series_asked),
            r.elapsed_s,
            r.failed
        );
    }
    let failed = rows.iter().any(|r| r.failed > 0);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The simulator's GetMetricData counters.
fn counters(stats: &Stats) -> (u64, u64, u64, u64) {
    let op = stats
        .per_operation
        .get("cloudwatch:GetMetricData")
        .copied()
        .unwrap_or_default();
    let datapoint_throttles: u64 = stats.datapoints.values().map(|d| d.throttled).sum();
    let charged: u64 = stats.datapoints.values().map(|d| d.charged).sum();
    (
        op.served,
        datapoint_throttles,
        op.throttled - datapoint_throttles.min(op.throttled),
        charged,
    )
}

/// Series one reader asks for: 2 per function, table and bucket.
fn series_per_reader(scenario: &Scenario) -> u64 {
    let c = scenario.inventory_counts();
    2 * (c.functions + c.tables + c.buckets)
}

/// The datapoint budgets as tollgate overrides equal to the scenario's server quotas.
fn overrides(scenario: &Scenario) -> String {
    let policy =
        |q: Quota| serde_json::json!({"ratePerSecond": q.rate_per_second, "burst": q.burst});
    serde_json::json!({
        "cloudwatch:GetMetricData:older-datapoints": policy(scenario.cloudwatch.older_datapoints),
        "cloudwatch:GetMetricData:recent-datapoints": policy(scenario.cloudwatch.recent_datapoints),
    })
    .to_string()
}

fn tollgate(
    rt: &tokio::runtime::Runtime,
    scenario: &Scenario,
    k: usize,
    scratch: &Path,
) -> anyhow::Result<Row> {
    let exe = crate::harness::exe::tollgate()?;
    let sim = Simulator::new(scenario.clone());
    let server = rt
        .block_on(sim.serve(([127, 0, 0, 1], 0).into()))
        .context("starting the simulator on loopback")?;
    let url = format!("http://{}", server.local_addr());
    let dir = scratch.join("tollgate");
    std::fs::create_dir_all(&dir)?;
    sim.reset();
    let started = Instant::now();
    let mut children = Vec::new();
    for i in 0..k {
        let mut cmd = Command::new(&exe);
        // `--no-tags`: the peer makes no tagging call; both sides make the same calls.
        cmd.args(["discover", "--metrics", "--no-tags", "--endpoint-url", &url])
            .args(["--regions", &scenario.regions.join(",")])
            .args(["--datasets", "s3-buckets,lambda-functions,dynamodb-tables"])
            .args(["--timeout", "30m", "--output"])
            .arg(dir.join(format!("report-{i}.json")))
            .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"))
            .env("TOLLGATE_QUOTA_OVERRIDES", overrides(scenario))
            .env("AWS_ACCESS_KEY_ID", "AKIDSIMULATOR")
            .env("AWS_SECRET_ACCESS_KEY", "simulator-secret")
            .env("AWS_REGION", scenario.regions[0].as_str())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("process-{i}.log")))?);
        children.push(cmd.spawn().context("spawning tollgate discover")?);
    }
    let mut failed = 0;
    for mut child in children {
        if !child.wait().map(|s| s.success()).unwrap_or(false) {
            failed += 1;
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let stats = sim.stats();
    rt.block_on(server.shutdown());
    let mut series_read = 0;
    for i in 0..k {
        let path = dir.join(format!("report-{i}.json"));
        match std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            Some(report) => series_read += read_series(&report),
            None => failed += 1,
        }
    }
    let (pages, datapoint_throttles, request_throttles, charged) = counters(&stats);
    Ok(Row {
        kind: "tollgate",
        pages,
        datapoint_throttles,
        request_throttles,
        charged,
        series_read,
        series_asked: series_per_reader(scenario) * k as u64,
        elapsed_s,
        failed,
    })
}

/// Non-null series in a report's items' `activity`.
fn read_series(report: &serde_json::Value) -> u64 {
    let Some(datasets) = report.get("datasets").and_then(|d| d.as_object()) else {
        return 0;
    };
    datasets
        .values()
        .filter_map(|d| d.get("items")?.as_array())
        .flatten()
        .filter_map(|item| item.get("activity")?.get("series")?.as_object())
        .map(|series| series.values().filter(|s| !s.is_null()).count() as u64)
        .sum()
}

/// Every series of the scenario's inventory as tollgate's planner asks for it, per
/// region, in requests of [`MAX_QUERIES`].
fn requests(scenario: &Scenario) -> Vec<(String, Vec<MetricDataQuery>)> {
    let inv = &scenario.inventory;
    let mut per_region: std::collections::BTreeMap<String, Vec<MetricDataQuery>> =
        Default::default();
    let mut add = |region: &str, ns: &str, metric: &str, stat: &str, dims: Vec<(&str, &str)>| {
        let queries = per_region.entry(region.to_string()).or_default();
        let dimensions = dims
            .into_iter()
            .map(|(n, v)| Dimension::builder().name(n).value(v).build())
            .collect();
        queries.push(
            MetricDataQuery::builder()
                .id(format!("q{}", queries.len() % MAX_QUERIES))
                .metric_stat(
                    MetricStat::builder()
                        .metric(
                            Metric::builder()
                                .namespace(ns)
                                .metric_name(metric)
                                .set_dimensions(Some(dimensions))
                                .build(),
                        )
                        .period(86_400)
                        .stat(stat)
                        .build(),
                )
                .build(),
        );
    };
    for b in &inv.buckets {
        add(
            &b.region,
            "AWS/S3",
            "BucketSizeBytes",
            "Average",
            vec![("BucketName", &b.name), ("StorageType", "StandardStorage")],
        );
        add(
            &b.region,
            "AWS/S3",
            "NumberOfObjects",
            "Average",
            vec![("BucketName", &b.name), ("StorageType", "AllStorageTypes")],
        );
    }
    for f in &inv.functions {
        for metric in ["Invocations", "Errors"] {
            add(
                &f.region,
                "AWS/Lambda",
                metric,
                "Sum",
                vec![("FunctionName", &f.name)],
            );
        }
    }
    for t in &inv.tables {
        for metric in ["ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits"] {
            add(
                &t.region,
                "AWS/DynamoDB",
                metric,
                "Sum",
                vec![("TableName", &t.name)],
            );
        }
    }
    per_region
        .into_iter()
        .flat_map(|(region, queries)| {
            queries
                .chunks(MAX_QUERIES)
                .map(|c| (region.clone(), c.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn sdk(scenario: &Scenario, k: usize) -> anyhow::Result<Row> {
    let sim = Simulator::new(scenario.clone());
    let server = sim
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .context("starting the simulator on loopback")?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let end_ms = now_ms - now_ms.rem_euclid(DAY_MS);
    let start_ms = end_ms - 14 * DAY_MS;
    let requests = requests(scenario);
    sim.reset();
    let started = Instant::now();
    let readers = (0..k).map(|_| {
        let requests = requests.clone();
        let url = server.endpoint_url();
        async move {
            let mut read = 0u64;
            let mut clients = std::collections::BTreeMap::new();
            let mut calls = Vec::new();
            for (region, queries) in &requests {
                let client = clients
                    .entry(region.clone())
                    .or_insert_with(|| {
                        let config =
                            aws_sdk_cloudwatch::Config::builder()
                                .behavior_version(
                                    aws_sdk_cloudwatch::config::BehaviorVersion::latest(),
                                )
                                .region(aws_sdk_cloudwatch::config::Region::new(region.clone()))
                                .endpoint_url(&url)
                                .credentials_provider(aws_sdk_cloudwatch::config::Credentials::new(
                                    "AKIDSIMULATOR",
                                    "simulator-secret",
                                    None,
                                    None,
                                    "bench",
                                ))
                                .retry_config(
                                    aws_sdk_cloudwatch::config::retry::RetryConfig::standard(),
                                )
                                .http_client(tollgate_engine::aws::default_http_client())
                                .build();
                        aws_sdk_cloudwatch::Client::from_conf(config)
                    })
                    .clone();
                calls.push(async move { read_request(&client, queries, start_ms, end_ms).await });
            }
            for n in futures_util::future::join_all(calls).await {
                read += n;
            }
            read
        }
    });
    let series_read: u64 = futures_util::future::join_all(readers)
        .await
        .into_iter()
        .sum();
    let elapsed_s = started.elapsed().as_secs_f64();
    let stats = sim.stats();
    server.shutdown().await;
    let (pages, datapoint_throttles, request_throttles, charged) = counters(&stats);
    Ok(Row {
        kind: "sdk-standard",
        pages,
        datapoint_throttles,
        request_throttles,
        charged,
        series_read,
        series_asked: series_per_reader(scenario) * k as u64,
        elapsed_s,
        failed: 0,
    })
}

/// Every page of one request; the series read (0 when a page gave up).
async fn read_request(
    client: &aws_sdk_cloudwatch::Client,
    queries: &[MetricDataQuery],
    start_ms: i64,
    end_ms: i64,
) -> u64 {
    let mut token = None;
    loop {
        let page = client
            .get_metric_data()
            .set_metric_data_queries(Some(queries.to_vec()))
            .start_time(aws_smithy_types_date(start_ms))
            .end_time(aws_smithy_types_date(end_ms))
            .scan_by(ScanBy::TimestampAscending)
            .set_next_token(token)
            .send()
            .await;
        let Ok(page) = page else { return 0 };
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            return queries.len() as u64;
        }
    }
}

fn aws_smithy_types_date(ms: i64) -> aws_sdk_cloudwatch::primitives::DateTime {
    aws_sdk_cloudwatch::primitives::DateTime::from_millis(ms)
}
