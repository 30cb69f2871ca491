//! `tollgate-bench fleet-worker` (hidden): one process of `bench fleet` in a plain-SDK
//! mode, i.e. how people run scanners today: the same discovery as tollgate's collectors
//! (same operations, same pagination, same batches of 10 per resource), but straight
//! through the AWS SDK for Rust with its own retry strategy (`standard` or `adaptive`),
//! each process on its own, with no admission gate.
//!
//! Physical attempts are counted by a thin wrapper around the HTTP client (every attempt
//! the SDK sends goes through it); logical calls and calls given up are counted per
//! operation as the SDK returns them. The summary is one JSON line on stdout.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use clap::Args;
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};

/// Resources handled concurrently per batch, as in tollgate's collectors.
const BATCH: usize = 10;

/// The SDK retry strategy of a plain-SDK process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SdkMode {
    /// `RetryConfig::standard()`: 3 attempts, exponential backoff with jitter, a
    /// per-client retry quota.
    SdkStandard,
    /// `RetryConfig::adaptive()`: standard plus a per-client rate limiter that slows the
    /// first attempts after throttling.
    SdkAdaptive,
}

/// Arguments of `tollgate-bench fleet-worker`.
#[derive(Debug, Args)]
pub struct FleetWorkerArgs {
    /// The SDK retry strategy.
    #[arg(long, value_enum)]
    pub mode: SdkMode,
    /// The simulator's endpoint.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: String,
    /// Regions to discover (the first is the home region for S3's listing).
    #[arg(long, value_delimiter = ',', required = true)]
    pub regions: Vec<String>,
    /// Attempts per call, first included (default: the SDK's, 3).
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Run the whole discovery this many times, one after another (`bench org`'s floor
    /// uses it to make enough calls for a CPU figure).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// A current-thread runtime instead of two workers (`bench org`'s floor: as
    /// tollgate's discovery thread runs, and without cross-thread wake-ups).
    #[arg(long)]
    pub current_thread: bool,
}

/// Per-operation tallies of one process.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct OpTally {
    /// Logical calls (one per SDK `send`).
    pub calls: u64,
    /// Calls that ended in an error after the SDK's retries (not counting answers that
    /// are part of the data, such as S3's NoSuchLifecycleConfiguration).
    pub gave_up: u64,
}

/// What a plain-SDK worker reports.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FleetWorkerReport {
    /// Physical HTTP attempts sent.
    pub attempts: u64,
    /// Per operation (`service:Operation`).
    pub operations: BTreeMap<String, OpTally>,
    /// Buckets with region, lifecycle and tiering all read.
    pub buckets_complete: u64,
    /// Functions with their versions read.
    pub functions_complete: u64,
    /// Tables described.
    pub tables_complete: u64,
    /// Keys with metadata and last usage read.
    pub keys_complete: u64,
    /// Listings that failed (the dataset is then short by an unknown amount).
    pub listings_failed: u64,
    /// Seconds from start to the end of the discovery.
    pub elapsed_s: f64,
    /// CPU time of the process (user + system, `/proc/self/stat`) over the discovery, its
    /// set-up (configuration, runtime) excluded, in seconds.
    #[serde(default)]
    pub cpu_s: f64,
}

/// Run one plain-SDK discovery and print its report.
pub fn run(args: FleetWorkerArgs) -> anyhow::Result<ExitCode> {
    let rt = if args.current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    }
    .context("starting the tokio runtime")?;
    let report = rt.block_on(discover(&args))?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// An HTTP client that counts the attempts passing through it.
#[derive(Debug, Clone)]
struct CountingClient {
    inner: SharedHttpClient,
    attempts: Arc<AtomicU64>,
}

#[derive(Debug)]
struct CountingConnector {
    inner: SharedHttpConnector,
    attempts: Arc<AtomicU64>,
}

impl HttpConnector for CountingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        self.inner.call(request)
    }
}

impl HttpClient for CountingClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(CountingConnector {
            inner: self.inner.http_connector(settings, components),
            attempts: self.attempts.clone(),
        })
    }
}

/// Shared tallies of one run.
#[derive(Default)]
struct Tally {
    ops: Mutex<BTreeMap<String, OpTally>>,
}

impl Tally {
    /// Count one logical call of `op` and whether it was given up.
    fn record<T, E: ProvideErrorMetadata>(
        &self,
        op: &str,
        result: &Result<T, SdkError<E, aws_smithy_runtime_api::http::Response>>,
        expected_codes: &[&str],
    ) {
        let gave_up = match result {
            Ok(_) => false,
            Err(SdkError::ServiceError(e)) => {
                !expected_codes.contains(&e.err().code().unwrap_or_default())
            }
            Err(_) => true,
        };
        let mut ops = self.ops.lock().expect("tally lock");
        let entry = ops.entry(op.to_string()).or_default();
        entry.calls += 1;
        entry.gave_up += u64::from(gave_up);
    }
}

async fn discover(args: &FleetWorkerArgs) -> anyhow::Result<FleetWorkerReport> {
    let attempts = Arc::new(AtomicU64::new(0));
    let http = SharedHttpClient::new(CountingClient {
        inner: tollgate_engine::aws::default_http_client(),
        attempts: attempts.clone(),
    });
    let mut retry = match args.mode {
        SdkMode::SdkStandard => RetryConfig::standard(),
        SdkMode::SdkAdaptive => RetryConfig::adaptive(),
    };
    if let Some(n) = args.max_attempts {
        retry = retry.with_max_attempts(n);
    }
    let home = args.regions[0].clone();
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .retry_config(retry)
        .endpoint_url(&args.endpoint_url)
        .region(Region::new(home.clone()))
        .load()
        .await;
    let tally = Tally::default();
    let mut report = FleetWorkerReport::default();
    let cpu = || crate::org::proc_sample::read(std::process::id()).map(|r| r.cpu);
    let cpu_before = cpu();
    let started = Instant::now();

    for _ in 0..args.repeat.max(1) {
        let (s3, per_region) = futures_util::future::join(
            s3_buckets(&sdk, &home, &args.regions, &tally),
            join_all(
                args.regions
                    .iter()
                    .map(|region| regional(&sdk, region, &tally)),
            ),
        )
        .await;
        let mut parts = vec![s3];
        parts.extend(per_region);
        for part in parts {
            report.buckets_complete += part.buckets_complete;
            report.functions_complete += part.functions_complete;
            report.tables_complete += part.tables_complete;
            report.keys_complete += part.keys_complete;
            report.listings_failed += part.listings_failed;
        }
    }
    report.elapsed_s = started.elapsed().as_secs_f64();
    if let (Some(before), Some(after)) = (cpu_before, cpu()) {
        report.cpu_s = after.saturating_sub(before).as_secs_f64();
    }
    report.attempts = attempts.load(Ordering::Relaxed);
    report.operations = tally.ops.into_inner().expect("tally lock");
    Ok(report)
}

/// Lambda, DynamoDB and KMS of one region, concurrently (as tollgate's collectors run).
async fn regional(sdk: &aws_config::SdkConfig, region: &str, tally: &Tally) -> FleetWorkerReport {
    let (lambda, dynamodb, kms) = futures_util::future::join3(
        lambda_functions(sdk, region, tally),
        dynamodb_tables(sdk, region, tally),
        kms_keys(sdk, region, tally),
    )
    .await;
    FleetWorkerReport {
        functions_complete: lambda.functions_complete,
        tables_complete: dynamodb.tables_complete,
        keys_complete: kms.keys_complete,
        listings_failed: lambda.listings_failed + dynamodb.listings_failed + kms.listings_failed,
        ..Default::default()
    }
}

/// S3: every bucket listed from the home region, then each bucket's lifecycle and
/// intelligent-tiering configurations read in its own region, `BATCH` buckets at a time.
async fn s3_buckets(
    sdk: &aws_config::SdkConfig,
    home: &str,
    regions: &[String],
    tally: &Tally,
) -> FleetWorkerReport {
    let mut out = FleetWorkerReport::default();
    let client = |region: &str| {
        aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(sdk)
                .region(Region::new(region.to_string()))
                .force_path_style(true)
                .build(),
        )
    };
    let home_client = client(home);
    let Some(listed) = list_buckets(&home_client, tally).await else {
        out.listings_failed += 1;
        return out;
    };
    let clients: BTreeMap<&str, aws_sdk_s3::Client> =
        regions.iter().map(|r| (r.as_str(), client(r))).collect();
    let (home_client, clients) = (&home_client, &clients);
    for batch in listed.chunks(BATCH) {
        let done = join_all(batch.iter().map(|(name, region)| async move {
            let region = match region {
                Some(r) => Some(r.clone()),
                None => bucket_location(home_client, name, tally).await,
            };
            let Some(client) = region.as_deref().and_then(|r| clients.get(r)) else {
                return false;
            };
            let (lifecycle, tiering) = futures_util::future::join(
                bucket_lifecycle(client, name, tally),
                bucket_tiering(client, name, tally),
            )
            .await;
            lifecycle && tiering
        }))
        .await;
        out.buckets_complete += done.into_iter().filter(|ok| *ok).count() as u64;
    }
    out
}

/// Every bucket's name and region (when ListBuckets gives it), or `None` if a page failed.
async fn list_buckets(
    client: &aws_sdk_s3::Client,
    tally: &Tally,
) -> Option<Vec<(String, Option<String>)>> {
    let mut listed: Vec<(String, Option<String>)> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_buckets()
            .set_continuation_token(token.clone())
            .send()
            .await;
        tally.record("s3:ListBuckets", &page, &[]);
        let page = page.ok()?;
        for b in page.buckets() {
            if let Some(name) = b.name() {
                listed.push((name.to_string(), b.bucket_region().map(str::to_string)));
            }
        }
        token = page.continuation_token().map(str::to_string);
        if token.is_none() {
            return Some(listed);
        }
    }
}

/// A bucket's region from GetBucketLocation (an empty constraint is us-east-1).
async fn bucket_location(client: &aws_sdk_s3::Client, name: &str, tally: &Tally) -> Option<String> {
    let answer = client.get_bucket_location().bucket(name).send().await;
    tally.record("s3:GetBucketLocation", &answer, &[]);
    answer.ok().map(|a| {
        a.location_constraint()
            .map(|c| c.as_str().to_string())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "us-east-1".to_string())
    })
}

/// Whether the bucket's lifecycle configuration was read (none configured counts).
async fn bucket_lifecycle(client: &aws_sdk_s3::Client, name: &str, tally: &Tally) -> bool {
    let answer = client
        .get_bucket_lifecycle_configuration()
        .bucket(name)
        .send()
        .await;
    tally.record(
        "s3:GetBucketLifecycleConfiguration",
        &answer,
        &["NoSuchLifecycleConfiguration"],
    );
    match answer {
        Ok(_) => true,
        Err(SdkError::ServiceError(e)) => e.err().code() == Some("NoSuchLifecycleConfiguration"),
        Err(_) => false,
    }
}

/// Whether every page of the bucket's intelligent-tiering configurations was read.
async fn bucket_tiering(client: &aws_sdk_s3::Client, name: &str, tally: &Tally) -> bool {
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_bucket_intelligent_tiering_configurations()
            .bucket(name)
            .set_continuation_token(token.clone())
            .send()
            .await;
        tally.record("s3:ListBucketIntelligentTieringConfigurations", &page, &[]);
        let Ok(page) = page else { return false };
        token = page
            .next_continuation_token()
            .filter(|_| page.is_truncated() == Some(true))
            .map(str::to_string);
        if token.is_none() {
            return true;
        }
    }
}

async fn lambda_functions(
    sdk: &aws_config::SdkConfig,
    region: &str,
    tally: &Tally,
) -> FleetWorkerReport {
    let mut out = FleetWorkerReport::default();
    let client = aws_sdk_lambda::Client::from_conf(
        aws_sdk_lambda::config::Builder::from(sdk)
            .region(Region::new(region.to_string()))
            .build(),
    );
    let mut names = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = client
            .list_functions()
            .set_marker(marker.clone())
            .send()
            .await;
        tally.record("lambda:ListFunctions", &page, &[]);
        let Ok(page) = page else {
            out.listings_failed += 1;
            break;
        };
        names.extend(
            page.functions()
                .iter()
                .filter_map(|f| f.function_name().map(str::to_string)),
        );
        marker = page.next_marker().map(str::to_string);
        if marker.is_none() {
            break;
        }
    }
    let client = &client;
    for batch in names.chunks(BATCH) {
        let done = join_all(batch.iter().map(|name| async move {
            let mut marker: Option<String> = None;
            loop {
                let page = client
                    .list_versions_by_function()
                    .function_name(name)
                    .set_marker(marker.clone())
                    .send()
                    .await;
                tally.record("lambda:ListVersionsByFunction", &page, &[]);
                let Ok(page) = page else { return false };
                marker = page.next_marker().map(str::to_string);
                if marker.is_none() {
                    return true;
                }
            }
        }))
        .await;
        out.functions_complete += done.into_iter().filter(|ok| *ok).count() as u64;
    }
    out
}

async fn dynamodb_tables(
    sdk: &aws_config::SdkConfig,
    region: &str,
    tally: &Tally,
) -> FleetWorkerReport {
    let mut out = FleetWorkerReport::default();
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(sdk)
            .region(Region::new(region.to_string()))
            .build(),
    );
    let mut names = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let page = client
            .list_tables()
            .set_exclusive_start_table_name(start.clone())
            .send()
            .await;
        tally.record("dynamodb:ListTables", &page, &[]);
        let Ok(page) = page else {
            out.listings_failed += 1;
            break;
        };
        names.extend(page.table_names().iter().cloned());
        start = page.last_evaluated_table_name().map(str::to_string);
        if start.is_none() {
            break;
        }
    }
    let client = &client;
    for batch in names.chunks(BATCH) {
        let done = join_all(batch.iter().map(|name| async move {
            let answer = client.describe_table().table_name(name).send().await;
            tally.record("dynamodb:DescribeTable", &answer, &[]);
            answer.is_ok()
        }))
        .await;
        out.tables_complete += done.into_iter().filter(|ok| *ok).count() as u64;
    }
    out
}

async fn kms_keys(sdk: &aws_config::SdkConfig, region: &str, tally: &Tally) -> FleetWorkerReport {
    let mut out = FleetWorkerReport::default();
    let client = aws_sdk_kms::Client::from_conf(
        aws_sdk_kms::config::Builder::from(sdk)
            .region(Region::new(region.to_string()))
            .build(),
    );
    let mut ids = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = client.list_keys().set_marker(marker.clone()).send().await;
        tally.record("kms:ListKeys", &page, &[]);
        let Ok(page) = page else {
            out.listings_failed += 1;
            break;
        };
        ids.extend(
            page.keys()
                .iter()
                .filter_map(|k| k.key_id().map(str::to_string)),
        );
        marker = page
            .next_marker()
            .filter(|_| page.truncated())
            .map(str::to_string);
        if marker.is_none() {
            break;
        }
    }
    let client = &client;
    for batch in ids.chunks(BATCH) {
        let done = join_all(batch.iter().map(|id| async move {
            let (metadata, usage) = futures_util::future::join(
                async {
                    let answer = client.describe_key().key_id(id).send().await;
                    tally.record("kms:DescribeKey", &answer, &[]);
                    answer.is_ok()
                },
                async {
                    let answer = client.get_key_last_usage().key_id(id).send().await;
                    tally.record("kms:GetKeyLastUsage", &answer, &[]);
                    answer.is_ok()
                },
            )
            .await;
            metadata && usage
        }))
        .await;
        out.keys_complete += done.into_iter().filter(|ok| *ok).count() as u64;
    }
    out
}
