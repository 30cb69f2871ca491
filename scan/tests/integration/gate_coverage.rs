//! Nothing a collector sends bypasses the gate (issue 35): the gate's dispatch is
//! installed once per SDK client instead of per attempt, so this checks from the far
//! side that every request that reached the server was an admitted attempt.
//!
//! The demo account is scanned through the fixture simulator in paused time with every
//! kind of call a scan makes: every native dataset (S3, Lambda, DynamoDB, KMS, EC2 with
//! its per-image reads), the Cloud Control sweep of the scenario's types (child types
//! listed per parent, identifiers-only items read with `GetResource`), the tagging sweep
//! and CloudWatch activity. The simulator counts what it received per operation; the
//! gate's telemetry records every attempt it dispatched. A collector whose client sent
//! through any other HTTP client (or without `AwsGate::call`) would show as a request
//! the server received and the gate never dispatched, or as a dataset that failed.

use std::collections::BTreeMap;

use tollgate_actors::paused_system;
use tollgate_collectors::cloudcontrol::Details;
use tollgate_collectors::{Dataset, DatasetStatus};
use tollgate_quota::PolicyTable;
use tollgate_sim::{bundled, Scenario, Simulator};

use crate::simulation::discover_with;

#[test]
fn every_request_the_server_received_was_an_attempt_the_gate_admitted() {
    let scenario = Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml").unwrap();
    let swept: Vec<Dataset> = scenario
        .cloudcontrol
        .types
        .keys()
        .map(|name| name.parse().unwrap())
        .collect();
    assert!(
        !swept.is_empty(),
        "the demo scenario sweeps Cloud Control types"
    );
    let sim = Simulator::new(scenario);
    let run = paused_system().block_on(discover_with(&sim, PolicyTable::defaults(), |r| {
        r.datasets = Dataset::defaults().into_iter().chain(swept).collect();
        r.metrics = true;
        r.details = Details::Read;
    }));
    for (name, dataset) in &run.report.datasets {
        assert_eq!(
            dataset.status,
            DatasetStatus::Complete,
            "{name}: {:#?}",
            dataset.reasons
        );
    }

    let mut dispatched: BTreeMap<String, u64> = BTreeMap::new();
    for event in run.telemetry.events().iter().filter(|e| e.dispatched) {
        *dispatched
            .entry(format!("{}:{}", event.service, event.operation))
            .or_default() += 1;
    }
    let stats = sim.stats();
    let mut received: BTreeMap<String, u64> = BTreeMap::new();
    for arrival in sim.arrivals() {
        *received.entry(arrival.operation).or_default() += 1;
    }
    assert_eq!(
        received.values().sum::<u64>(),
        stats.totals.received,
        "the arrival log holds every request"
    );
    for operation in [
        "s3:ListBuckets",
        "lambda:ListFunctions",
        "dynamodb:DescribeTable",
        "kms:DescribeKey",
        "ec2:DescribeImageAttribute",
        "cloudcontrol:ListResources",
        "cloudcontrol:GetResource",
        "tag:GetResources",
        "cloudwatch:GetMetricData",
    ] {
        assert!(
            received.contains_key(operation),
            "the scan sent {operation}: {received:#?}"
        );
    }
    assert_eq!(
        received, dispatched,
        "per operation, what the server received and what the gate dispatched"
    );
}
