//! `--details` through the fixture simulator in paused time (issue 33): one `GetResource`
//! per item the listing returned with its primary identifier only, none for items listed
//! in full, each charged to `cloudcontrol:GetResource` and one token of each operation of
//! the type's `handlers.read.permissions`; the item then holds the full resource model,
//! its tags in `tags`.
//!
//! The simulator's ECR repositories are listed with `RepositoryName` alone (`list_properties`),
//! as AWS's list handler does; a read spends `ecr:DescribeRepositories` and
//! `ecr:GetLifecyclePolicy` on the server, whose quota for the latter is 2/s
//! against Cloud Control's 100/s. Charged by the gate, the 40 reads are never throttled;
//! charged to Cloud Control's key alone (`Charges::OwnKeyOnly`, what other tools do),
//! they are (the test the first can lose to).

use tollgate_actors::paused_system;
use tollgate_collectors::cloudcontrol::{Charges, Details};
use tollgate_collectors::output::CoverageStatus;
use tollgate_collectors::{Dataset, DatasetStatus};
use tollgate_quota::PolicyTable;
use tollgate_sim::{Scenario, Simulator};

use crate::simulation::{discover_with, Run};

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
[latency]
default = { kind = "fixed", ms = 20 }
[quotas.operations]
"cloudcontrol:ListResources" = { rate_per_second = 100, burst = 100 }
"cloudcontrol:GetResource" = { rate_per_second = 100, burst = 100 }
"ecr:GetLifecyclePolicy" = { rate_per_second = 2, burst = 2 }

[[cloudcontrol.types]]
type = "AWS::ECR::Repository"
list_operations = ["ecr:DescribeRepositories"]
read_operations = ["ecr:DescribeRepositories", "ecr:GetLifecyclePolicy"]
list_properties = ["RepositoryName"]

[[cloudcontrol.types]]
type = "AWS::SQS::Queue"
list_operations = ["sqs:ListQueues"]
read_operations = ["sqs:GetQueueAttributes"]

[[cloudcontrol.resource_sets]]
type = "AWS::ECR::Repository"
region = "us-east-1"
count = 40
prefix = "app"
properties = { ImageTagMutability = "IMMUTABLE", Tags = [{ Key = "team", Value = "core" }] }

[[cloudcontrol.resource_sets]]
type = "AWS::SQS::Queue"
region = "us-east-1"
count = 5
prefix = "queue"
"#;

/// The gate's policies: the server's own figures for the keys it sets.
const POLICIES: &str = r#"{
    "cloudcontrol:ListResources": {"ratePerSecond": 100, "burst": 100},
    "cloudcontrol:GetResource": {"ratePerSecond": 100, "burst": 100},
    "ecr:GetLifecyclePolicy": {"ratePerSecond": 2, "burst": 2}
}"#;

fn dataset(name: &str) -> Dataset {
    name.parse().unwrap()
}

fn sweep(details: Details, charges: Charges) -> (Run, tollgate_sim::Stats) {
    let sim = Simulator::new(Scenario::parse(SCENARIO, "details").unwrap());
    let policies = PolicyTable::with_overrides(POLICIES, "test policies").unwrap();
    let run = paused_system().block_on(discover_with(&sim, policies, |r| {
        r.datasets = vec![dataset("AWS::ECR::Repository"), dataset("AWS::SQS::Queue")];
        r.tags = tollgate_collectors::tagging::TagSweep::Skip;
        r.cloudcontrol = charges;
        r.details = details;
    }));
    (run, sim.stats())
}

#[test]
fn details_read_each_identifiers_only_item_once_charged_to_the_read_operations() {
    let (run, stats) = sweep(Details::Read, Charges::Underlying);
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    let repositories = run.report.dataset(dataset("AWS::ECR::Repository")).unwrap();
    assert_eq!(repositories.items.len(), 40);
    for item in &repositories.items {
        let r = item.resource();
        assert_eq!(r.properties["ImageTagMutability"], "IMMUTABLE", "{r:?}");
        assert_eq!(r.properties["RepositoryName"], r.id.as_str());
        assert!(r
            .arn
            .as_deref()
            .is_some_and(|a| a.starts_with("arn:aws:ecr:")));
        assert_eq!(r.tags["team"], "core", "tags moved to `tags`");
        assert!(!r.properties.contains_key("Tags"));
    }
    assert_eq!(repositories.coverage[0].status, CoverageStatus::Complete);
    // One read per repository; the queues were listed in full and are not read.
    let get = &stats.per_operation["cloudcontrol:GetResource"];
    assert_eq!((get.served, get.throttled), (40, 0), "{get:?}");
    let policy = &stats.per_operation["ecr:GetLifecyclePolicy"];
    assert_eq!(
        (policy.served, policy.throttled),
        (40, 0),
        "each read charged to ecr:GetLifecyclePolicy by the gate: {policy:?}"
    );
    assert!(!stats.per_operation.contains_key("sqs:GetQueueAttributes"));
    // 40 reads at the read operation's 2/s after its burst of 2: about 19 s.
    assert!(run.elapsed.as_secs_f64() >= 18.0, "{:?}", run.elapsed);
}

#[test]
fn with_the_underlying_charge_off_the_reads_are_throttled_by_the_read_operation() {
    let (_, stats) = sweep(Details::Read, Charges::OwnKeyOnly);
    let policy = &stats.per_operation["ecr:GetLifecyclePolicy"];
    assert!(
        policy.throttled > 0,
        "Cloud Control's own key alone lets the reads overrun the ECR quota: {policy:?}"
    );
}

#[test]
fn without_details_no_item_is_read_and_identifiers_only_items_stay_as_listed() {
    let (run, stats) = sweep(Details::Listed, Charges::Underlying);
    assert!(!stats.per_operation.contains_key("cloudcontrol:GetResource"));
    let repositories = run.report.dataset(dataset("AWS::ECR::Repository")).unwrap();
    assert_eq!(repositories.items.len(), 40);
    let first = repositories.items[0].resource();
    assert_eq!(
        first.properties.keys().collect::<Vec<_>>(),
        ["RepositoryName"],
        "{first:?}"
    );
    assert!(first.tags.is_empty());
}

#[test]
fn a_failed_read_keeps_the_listed_item_and_makes_the_dataset_partial_with_its_reason() {
    let scenario = format!(
        "{SCENARIO}\n[[faults]]\nkind = \"server_error\"\noperations = \
         [\"cloudcontrol:GetResource\"]\n"
    );
    let sim = Simulator::new(Scenario::parse(&scenario, "details-failing").unwrap());
    let policies = PolicyTable::with_overrides(POLICIES, "test policies").unwrap();
    let run = paused_system().block_on(discover_with(&sim, policies, |r| {
        r.datasets = vec![dataset("AWS::ECR::Repository")];
        r.tags = tollgate_collectors::tagging::TagSweep::Skip;
        r.details = Details::Read;
    }));
    let repositories = run.report.dataset(dataset("AWS::ECR::Repository")).unwrap();
    assert_eq!(
        repositories.status,
        DatasetStatus::Partial,
        "{:?}",
        repositories.reasons
    );
    assert_eq!(repositories.items.len(), 40, "every listed item stays");
    assert!(repositories
        .items
        .iter()
        .all(|i| i.resource().properties.keys().collect::<Vec<_>>() == ["RepositoryName"]));
    let reason = &repositories.reasons[0];
    assert_eq!(
        (reason.operation.as_str(), reason.field.as_deref()),
        ("cloudcontrol:GetResource", Some("properties"))
    );
    let entry = &repositories.coverage[0];
    assert_eq!(entry.status, CoverageStatus::Partial);
    assert!(
        entry
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("cloudcontrol:GetResource"),
        "{entry:?}"
    );
}

/// SageMaker endpoints and their configurations (seed 000's datasets) through the Cloud
/// Control sweep: listed with their ARN alone, each read with `--details` charged to seed
/// 000's budget for the SageMaker operation underneath (5/s, burst 1), which the server
/// enforces as AWS would. The gate's own defaults (no override) keep every read within it.
#[test]
fn sagemaker_endpoints_go_through_cloud_control_with_reads_on_seed_000s_sagemaker_budgets() {
    let scenario = r#"
account = "123456789012"
regions = ["us-east-1"]
[quotas.operations]
"cloudcontrol:ListResources" = { rate_per_second = 100, burst = 100 }
"cloudcontrol:GetResource" = { rate_per_second = 100, burst = 100 }
"sagemaker:DescribeEndpoint" = { rate_per_second = 5, burst = 1 }
"sagemaker:DescribeEndpointConfig" = { rate_per_second = 5, burst = 1 }

[[cloudcontrol.types]]
type = "AWS::SageMaker::Endpoint"
list_operations = ["sagemaker:ListEndpoints"]
read_operations = ["sagemaker:DescribeEndpoint", "sagemaker:ListTags"]
list_properties = ["EndpointArn"]

[[cloudcontrol.types]]
type = "AWS::SageMaker::EndpointConfig"
list_operations = ["sagemaker:ListEndpointConfigs"]
read_operations = ["sagemaker:DescribeEndpointConfig", "sagemaker:ListTags"]
list_properties = ["EndpointConfigArn"]

[[cloudcontrol.resource_sets]]
type = "AWS::SageMaker::Endpoint"
region = "us-east-1"
count = 20
prefix = "endpoint"
properties = { EndpointConfigName = "serving" }

[[cloudcontrol.resource_sets]]
type = "AWS::SageMaker::EndpointConfig"
region = "us-east-1"
count = 20
prefix = "config"
"#;
    let sim = Simulator::new(Scenario::parse(scenario, "sagemaker").unwrap());
    let policies = PolicyTable::with_overrides(
        r#"{"cloudcontrol:ListResources": {"ratePerSecond": 100, "burst": 100},
            "cloudcontrol:GetResource": {"ratePerSecond": 100, "burst": 100}}"#,
        "test policies",
    )
    .unwrap();
    let types = ["AWS::SageMaker::Endpoint", "AWS::SageMaker::EndpointConfig"];
    let run = paused_system().block_on(discover_with(&sim, policies, |r| {
        r.datasets = types.iter().map(|t| dataset(t)).collect();
        r.tags = tollgate_collectors::tagging::TagSweep::Skip;
        r.details = Details::Read;
    }));
    let stats = sim.stats();
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    for ty in types {
        let items = &run.report.dataset(dataset(ty)).unwrap().items;
        assert_eq!(items.len(), 20, "{ty}");
        assert!(
            items.iter().all(|i| i.resource().properties.len() > 1),
            "{ty}: read in full"
        );
    }
    for op in [
        "sagemaker:DescribeEndpoint",
        "sagemaker:DescribeEndpointConfig",
    ] {
        let s = &stats.per_operation[op];
        assert_eq!((s.served, s.throttled), (20, 0), "{op}: {s:?}");
    }
    // Both budgets at 5/s after a burst of 1, side by side: about 3.8 s, never sooner.
    assert!(run.elapsed.as_secs_f64() >= 3.8, "{:?}", run.elapsed);
    assert!(
        dataset(types[0]).is_cloudcontrol()
            && Dataset::default_sweep().contains(&dataset(types[0])),
        "in the default sweep"
    );
}
