//! Cloud Control types that need a parent, through the fixture simulator in paused time
//! (issue 33): a child type is listed once per item of its parent type (native, as
//! `AWS::Lambda::Function`, or swept, as `AWS::EKS::Cluster`), with the parent's
//! properties as its `ResourceModel` (the simulator lists only the children whose
//! properties hold those values, and refuses a listing without them), every page charged
//! to `cloudcontrol:ListResources` and the type's list operations; a child whose parent
//! type is not in the scan is `skipped`, its reason naming the type to add; a child of a
//! failed parent listing is `failed` there, never `complete`.
//!
//! The server's `eks:ListNodegroups` quota is 2/s against Cloud Control's 100/s: three
//! node-group pages (two under `prod`, one under `dev`) are never throttled because the
//! gate charges that key too, and are with that charge off (the test the first can lose
//! to).

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
"eks:ListNodegroups" = { rate_per_second = 2, burst = 2 }

[[inventory.functions]]
name = "orders-api"
region = "us-east-1"

[[inventory.functions]]
name = "no-aliases"
region = "us-east-1"

[[inventory.functions]]
name = "image-resizer"
region = "eu-west-1"

[[cloudcontrol.types]]
type = "AWS::Lambda::Alias"
list_operations = ["lambda:ListAliases"]
parent = ["FunctionName"]

[[cloudcontrol.types]]
type = "AWS::EKS::Cluster"
list_operations = ["eks:ListClusters"]

[[cloudcontrol.types]]
type = "AWS::EKS::Nodegroup"
list_operations = ["eks:ListNodegroups"]
parent = ["ClusterName"]

[[cloudcontrol.resources]]
type = "AWS::Lambda::Alias"
region = "us-east-1"
identifier = "arn:aws:lambda:us-east-1:123456789012:function:orders-api:live"
properties = { FunctionName = "orders-api", Name = "live", AliasArn = "arn:aws:lambda:us-east-1:123456789012:function:orders-api:live" }

[[cloudcontrol.resources]]
type = "AWS::Lambda::Alias"
region = "us-east-1"
identifier = "arn:aws:lambda:us-east-1:123456789012:function:orders-api:canary"
properties = { FunctionName = "orders-api", Name = "canary", AliasArn = "arn:aws:lambda:us-east-1:123456789012:function:orders-api:canary" }

[[cloudcontrol.resources]]
type = "AWS::Lambda::Alias"
region = "eu-west-1"
identifier = "arn:aws:lambda:eu-west-1:123456789012:function:image-resizer:live"
properties = { FunctionName = "image-resizer", Name = "live", AliasArn = "arn:aws:lambda:eu-west-1:123456789012:function:image-resizer:live" }

[[cloudcontrol.resources]]
type = "AWS::EKS::Cluster"
region = "us-east-1"
identifier = "prod"
properties = { Name = "prod", Arn = "arn:aws:eks:us-east-1:123456789012:cluster/prod" }

[[cloudcontrol.resources]]
type = "AWS::EKS::Cluster"
region = "us-east-1"
identifier = "dev"
properties = { Name = "dev", Arn = "arn:aws:eks:us-east-1:123456789012:cluster/dev" }

[[cloudcontrol.resource_sets]]
type = "AWS::EKS::Nodegroup"
region = "us-east-1"
count = 30
prefix = "prod-ng"
properties = { ClusterName = "prod" }

[[cloudcontrol.resource_sets]]
type = "AWS::EKS::Nodegroup"
region = "us-east-1"
count = 3
prefix = "dev-ng"
properties = { ClusterName = "dev" }
"#;

/// The gate's policies: the server's own figures for the keys it sets.
const POLICIES: &str = r#"{
    "cloudcontrol:ListResources": {"ratePerSecond": 100, "burst": 100},
    "eks:ListNodegroups": {"ratePerSecond": 2, "burst": 2}
}"#;

fn dataset(name: &str) -> Dataset {
    name.parse().unwrap()
}

fn sweep(scenario: &str, types: &[&str]) -> (Run, tollgate_sim::Stats) {
    sweep_charged(Charges::Underlying, scenario, types)
}

fn sweep_charged(charges: Charges, scenario: &str, types: &[&str]) -> (Run, tollgate_sim::Stats) {
    let sim = Simulator::new(Scenario::parse(scenario, "cloudcontrol-parents").unwrap());
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
fn a_parent_type_in_the_scan_lists_its_children_once_per_parent_item_with_its_model() {
    let (run, stats) = sweep(
        SCENARIO,
        &[
            "lambda-functions",
            "AWS::Lambda::Alias",
            "AWS::EKS::Cluster",
            "AWS::EKS::Nodegroup",
        ],
    );
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);

    // A native parent: one ListAliases per function, in the function's region.
    let aliases = run.report.dataset(dataset("AWS::Lambda::Alias")).unwrap();
    let mut got: Vec<(String, String)> = aliases
        .items
        .iter()
        .map(|i| {
            let r = i.resource();
            (
                r.region.clone().unwrap(),
                format!("{}:{}", r.properties["FunctionName"], r.properties["Name"]),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("eu-west-1".into(), r#""image-resizer":"live""#.into()),
            ("us-east-1".into(), r#""orders-api":"canary""#.into()),
            ("us-east-1".into(), r#""orders-api":"live""#.into()),
        ]
    );
    assert_eq!(
        stats.per_operation["lambda:ListAliases"].served, 3,
        "one listing per function, none for the type as a whole"
    );
    for entry in &aliases.coverage {
        assert_eq!(entry.status, CoverageStatus::Complete, "{entry:?}");
    }

    // A swept parent: 30 node groups under prod (pages of 25 and 5), 3 under dev.
    let nodegroups = run.report.dataset(dataset("AWS::EKS::Nodegroup")).unwrap();
    assert_eq!(
        nodegroups.status,
        DatasetStatus::Complete,
        "{:?}",
        nodegroups.reasons
    );
    let under = |cluster: &str| {
        nodegroups
            .items
            .iter()
            .filter(|i| i.resource().properties["ClusterName"] == cluster)
            .count()
    };
    assert_eq!((under("prod"), under("dev")), (30, 3));
    let eks = &stats.per_operation["eks:ListNodegroups"];
    assert_eq!(
        (eks.served, eks.throttled),
        (3, 0),
        "three pages, each charged to eks:ListNodegroups by the gate: {eks:?}"
    );
    let counts: Vec<(String, u64, CoverageStatus)> = nodegroups
        .coverage
        .iter()
        .map(|c| (c.region.clone(), c.count, c.status))
        .collect();
    assert_eq!(
        counts,
        [
            ("eu-west-1".into(), 0, CoverageStatus::Complete),
            ("us-east-1".into(), 33, CoverageStatus::Complete),
        ]
    );
    // Paced at eks:ListNodegroups' 2/s after its burst of 2: the third page waits.
    assert!(run.elapsed.as_secs_f64() >= 0.5, "{:?}", run.elapsed);
}

#[test]
fn with_the_underlying_charge_off_the_node_group_pages_are_throttled_by_eks() {
    let (_, stats) = sweep_charged(
        Charges::OwnKeyOnly,
        SCENARIO,
        &["AWS::EKS::Cluster", "AWS::EKS::Nodegroup"],
    );
    let eks = &stats.per_operation["eks:ListNodegroups"];
    assert!(
        eks.throttled > 0,
        "Cloud Control's own key alone lets the child listings overrun EKS's quota: {eks:?}"
    );
}

#[test]
fn a_child_whose_parent_type_is_not_in_the_scan_is_skipped_with_the_type_to_add() {
    let (run, stats) = sweep(SCENARIO, &["AWS::EKS::Nodegroup"]);
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    let nodegroups = run.report.dataset(dataset("AWS::EKS::Nodegroup")).unwrap();
    assert!(nodegroups.items.is_empty());
    assert_eq!(nodegroups.coverage.len(), 2, "{:?}", nodegroups.coverage);
    for entry in &nodegroups.coverage {
        assert_eq!(entry.status, CoverageStatus::Skipped, "{entry:?}");
        let reason = entry.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("add AWS::EKS::Cluster to --types"),
            "{reason}"
        );
    }
    assert!(
        !stats
            .per_operation
            .contains_key("cloudcontrol:ListResources"),
        "no call is made: {:?}",
        stats.per_operation.keys()
    );
}

#[test]
fn a_child_of_a_failed_parent_listing_is_failed_there_and_not_complete() {
    // Every Cloud Control call in eu-west-1 fails: the clusters' listing there fails.
    let scenario = format!(
        "{SCENARIO}\n[[faults]]\nkind = \"server_error\"\noperations = \
         [\"cloudcontrol:ListResources\"]\nregion = \"eu-west-1\"\n"
    );
    let (run, _) = sweep(&scenario, &["AWS::EKS::Cluster", "AWS::EKS::Nodegroup"]);
    let clusters = run.report.dataset(dataset("AWS::EKS::Cluster")).unwrap();
    assert_eq!(clusters.status, DatasetStatus::Failed);
    let nodegroups = run.report.dataset(dataset("AWS::EKS::Nodegroup")).unwrap();
    assert_eq!(
        nodegroups.status,
        DatasetStatus::Failed,
        "no parent listed there is not no child there: {:?}",
        nodegroups.reasons
    );
    let by_region = |region: &str| {
        nodegroups
            .coverage
            .iter()
            .find(|c| c.region == region)
            .unwrap_or_else(|| panic!("{region}: {:?}", nodegroups.coverage))
    };
    let west = by_region("eu-west-1");
    assert_eq!(west.status, CoverageStatus::Failed, "{west:?}");
    let reason = west.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("AWS::EKS::Cluster"), "{reason}");
    assert!(reason.contains("failed"), "{reason}");
    let east = by_region("us-east-1");
    assert_eq!((east.status, east.count), (CoverageStatus::Complete, 33));
}
