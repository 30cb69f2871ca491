//! `--metrics` end to end through the real SDK over a real socket: a discovery of the
//! simulator (its CloudWatch speaks smithy RPC v2 CBOR; moto 5.2.5 speaks no CBOR, so
//! there is no moto test) with an engine on a real admission directory.
//!
//! The scenario has 540 activity queries in one region (10 buckets, 200 functions and 60
//! tables × 2 series), so the planner makes two requests of every dataset's queries in
//! report order: 500 (buckets, functions and 40 tables: shared by three datasets) and
//! 40 (tables only); the simulator's pages of 1,000 datapoints make them 7 and 1 pages
//! long. Every series must come back exactly, and each page be one attempt listing the
//! datasets it serves and charging its request's bound to `older-datapoints` (the paired
//! admission on the real clock, through the engine's coordinator). Without `--metrics`,
//! no CloudWatch call is made.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::Credentials;
use aws_smithy_types::date_time::{DateTime, Format};
use tollgate_collectors::output::{Activity, Item};
use tollgate_collectors::{DatasetStatus, DiscoveryReport};
use tollgate_engine::aws::{AttemptOutcome, MemoryTelemetry};
use tollgate_engine::{Engine, EngineConfig};
use tollgate_scan::{DiscoveryRequest, EngineDiscovery};
use tollgate_sim::series::{expected_series, MetricName};
use tollgate_sim::{Scenario, Simulator};
use tollgate_storage::DirEnv;

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
[latency]
default = { kind = "fixed", ms = 0 }
[cloudwatch]
max_page_datapoints = 1000
[[inventory.function_sets]]
count = 200
prefix = "fn-"
region = "us-east-1"
[[inventory.table_sets]]
count = 60
prefix = "table-"
region = "us-east-1"
[[inventory.bucket_sets]]
count = 10
prefix = "bucket-"
region = "us-east-1"
"#;

fn config(dir: &std::path::Path) -> EngineConfig {
    EngineConfig {
        dir_env: DirEnv {
            explicit: Some(dir.to_path_buf()),
            xdg_cache_home: None,
            home: None,
            temp_dir: std::env::temp_dir(),
            uid: tollgate_storage::current_uid(),
        },
        policies: tollgate_quota::PolicyTable::with_overrides(FAST_LAMBDA, "test overrides")
            .unwrap(),
        fleet: None,
    }
}

/// Lambda's control plane (ListFunctions and ListVersionsByFunction) is 15/s by default,
/// so the 200 functions alone took 13 s of discovery before the first CloudWatch page:
/// this test is about the activity phase, and the simulator's own Lambda quota is
/// unlimited, so the engine may list as fast as it can.
const FAST_LAMBDA: &str = r#"{"lambda:control-plane": {"ratePerSecond": 1000, "burst": 100}}"#;

struct Scan {
    report: DiscoveryReport,
    telemetry: MemoryTelemetry,
    sim: Simulator,
}

async fn scan(metrics: bool) -> Scan {
    let sim = Simulator::new(Scenario::parse(SCENARIO, "activity").unwrap());
    let server = sim.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(dir.path())).unwrap();
    let telemetry = MemoryTelemetry::new();
    let discovery = engine.discovery(Some(Arc::new(telemetry.clone())));
    let report = discovery
        .discover(DiscoveryRequest {
            regions: vec!["us-east-1".into()],
            endpoint_url: Some(server.endpoint_url()),
            timeout: Duration::from_secs(120),
            credentials: Some(Credentials::new(
                "AKIDSIM",
                "sim-secret",
                None,
                None,
                "test",
            )),
            metrics,
            ..Default::default()
        })
        .await
        .unwrap();
    crate::assert_valid_report(&report);
    discovery.shutdown();
    engine.close().await.unwrap();
    server.shutdown().await;
    Scan {
        report,
        telemetry,
        sim,
    }
}

fn millis(rfc3339: &str) -> i64 {
    let t = DateTime::from_str(rfc3339, Format::DateTime).unwrap();
    t.secs() * 1_000
}

/// The item's series as (timestamp secs, value), by metric.
fn series_of(activity: &Activity) -> BTreeMap<String, Vec<(i64, f64)>> {
    activity
        .series
        .iter()
        .map(|(metric, series)| {
            let s = series
                .as_ref()
                .unwrap_or_else(|| panic!("{metric} not read"));
            let points = s
                .datapoints
                .iter()
                .map(|d| (millis(&d.timestamp) / 1_000, d.value.as_f64().unwrap()))
                .collect();
            (metric.clone(), points)
        })
        .collect()
}

fn expected(
    namespace: &str,
    metric: &str,
    dims: &[(&str, &str)],
    resource: &str,
    a: &Activity,
) -> Vec<(i64, f64)> {
    let name = MetricName {
        namespace: namespace.into(),
        metric_name: metric.into(),
        dimensions: dims
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    };
    expected_series(&name, resource, millis(&a.start), millis(&a.end), 86_400)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_items_series_arrive_exactly_across_batches_and_pages() {
    let Scan {
        report,
        telemetry,
        sim,
    } = scan(true).await;
    let mut checked = 0;
    for (name, dataset) in &report.datasets {
        assert_eq!(
            dataset.status,
            DatasetStatus::Complete,
            "{name}: {:?}",
            dataset.reasons
        );
        for item in &dataset.items {
            match item {
                Item::LambdaFunction(f) => {
                    let a = f.activity.as_ref().expect("a function has activity");
                    assert_eq!(millis(&a.end) - millis(&a.start), 14 * 86_400_000);
                    assert_eq!(millis(&a.end) % 86_400_000, 0, "ends at midnight UTC");
                    let got = series_of(a);
                    let dims = [("FunctionName", f.function_name.as_str())];
                    assert_eq!(
                        got["Invocations"],
                        expected("AWS/Lambda", "Invocations", &dims, &f.function_name, a)
                    );
                    assert_eq!(
                        got["Errors"],
                        expected("AWS/Lambda", "Errors", &dims, &f.function_name, a)
                    );
                    assert_eq!(got["Invocations"].len(), 14);
                    checked += 1;
                }
                Item::DynamoDbTable(t) => {
                    let a = t.activity.as_ref().expect("a table has activity");
                    let got = series_of(a);
                    let dims = [("TableName", t.table_name.as_str())];
                    for metric in ["ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits"] {
                        assert_eq!(
                            got[metric],
                            expected("AWS/DynamoDB", metric, &dims, &t.table_name, a)
                        );
                    }
                    checked += 1;
                }
                Item::S3Bucket(b) => {
                    let a = b.activity.as_ref().expect("a bucket has activity");
                    let got = series_of(a);
                    let size = [
                        ("BucketName", b.name.as_str()),
                        ("StorageType", "StandardStorage"),
                    ];
                    let objects = [
                        ("BucketName", b.name.as_str()),
                        ("StorageType", "AllStorageTypes"),
                    ];
                    assert_eq!(
                        got["BucketSizeBytes"],
                        expected("AWS/S3", "BucketSizeBytes", &size, &b.name, a)
                    );
                    assert_eq!(
                        got["NumberOfObjects"],
                        expected("AWS/S3", "NumberOfObjects", &objects, &b.name, a)
                    );
                    assert_eq!(
                        a.series["BucketSizeBytes"].as_ref().unwrap().stat,
                        "Average"
                    );
                    checked += 1;
                }
                Item::KmsKey(_) | Item::Resource(_) => {}
            }
        }
    }
    assert_eq!(checked, 270);

    // Two requests: 500 queries × 14 days in pages of 1,000 (7 pages), then 40 × 14
    // (1 page); 7,560 datapoints in all, none throttled.
    let stats = sim.stats();
    let cw = stats.per_operation["cloudwatch:GetMetricData"];
    assert_eq!((cw.received, cw.served, cw.throttled), (8, 8, 0));
    let older = stats.datapoints["us-east-1/older-datapoints"];
    assert_eq!((older.charged, older.pages), (7_560, 8));

    // One event per attempt (no duplicate per dataset), listing the datasets it serves.
    let pages: Vec<_> = telemetry
        .events()
        .into_iter()
        .filter(|e| e.operation == "GetMetricData")
        .collect();
    assert_eq!(pages.len(), 8);
    assert!(pages
        .iter()
        .all(|e| e.outcome == AttemptOutcome::Success && e.attribution.collector == "cloudwatch"));
    let served = |datasets: &[&str]| {
        pages
            .iter()
            .filter(|e| e.attribution.datasets == datasets)
            .count()
    };
    let all = ["dynamodb-tables", "lambda-functions", "s3-buckets"];
    assert_eq!(served(&all), 7, "the first request's pages serve all three");
    assert!(pages
        .iter()
        .filter(|e| e.attribution.datasets.len() == 3)
        .all(|e| e.attribution.dataset.is_none()));
    assert_eq!(served(&["dynamodb-tables"]), 1);
    // Each page charged its request's whole bound (500 or 40 daily series over 14
    // complete days) to older-datapoints, at the gate on the real clock.
    let charged = |e: &tollgate_engine::aws::AttemptEvent| {
        e.datapoints
            .as_ref()
            .map(|d| (d.budget, d.cost, e.attribution.datasets.len()))
    };
    let older = tollgate_quota::DatapointBudget::Older;
    let mut charges: Vec<_> = pages.iter().map(charged).collect();
    charges.sort_by_key(|c| c.map(|(_, cost, _)| cost));
    let mut expected = vec![Some((older, 560, 1))];
    expected.extend([Some((older, 7_000, 3)); 7]);
    assert_eq!(charges, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_metrics_no_cloudwatch_call_is_made_and_no_item_has_activity() {
    let Scan {
        report,
        telemetry,
        sim,
    } = scan(false).await;
    assert_eq!(report.overall_status(), DatasetStatus::Complete);
    let stats = sim.stats();
    assert!(
        !stats.per_operation.contains_key("cloudwatch:GetMetricData"),
        "{:?}",
        stats.per_operation.keys()
    );
    assert!(stats.datapoints.is_empty());
    assert!(telemetry.events().iter().all(|e| e.service != "cloudwatch"));
    let json = serde_json::to_string(&report).unwrap();
    assert!(!json.contains("\"activity\""));
    assert_eq!(report.datasets["lambda-functions"].items.len(), 200);
}

/// A discovery with `--metrics` of `scenario` over the simulator's in-process transport
/// in paused time (retries and backoff on simulated time).
fn paused_scan(scenario: &str) -> (DiscoveryReport, Simulator) {
    use actix::Actor;
    use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
    use tollgate_scan::supervisor::{AwaitReport, StartScan, Supervisor, SupervisorDeps};

    let sim = Simulator::new(Scenario::parse(scenario, "inline").unwrap());
    let transport = sim.clone();
    let report = paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(
            tollgate_quota::Timestamp::from_millis(1_800_000_000_000),
        ));
        let admission = start_in_current_system(
            RuntimeConfig::simulated(tollgate_quota::Owner {
                pid: std::process::id(),
                generation: 1,
            }),
            clock,
        );
        let supervisor = Supervisor::new(SupervisorDeps {
            admission,
            policies: tollgate_quota::PolicyTable::defaults(),
            telemetry: tollgate_engine::throttling::ScanTelemetry::new(Arc::new(
                MemoryTelemetry::new(),
            )),
            http: transport.http_client(),
            fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
        })
        .start();
        let started = supervisor
            .send(StartScan(DiscoveryRequest {
                regions: vec!["us-east-1".into()],
                endpoint_url: Some("http://simulator.invalid".into()),
                timeout: Duration::from_secs(3_600),
                credentials: Some(Credentials::new(
                    "AKIDSIM",
                    "sim-secret",
                    None,
                    None,
                    "test",
                )),
                metrics: true,
                ..Default::default()
            }))
            .await
            .unwrap()
            .unwrap();
        let (reply, answer) = tokio::sync::oneshot::channel();
        supervisor
            .send(AwaitReport {
                scan_id: started.scan_id,
                reply,
            })
            .await
            .unwrap();
        answer.await.unwrap().unwrap()
    });
    crate::assert_valid_report(&report);
    (report, sim)
}

#[test]
fn a_dataset_whose_series_could_not_be_read_is_partial_with_the_reason_and_keeps_its_items() {
    // One request serves both datasets (8 queries); every GetMetricData answers 500.
    let scenario = r#"
account = "123456789012"
regions = ["us-east-1"]
[latency]
default = { kind = "fixed", ms = 0 }
[[faults]]
kind = "server_error"
operations = ["cloudwatch:GetMetricData"]
[[inventory.function_sets]]
count = 3
prefix = "fn-"
region = "us-east-1"
[[inventory.tables]]
name = "orders"
region = "us-east-1"
[[inventory.key_sets]]
count = 2
region = "us-east-1"
"#;
    let (report, sim) = paused_scan(scenario);
    for name in ["lambda-functions", "dynamodb-tables"] {
        let dataset = &report.datasets[name];
        assert_eq!(dataset.status, DatasetStatus::Partial, "{name}");
        assert_eq!(dataset.reasons.len(), 1, "{name}: {:?}", dataset.reasons);
        let reason = &dataset.reasons[0];
        assert_eq!(
            (reason.operation.as_str(), reason.field.as_deref()),
            ("cloudwatch:GetMetricData", Some("activity"))
        );
        assert!(!dataset.items.is_empty());
        for item in &dataset.items {
            let activity = match item {
                Item::LambdaFunction(f) => f.activity.as_ref(),
                Item::DynamoDbTable(t) => t.activity.as_ref(),
                _ => None,
            }
            .expect("the item keeps an activity object");
            assert!(
                activity.series.values().all(Option::is_none),
                "{activity:?}"
            );
            assert_eq!(activity.series.len(), 2);
        }
    }
    assert_eq!(report.datasets["lambda-functions"].items.len(), 3);
    // Datasets without activity are untouched; the buckets dataset is empty.
    assert_eq!(report.datasets["kms-keys"].status, DatasetStatus::Complete);
    assert_eq!(
        report.datasets["s3-buckets"].status,
        DatasetStatus::Complete
    );
    assert!(sim.stats().per_operation["cloudwatch:GetMetricData"].faulted >= 2);
}
