//! `catalog status` against the simulator's Resource Explorer in paused time (issue 36):
//! 17 regions never have more than 5 probes in flight at the simulator, output is
//! sorted by region, and a region whose `ListIndexes` is always throttled gives up after
//! exactly 2 physical attempts — both admitted on its `resource-explorer-2:non-search`
//! key — and is reported `unavailable` with that evidence.

use tollgate_actors::paused_system;
use tollgate_collectors::catalog::status::status;
use tollgate_collectors::catalog::{RegionState, RegionStatus};
use tollgate_engine::aws::telemetry::{AttemptOutcome, RetryOutcome};

use super::catalog_kit::{context, kit, non_search};

const REGIONS: [&str; 17] = [
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "sa-east-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "ap-south-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-southeast-1",
    "ap-southeast-2",
];

/// Every answer takes 200 ms, so the probes of several regions overlap; eu-north-1's
/// `ListIndexes` is always throttled.
fn scenario() -> String {
    let regions: Vec<String> = REGIONS.iter().map(|r| format!("{r:?}")).collect();
    format!(
        r#"
account = "123456789012"
regions = [{}]
[latency]
default = {{ kind = "fixed", ms = 200 }}
[[faults]]
kind = "throttle"
operations = ["resource-explorer-2:ListIndexes"]
region = "eu-north-1"
[[inventory.buckets]]
name = "alpha"
region = "us-east-1"
[[resource_explorer.indexes]]
region = "us-east-1"
type = "aggregator"
default_view = true
[[resource_explorer.indexes]]
region = "eu-west-1"
type = "local"
"#,
        regions.join(", ")
    )
}

fn find<'a>(statuses: &'a [RegionStatus], region: &str) -> &'a RegionState {
    &statuses
        .iter()
        .find(|s| s.region == region)
        .unwrap_or_else(|| panic!("{region} reported"))
        .state
}

#[test]
fn status_of_17_regions_runs_at_most_5_probes_at_once_and_gives_up_on_a_region_after_2_admitted_attempts(
) {
    paused_system().block_on(async {
        let kit = kit(&scenario());
        let regions: Vec<String> = REGIONS.iter().map(|r| r.to_string()).collect();
        let statuses = status(&kit.gate, &kit.sdk, &context(), &regions).await;

        // At the simulator: 5 regions' probes at once, never more.
        assert_eq!(kit.sim.peak_in_flight(), 5);

        let mut sorted: Vec<&str> = REGIONS.to_vec();
        sorted.sort_unstable();
        let reported: Vec<&str> = statuses.iter().map(|s| s.region.as_str()).collect();
        assert_eq!(reported, sorted, "sorted by region");

        match find(&statuses, "us-east-1") {
            RegionState::Indexed {
                index,
                default_view: Some(view),
            } => {
                assert_eq!(
                    (index.kind.as_str(), index.state.as_str()),
                    ("AGGREGATOR", "ACTIVE")
                );
                assert!(view.arn.contains(":view/all-resources/"), "{}", view.arn);
                assert_eq!(view.filter, None);
            }
            other => panic!("us-east-1: {other:?}"),
        }
        match find(&statuses, "eu-west-1") {
            RegionState::Indexed {
                index,
                default_view: None,
            } => assert_eq!(index.kind, "LOCAL"),
            other => panic!("eu-west-1: {other:?}"),
        }
        assert_eq!(find(&statuses, "ap-south-1"), &RegionState::NoIndex);

        let RegionState::Unavailable { evidence } = find(&statuses, "eu-north-1") else {
            panic!("eu-north-1 is unavailable");
        };
        assert_eq!(evidence.probe, "ListIndexes");
        assert_eq!(evidence.attempts, 2);
        assert_eq!(evidence.code.as_deref(), Some("ThrottlingException"));

        // Exactly 2 reached the simulator, and both were admitted on the region's key.
        let received = kit
            .sim
            .arrivals()
            .iter()
            .filter(|a| a.region == "eu-north-1")
            .count();
        assert_eq!(received, 2);
        let key = non_search("eu-north-1");
        let admitted: Vec<_> = kit
            .telemetry
            .events()
            .into_iter()
            .filter(|e| e.quota.as_deref() == Some(key.as_str()) && e.dispatched)
            .collect();
        assert_eq!(admitted.len(), 2, "{admitted:?}");
        assert!(admitted
            .iter()
            .all(|e| e.outcome == AttemptOutcome::Throttle));
        assert_eq!(admitted[1].attempt, 2);
        assert_eq!(admitted[1].retry_outcome, RetryOutcome::AttemptsExhausted);
    });
}
