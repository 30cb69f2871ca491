//! The Cloud Control sweep through the fixture simulator, in paused time (issue 33): a
//! Cloud Control listing spends the underlying service's quota, so the gate charges it
//! there too; a global type is listed once per account; an unsupported type is a
//! coverage entry, never a failed scan.
//!
//! The simulator's server quota for `iam:ListRoles` is far below
//! `cloudcontrol:ListResources`'s, and each `ListResources` page of `AWS::IAM::Role`
//! spends one `iam:ListRoles` token there (as AWS runs the handler). With the gate's
//! default charge (the underlying operations too) and its policy for `iam:ListRoles` at
//! the server's rate, no page is throttled; with the charge off (what every other tool
//! does: Cloud Control's own key only), the same sweep is throttled by IAM. The second
//! test is the one the first can lose to.

use tollgate_actors::paused_system;
use tollgate_collectors::cloudcontrol::Charges;
use tollgate_collectors::output::CoverageStatus;
use tollgate_collectors::{Dataset, DatasetStatus};
use tollgate_quota::PolicyTable;
use tollgate_sim::{Scenario, Simulator};

use crate::simulation::{discover_with, Run};

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1"]
[latency]
default = { kind = "fixed", ms = 20 }
[quotas.operations]
"cloudcontrol:ListResources" = { rate_per_second = 100, burst = 100 }
"iam:ListRoles" = { rate_per_second = 2, burst = 2 }

[[cloudcontrol.types]]
type = "AWS::IAM::Role"
global = true
list_operations = ["iam:ListRoles"]

[[cloudcontrol.types]]
type = "AWS::SQS::Queue"
list_operations = ["sqs:ListQueues"]

[[cloudcontrol.types]]
type = "AWS::SNS::Topic"
list_operations = ["sns:ListTopics"]
unsupported = true

[[cloudcontrol.resource_sets]]
type = "AWS::IAM::Role"
region = "us-east-1"
count = 300
prefix = "role"

[[cloudcontrol.resource_sets]]
type = "AWS::SQS::Queue"
region = "eu-west-1"
count = 30
prefix = "queue"

[[cloudcontrol.resources]]
type = "AWS::SQS::Queue"
region = "us-east-1"
identifier = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
properties = { QueueName = "orders", Arn = "arn:aws:sqs:us-east-1:123456789012:orders", Tags = [{ Key = "team", Value = "core" }] }
"#;

/// The gate's policies: the server's own figures for the two keys.
const POLICIES: &str = r#"{
    "cloudcontrol:ListResources": {"ratePerSecond": 100, "burst": 100},
    "iam:ListRoles": {"ratePerSecond": 2, "burst": 2}
}"#;

fn dataset(name: &str) -> Dataset {
    name.parse().unwrap()
}

fn sweep(charges: Charges, types: &[&str]) -> (Run, tollgate_sim::Stats) {
    let sim = Simulator::new(Scenario::parse(SCENARIO, "cloudcontrol").unwrap());
    let policies = PolicyTable::with_overrides(POLICIES, "test policies").unwrap();
    let datasets: Vec<Dataset> = types.iter().map(|t| dataset(t)).collect();
    let run = paused_system().block_on(discover_with(&sim, policies, |r| {
        r.datasets = datasets;
        r.tags = tollgate_collectors::tagging::TagSweep::Skip;
        r.cloudcontrol = charges;
    }));
    (run, sim.stats())
}

#[test]
fn a_sweep_charged_to_iam_list_roles_is_never_throttled_by_iam_and_lists_a_global_type_once() {
    let (run, stats) = sweep(Charges::Underlying, &["AWS::IAM::Role"]);
    let roles = run.report.dataset(dataset("AWS::IAM::Role")).unwrap();
    assert_eq!(roles.status, DatasetStatus::Complete, "{:?}", roles.reasons);
    // 300 roles, once: Cloud Control answers a global type in every region, and the
    // sweep asks in one.
    assert_eq!(roles.items.len(), 300);
    assert!(roles
        .items
        .iter()
        .all(|i| i.resource().region.as_deref() == Some("global")));
    assert_eq!(roles.coverage.len(), 1, "{:?}", roles.coverage);
    assert_eq!(roles.coverage[0].region, "global");
    assert_eq!(roles.coverage[0].status, CoverageStatus::Complete);
    let iam = &stats.per_operation["iam:ListRoles"];
    // 300 roles in pages of 25: 12 pages, each one iam:ListRoles token.
    assert_eq!((iam.served, iam.throttled), (12, 0), "{iam:?}");
    let cc = &stats.per_operation["cloudcontrol:ListResources"];
    assert_eq!((cc.received, cc.throttled), (12, 0), "{cc:?}");
    // Paced at IAM's 2/s after its burst of 2: the 12 pages take about 5 s.
    assert!(run.elapsed.as_secs_f64() >= 4.5, "{:?}", run.elapsed);
}

#[test]
fn with_the_underlying_charge_off_the_same_sweep_is_throttled_by_iam() {
    let (run, stats) = sweep(Charges::OwnKeyOnly, &["AWS::IAM::Role"]);
    let iam = &stats.per_operation["iam:ListRoles"];
    assert!(
        iam.throttled > 0,
        "Cloud Control's own key alone lets the sweep overrun IAM's quota: {iam:?}"
    );
    // The engine's retries still get every page in the end, later and at a cost.
    let roles = run.report.dataset(dataset("AWS::IAM::Role")).unwrap();
    let throttled: u64 = run
        .report
        .throttling_keys()
        .values()
        .map(|k| k.throttled_responses)
        .sum();
    assert!(throttled > 0 || roles.status != DatasetStatus::Complete);
}

#[test]
fn an_unsupported_type_is_a_coverage_entry_and_a_regional_type_is_listed_per_region() {
    let (run, _) = sweep(Charges::Underlying, &["AWS::SQS::Queue", "AWS::SNS::Topic"]);
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    let topics = run.report.dataset(dataset("AWS::SNS::Topic")).unwrap();
    assert_eq!(topics.status, DatasetStatus::Complete);
    assert!(topics.items.is_empty());
    assert_eq!(
        topics.coverage.len(),
        2,
        "one per region: {:?}",
        topics.coverage
    );
    for entry in &topics.coverage {
        assert_eq!(entry.status, CoverageStatus::Unsupported, "{entry:?}");
        let reason = entry.reason.as_deref().unwrap_or_default();
        assert!(reason.contains("cloudcontrol:ListResources"), "{reason}");
    }
    let queues = run.report.dataset(dataset("AWS::SQS::Queue")).unwrap();
    assert_eq!(queues.items.len(), 31);
    let orders = queues
        .items
        .iter()
        .map(|i| i.resource())
        .find(|r| r.properties.get("QueueName") == Some(&"orders".into()))
        .expect("the explicit queue");
    assert_eq!(orders.region.as_deref(), Some("us-east-1"));
    assert_eq!(
        orders.arn.as_deref(),
        Some("arn:aws:sqs:us-east-1:123456789012:orders")
    );
    assert_eq!(orders.tags["team"], "core");
    assert!(
        !orders.properties.contains_key("Tags"),
        "tags live in `tags`"
    );
    let counts: Vec<(String, u64)> = queues
        .coverage
        .iter()
        .map(|c| (c.region.clone(), c.count))
        .collect();
    assert_eq!(
        counts,
        vec![("eu-west-1".to_string(), 30), ("us-east-1".to_string(), 1)]
    );
}
