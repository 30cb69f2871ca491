//! Simulation tier (DESIGN §7): the real supervisor, collectors, gate and quota actors in
//! paused tokio time, over the fixture simulator's in-process transport driven by the
//! bundled scenario files — no sockets, simulated time only.
//!
//! - The large-account S3 regression (seed 000): 1,500 buckets, batches of 10 with two
//!   configuration reads each and 100 ms of transport: every bucket discovered, all 3,000
//!   configuration reads started within 150 s of simulated time, and each S3 operation
//!   within its 10/s policy (token-bucket conformant, and per second).
//! - A full discovery of the demo account: every dataset complete and equal to the
//!   scenario's inventory; the throttle storm's retries are in the report.
//! - A throttle whose `Retry-After` is an HTTP date holds the key until that date, read
//!   against the answer's `Date` header (the simulator's calendar is not the clock's).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use aws_credential_types::Credentials;
use aws_smithy_types::date_time::{DateTime, Format};
use tokio::sync::oneshot;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_collectors::{Dataset, DatasetStatus, DiscoveryReport, Item};
use tollgate_engine::aws::{AttemptOutcome, MemoryTelemetry};
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::{Owner, PolicyTable, Timestamp};
use tollgate_scan::supervisor::{AwaitReport, StartScan, Supervisor, SupervisorDeps};
use tollgate_scan::DiscoveryRequest;
use tollgate_sim::scenario::Quota;
use tollgate_sim::token_bucket::TokenBucket;
use tollgate_sim::{bundled, Arrival, Scenario, Simulator};

const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);

/// One scan through the simulator: the report, the simulated time it took, the attempt
/// events.
pub(crate) struct Run {
    pub report: DiscoveryReport,
    pub elapsed: Duration,
    pub telemetry: MemoryTelemetry,
}

/// Run a discovery of `datasets` in the scenario's regions over `sim`'s in-process
/// transport. Must run inside the paused system.
async fn discover(sim: &Simulator, datasets: Vec<Dataset>) -> Run {
    discover_with(sim, PolicyTable::defaults(), |r| r.datasets = datasets).await
}

/// [`discover`] under `policies`, with the request as `edit` leaves it (its datasets
/// empty: the defaults).
pub(crate) async fn discover_with(
    sim: &Simulator,
    policies: PolicyTable,
    edit: impl FnOnce(&mut DiscoveryRequest),
) -> Run {
    let clock = Arc::new(TokioClock::starting_at(START));
    let admission = start_in_current_system(
        RuntimeConfig::simulated(Owner {
            pid: std::process::id(),
            generation: 1,
        }),
        clock,
    );
    let telemetry = MemoryTelemetry::new();
    let supervisor = Supervisor::new(SupervisorDeps {
        admission,
        policies,
        telemetry: ScanTelemetry::new(Arc::new(telemetry.clone())),
        http: sim.http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    })
    .start();
    sim.reset();
    let started_at = tollgate_actors::clock::monotonic_now();
    let mut request = DiscoveryRequest {
        regions: sim.scenario().regions.clone(),
        // Never resolved: the in-process transport answers whatever the host.
        endpoint_url: Some("http://simulator.invalid".into()),
        timeout: Duration::from_secs(3_600),
        credentials: Some(Credentials::new(
            "AKIDSIM",
            "sim-secret",
            None,
            None,
            "simulation",
        )),
        ..Default::default()
    };
    edit(&mut request);
    let started = supervisor
        .send(StartScan(request))
        .await
        .expect("the supervisor answers")
        .expect("a valid request");
    let (reply, answer) = oneshot::channel();
    supervisor
        .send(AwaitReport {
            scan_id: started.scan_id,
            reply,
        })
        .await
        .expect("the supervisor answers");
    let report = answer.await.expect("a report").expect("a known scan");
    crate::assert_valid_report(&report);
    Run {
        report,
        elapsed: tollgate_actors::clock::since(started_at),
        telemetry,
    }
}

/// Wall time of a test, printed (never asserted: tests don't time the machine).
#[allow(clippy::disallowed_methods)] // wall clock: printed for the report, not used in logic
fn wall_clock() -> std::time::Instant {
    std::time::Instant::now()
}

#[allow(clippy::disallowed_methods)] // wall clock: printed for the report, not used in logic
fn wall_since(start: std::time::Instant) -> Duration {
    start.elapsed()
}

fn arrivals_of<'a>(arrivals: &'a [Arrival], operation: &str) -> Vec<&'a Arrival> {
    arrivals
        .iter()
        .filter(|a| a.operation == operation)
        .collect()
}

#[test]
fn large_account_s3_regression_1500_buckets_within_150_s_and_10_per_second() {
    let wall = wall_clock();
    let scenario = Scenario::parse(bundled::S3_1500, "fixtures/scenarios/s3-1500.toml").unwrap();
    let sim = Simulator::new(scenario.clone());
    let run = paused_system().block_on(discover(&sim, vec![Dataset::S3Buckets]));

    // Every bucket, with the scenario's configuration counts.
    let buckets = run.report.dataset(Dataset::S3Buckets).unwrap();
    assert_eq!(
        buckets.status,
        DatasetStatus::Complete,
        "{:#?}",
        buckets.reasons
    );
    let found: BTreeMap<String, (Option<u32>, Option<u32>)> = buckets
        .items
        .iter()
        .map(|i| match i {
            Item::S3Bucket(b) => (
                b.name.clone(),
                (
                    b.lifecycle_rule_count,
                    b.intelligent_tiering_configuration_count,
                ),
            ),
            other => panic!("not a bucket: {other:?}"),
        })
        .collect();
    let expected: BTreeMap<String, (Option<u32>, Option<u32>)> = scenario
        .inventory
        .buckets
        .iter()
        .map(|b| {
            (
                b.name.clone(),
                (
                    Some(b.lifecycle_rules),
                    Some(b.intelligent_tiering_configurations),
                ),
            )
        })
        .collect();
    assert_eq!(found.len(), 1_500);
    assert_eq!(found, expected);

    // What reached the server: exactly the expected calls, nothing throttled.
    let stats = sim.stats();
    for (operation, calls) in scenario.expected_calls() {
        let received = stats
            .per_operation
            .get(&operation)
            .map_or(0, |s| s.received);
        // The tagging sweep runs beside the selected dataset (it tags its items).
        if ["s3:", "sts:", "tag:"]
            .iter()
            .any(|p| operation.starts_with(p))
        {
            assert_eq!(received, calls, "{operation}");
        } else {
            assert_eq!(received, 0, "{operation}: only s3-buckets was asked for");
        }
    }
    assert_eq!(stats.totals.throttled, 0);
    // ListBuckets reports each bucket's region (current S3), so the collector asks
    // GetBucketLocation for none of them: the 3,000 reads are all configuration reads.
    assert_eq!(
        stats
            .per_operation
            .get("s3:GetBucketLocation")
            .map_or(0, |s| s.received),
        0
    );

    // All 3,000 configuration reads start within 150 s of simulated time.
    let arrivals = sim.arrivals();
    let reads: Vec<&Arrival> = arrivals
        .iter()
        .filter(|a| {
            a.operation == "s3:GetBucketLifecycleConfiguration"
                || a.operation == "s3:ListBucketIntelligentTieringConfigurations"
        })
        .collect();
    assert_eq!(reads.len(), 3_000);
    let last_start = reads.iter().map(|a| a.at).max().unwrap();
    assert!(
        last_start <= Duration::from_secs(150),
        "last read started at {last_start:?}"
    );

    // Each S3 operation within its policy (10/s, burst 10): every arrival conforms to a
    // token bucket of the policy (exact), so no 1 s window holds more than burst + rate,
    // and no aligned second more than that either.
    for operation in [
        "s3:ListBuckets",
        "s3:GetBucketLifecycleConfiguration",
        "s3:ListBucketIntelligentTieringConfigurations",
    ] {
        let mut policy = TokenBucket::new(Quota {
            rate_per_second: 10.0,
            burst: 10,
        });
        for a in arrivals_of(&arrivals, operation) {
            assert!(
                policy.take(a.at),
                "{operation} at {:?} exceeds 10/s burst 10",
                a.at
            );
        }
        let per_second_max = stats
            .per_second
            .iter()
            .filter(|s| s.operation == operation)
            .map(|s| s.counts.received)
            .max()
            .unwrap();
        assert!(
            per_second_max <= 20,
            "{operation}: {per_second_max} in one second"
        );
        let steady_max = stats
            .per_second
            .iter()
            .filter(|s| s.operation == operation && s.second >= 1)
            .map(|s| s.counts.received)
            .max()
            .unwrap_or(0);
        println!(
            "{operation}: max {per_second_max}/s in the first second (burst), {steady_max}/s after"
        );
        assert!(
            steady_max <= 11,
            "{operation}: {steady_max} in one second after the burst"
        );
    }
    assert!(run
        .report
        .throttling_keys()
        .values()
        .all(|t| t.throttled_responses == 0));
    assert!(run
        .telemetry
        .events()
        .iter()
        .all(|e| e.outcome == AttemptOutcome::Success
            || e.operation == "GetBucketLifecycleConfiguration"));
    println!(
        "s3-1500: 3,000 configuration reads, last started at {:.1} s simulated; scan {:.1} s simulated; {:.2} s wall",
        last_start.as_secs_f64(),
        run.elapsed.as_secs_f64(),
        wall_since(wall).as_secs_f64()
    );
}

fn rfc3339_secs(text: &str) -> i64 {
    DateTime::from_str(text, Format::DateTime).unwrap().secs()
}

#[test]
fn demo_account_discovered_complete_and_the_throttle_storm_is_retried() {
    let wall = wall_clock();
    let scenario = Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml").unwrap();
    let sim = Simulator::new(scenario.clone());
    let run = paused_system().block_on(discover(&sim, Vec::new()));
    let report = &run.report;
    assert_eq!(report.account.as_deref(), Some(scenario.account.as_str()));
    assert_eq!(report.regions, scenario.regions);
    for dataset in Dataset::ALL {
        let d = report.dataset(dataset).unwrap();
        assert_eq!(
            d.status,
            DatasetStatus::Complete,
            "{dataset:?}: {:#?}",
            d.reasons
        );
    }
    let inv = &scenario.inventory;

    let mut buckets: Vec<_> = report
        .dataset(Dataset::S3Buckets)
        .unwrap()
        .items
        .iter()
        .map(|i| match i {
            Item::S3Bucket(b) => (
                b.name.clone(),
                b.resource.region.clone().unwrap(),
                b.lifecycle_rule_count.unwrap(),
                b.intelligent_tiering_configuration_count.unwrap(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    buckets.sort();
    let mut want: Vec<_> = inv
        .buckets
        .iter()
        .map(|b| {
            (
                b.name.clone(),
                b.region.clone(),
                b.lifecycle_rules,
                b.intelligent_tiering_configurations,
            )
        })
        .collect();
    want.sort();
    assert_eq!(buckets, want);

    let mut functions: Vec<_> = report
        .dataset(Dataset::LambdaFunctions)
        .unwrap()
        .items
        .iter()
        .map(|i| match i {
            Item::LambdaFunction(f) => (
                f.function_name.clone(),
                f.resource.region.clone().unwrap(),
                f.runtime.clone().unwrap(),
                f.version_count.unwrap(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    functions.sort();
    let mut want: Vec<_> = inv
        .functions
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                f.region.clone(),
                f.runtime.clone(),
                f.versions,
            )
        })
        .collect();
    want.sort();
    assert_eq!(functions, want);

    let mut tables: Vec<_> = report
        .dataset(Dataset::DynamoDbTables)
        .unwrap()
        .items
        .iter()
        .map(|i| match i {
            Item::DynamoDbTable(t) => (
                t.table_name.clone(),
                t.resource.region.clone().unwrap(),
                t.billing_mode.clone().unwrap(),
                t.item_count.unwrap(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    tables.sort();
    let mut want: Vec<_> = inv
        .tables
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.region.clone(),
                t.billing_mode.clone(),
                t.item_count,
            )
        })
        .collect();
    want.sort();
    assert_eq!(tables, want);

    let mut keys: Vec<_> = report
        .dataset(Dataset::KmsKeys)
        .unwrap()
        .items
        .iter()
        .map(|i| match i {
            Item::KmsKey(k) => (
                k.key_id.clone(),
                k.resource.region.clone().unwrap(),
                k.key_manager.clone().unwrap(),
                k.last_used_at.as_deref().map(rfc3339_secs),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    keys.sort();
    let mut want: Vec<_> = inv
        .keys
        .iter()
        .map(|k| {
            (
                k.id.clone(),
                k.region.clone(),
                k.manager.clone(),
                k.last_used_epoch_seconds,
            )
        })
        .collect();
    want.sort();
    assert_eq!(keys, want);

    // The storm: the server throttled some lifecycle reads and version listings; the
    // engine retried them (and the report says so), and nothing gave up.
    let stats = sim.stats();
    let storm: u64 = [
        "s3:GetBucketLifecycleConfiguration",
        "lambda:ListVersionsByFunction",
    ]
    .iter()
    .map(|op| stats.per_operation[*op].throttled)
    .sum();
    assert!(storm > 0, "the storm throttled nothing: {stats:#?}");
    assert_eq!(stats.totals.throttled, storm, "only the storm throttles");
    let keys = report.throttling_keys();
    let reported: u64 = keys.values().map(|t| t.throttled_responses).sum();
    let retries: u64 = keys.values().map(|t| t.retries).sum();
    let gave_up: u64 = keys.values().map(|t| t.gave_up_calls).sum();
    assert_eq!(reported, storm, "{:#?}", report.throttling);
    assert_eq!(retries, storm, "every throttled attempt was retried");
    assert_eq!(gave_up, 0);
    let throttle_events = run
        .telemetry
        .events()
        .iter()
        .filter(|e| e.outcome == AttemptOutcome::Throttle)
        .count() as u64;
    assert_eq!(throttle_events, storm);
    // Every call the server saw beyond one discovery's plan is a retry.
    let planned: u64 = scenario.expected_calls().values().sum();
    assert_eq!(stats.totals.received, planned + retries);
    assert_eq!(
        stats.per_operation.values().map(|s| s.served).sum::<u64>(),
        planned
    );
    println!(
        "demo: {} calls planned, {} throttled by the storm and retried; scan {:.1} s simulated; {:.2} s wall",
        planned,
        storm,
        run.elapsed.as_secs_f64(),
        wall_since(wall).as_secs_f64()
    );
}

#[test]
fn a_retry_after_http_date_holds_the_key_until_that_date() {
    // The simulator's calendar starts in 2026, the admission clock (START) in 2027: the
    // wait comes from the answer's own Date header, not from comparing clocks.
    let text = r#"
account = "123456789012"
regions = ["us-east-1"]
[latency]
default = { kind = "fixed", ms = 5 }
[[faults]]
kind = "throttle"
operations = ["dynamodb:ListTables"]
until_ms = 100
retry_after_ms = 20000
retry_after_date = true
[[inventory.tables]]
name = "orders"
region = "us-east-1"
"#;
    let scenario = Scenario::parse(text, "retry-after-date.toml").unwrap();
    let sim = Simulator::new(scenario);
    let run = paused_system().block_on(discover(&sim, vec![Dataset::DynamoDbTables]));
    let tables = run.report.dataset(Dataset::DynamoDbTables).unwrap();
    assert_eq!(
        tables.status,
        DatasetStatus::Complete,
        "{:#?}",
        tables.reasons
    );
    assert_eq!(tables.items.len(), 1);
    let arrivals = sim.arrivals();
    let lists = arrivals_of(&arrivals, "dynamodb:ListTables");
    assert_eq!(lists.len(), 2, "one throttled, one served: {lists:?}");
    assert_eq!(lists[0].outcome, tollgate_sim::Outcome::Throttled);
    assert_eq!(lists[1].outcome, tollgate_sim::Outcome::Served);
    // Without reading the date the retry would go after the throttle backoff (at most
    // 1 s) and the key's cooldown; with it, not before the 20 s the date stands for.
    let gap = lists[1].at - lists[0].at;
    assert!(
        gap >= Duration::from_millis(19_900) && gap < Duration::from_secs(25),
        "retried {gap:?} after the throttle"
    );
}
