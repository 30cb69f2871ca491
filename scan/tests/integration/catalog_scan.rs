//! `discover --catalog` over the simulator in paused time (issue 36): the catalog (an
//! aggregator's default view) names buckets and functions only, so the scan loads S3 and
//! Lambda and never calls DynamoDB or KMS, which the catalog indexes and holds none of;
//! without an index the plan says so once and keeps every dataset.

use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::Credentials;
use tokio_util::sync::CancellationToken;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_collectors::Dataset;
use tollgate_engine::aws::MemoryTelemetry;
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::{Owner, PolicyTable, Timestamp};
use tollgate_scan::catalog::plan_scan;
use tollgate_scan::request::TagSweep;
use tollgate_scan::supervisor::SupervisorDeps;
use tollgate_scan::DiscoveryRequest;
use tollgate_sim::{Scenario, Simulator};

use crate::simulation::discover_with;

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1"]
[[inventory.buckets]]
name = "alpha"
region = "eu-west-1"
[[inventory.function_sets]]
count = 3
prefix = "fn-"
region = "us-east-1"
[[resource_explorer.indexes]]
region = "us-east-1"
type = "aggregator"
default_view = true
[[resource_explorer.indexes]]
region = "eu-west-1"
type = "local"
"#;

fn request(sim: &Simulator) -> DiscoveryRequest {
    DiscoveryRequest {
        regions: sim.scenario().regions.clone(),
        datasets: Dataset::ALL.to_vec(),
        endpoint_url: Some("http://simulator.invalid".into()),
        timeout: Duration::from_secs(3_600),
        credentials: Some(Credentials::new("AKIDSIM", "sim-secret", None, None, "sim")),
        tags: TagSweep::Skip,
        ..Default::default()
    }
}

fn deps(sim: &Simulator) -> SupervisorDeps {
    let clock = Arc::new(TokioClock::starting_at(Timestamp::from_millis(
        1_800_000_000_000,
    )));
    let owner = Owner {
        pid: std::process::id(),
        generation: 2,
    };
    SupervisorDeps {
        admission: start_in_current_system(RuntimeConfig::simulated(owner), clock),
        policies: PolicyTable::defaults(),
        telemetry: ScanTelemetry::new(Arc::new(MemoryTelemetry::new())),
        http: sim.http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    }
}

#[test]
fn a_catalog_driven_scan_calls_only_the_datasets_the_catalog_names() {
    paused_system().block_on(async {
        let sim = Simulator::new(Scenario::parse(SCENARIO, "<catalog>").unwrap());
        let planned = plan_scan(request(&sim), deps(&sim), CancellationToken::new())
            .await
            .expect("a plan");
        assert!(planned.notes.is_empty(), "{:?}", planned.notes);
        assert_eq!(planned.skipped, [Dataset::DynamoDbTables, Dataset::KmsKeys]);
        let searched = sim.stats().per_operation["resource-explorer-2:Search"].received;
        assert_eq!(searched, 1, "one search, in the aggregator's region");
        let narrowed = planned.request.expect("datasets to load");
        assert_eq!(
            narrowed.datasets,
            [Dataset::S3Buckets, Dataset::LambdaFunctions]
        );

        let run = discover_with(&sim, PolicyTable::defaults(), |r| *r = narrowed).await;
        let stats = sim.stats().per_operation;
        let calls = |op: &str| stats.get(op).map_or(0, |s| s.received);
        assert!(calls("s3:ListBuckets") > 0 && calls("lambda:ListFunctions") > 0);
        for op in ["dynamodb:ListTables", "kms:ListKeys"] {
            assert_eq!(calls(op), 0, "{op}: the catalog holds none");
        }
        let found: usize = run.report.datasets.values().map(|d| d.items.len()).sum();
        assert_eq!(found, 4, "the bucket and the three functions");
    });
}

#[test]
fn without_an_index_the_plan_says_so_once_and_keeps_every_dataset() {
    paused_system().block_on(async {
        let text = SCENARIO.split("[[resource_explorer").next().unwrap();
        let sim = Simulator::new(Scenario::parse(text, "<no-index>").unwrap());
        let planned = plan_scan(request(&sim), deps(&sim), CancellationToken::new())
            .await
            .expect("a plan");
        assert_eq!(planned.notes.len(), 1, "{:?}", planned.notes);
        assert!(planned.notes[0].contains("no index"), "{:?}", planned.notes);
        assert!(planned.skipped.is_empty());
        let narrowed = planned.request.expect("datasets to load");
        assert_eq!(narrowed.datasets, Dataset::ALL.to_vec());
        assert_eq!(narrowed.regions, ["eu-west-1", "us-east-1"]);
        assert!(!sim
            .stats()
            .per_operation
            .contains_key("resource-explorer-2:Search"));
    });
}
