//! `catalog init` against the simulator's Resource Explorer in paused time (issue 36):
//! indexes created and polled until `ACTIVE`, one promoted to the aggregator, a default
//! view made there; every call paced by the region's `resource-explorer-2:non-search`
//! budget (3/s, burst 1) although set-up's own key is made fast, every call's allowance
//! on `resource-explorer-2:setup`; and a second run changes nothing.

use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_collectors::catalog::setup::{init, Change, InitPlan, VIEW_NAME};
use tollgate_quota::PolicyTable;

use super::catalog_kit::{context, kit_with, ACCOUNT};

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1", "ap-south-1"]
[latency]
default = { kind = "fixed", ms = 0 }
[resource_explorer]
settle_seconds = 2
[[resource_explorer.indexes]]
region = "eu-west-1"
type = "local"
"#;

/// Set-up's own key far faster than non-search: only non-search can pace the calls.
const FAST_SETUP: &str = r#"{"resource-explorer-2:setup": {"ratePerSecond": 100, "burst": 100}}"#;

const MUTATIONS: [&str; 4] = [
    "resource-explorer-2:CreateIndex",
    "resource-explorer-2:UpdateIndexType",
    "resource-explorer-2:CreateView",
    "resource-explorer-2:AssociateDefaultView",
];

#[test]
fn init_creates_polls_promotes_and_makes_a_default_view_paced_by_the_non_search_budget_and_a_rerun_changes_nothing(
) {
    paused_system().block_on(async {
        let policies = PolicyTable::with_overrides(FAST_SETUP, "test").unwrap();
        let kit = kit_with(SCENARIO, policies);
        let regions: Vec<String> = ["ap-south-1", "eu-west-1", "us-east-1"]
            .map(String::from)
            .to_vec();
        let plan = InitPlan {
            aggregator: Some("us-east-1".into()),
        };
        let report = init(&kit.gate, &kit.sdk, &context(), &regions, &plan).await;
        assert!(report.complete(), "{report:#?}");

        let east = &report.regions[2];
        assert_eq!(east.region, "us-east-1");
        let index = east.index.as_ref().unwrap();
        assert_eq!(
            (index.kind.as_str(), index.state.as_str()),
            ("AGGREGATOR", "ACTIVE")
        );
        assert!(
            matches!(
                east.changes[..],
                [
                    Change::CreatedIndex,
                    Change::PromotedToAggregator,
                    Change::CreatedView { .. },
                    Change::AssociatedDefaultView { .. }
                ]
            ),
            "{:?}",
            east.changes
        );
        assert!(east.default_view.as_deref().unwrap().contains(VIEW_NAME));
        // eu-west-1 had its index: nothing created, no view outside the aggregator.
        let west = &report.regions[1];
        assert!(west.changes.is_empty(), "{:?}", west.changes);
        assert_eq!(west.default_view, None);
        assert_eq!(report.regions[0].changes, [Change::CreatedIndex]);

        // Paced per region at 3/s, burst 1: a third of a second between two calls.
        let arrivals = kit.sim.arrivals();
        for region in &regions {
            let at: Vec<Duration> = arrivals
                .iter()
                .filter(|a| &a.region == region)
                .map(|a| a.at)
                .collect();
            assert!(at.len() >= 2, "{region}: {at:?}");
            for pair in at.windows(2) {
                assert!(
                    pair[1] - pair[0] >= Duration::from_millis(333),
                    "{region}: {at:?}"
                );
            }
        }
        // Every set-up call holds its allowance on the set-up key of its region.
        let events = kit.telemetry.events();
        assert!(!events.is_empty());
        for e in &events {
            let region = e
                .quota
                .as_deref()
                .unwrap()
                .split('/')
                .nth(2)
                .unwrap()
                .to_owned();
            assert_eq!(
                e.quota.as_deref(),
                Some(format!("aws/{ACCOUNT}/{region}/resource-explorer-2:setup").as_str())
            );
        }

        let before = kit.sim.stats().per_operation;
        let again = init(&kit.gate, &kit.sdk, &context(), &regions, &plan).await;
        assert!(again.complete(), "{again:#?}");
        assert!(
            again.regions.iter().all(|r| r.changes.is_empty()),
            "{again:#?}"
        );
        let after = kit.sim.stats().per_operation;
        for op in MUTATIONS {
            let count = |m: &std::collections::BTreeMap<String, tollgate_sim::OpStats>| {
                m.get(op).map_or(0, |s| s.received)
            };
            assert_eq!(count(&before), count(&after), "{op} on the second run");
        }
    });
}

#[test]
fn init_reports_an_aggregator_elsewhere_instead_of_moving_it() {
    paused_system().block_on(async {
        let scenario = SCENARIO.replace("type = \"local\"", "type = \"aggregator\"");
        let kit = kit_with(&scenario, PolicyTable::defaults());
        let regions = vec!["us-east-1".to_string()];
        let plan = InitPlan {
            aggregator: Some("us-east-1".into()),
        };
        let report = init(&kit.gate, &kit.sdk, &context(), &regions, &plan).await;
        let east = &report.regions[0];
        let error = east.error.as_ref().expect("refused");
        assert!(error.message.contains("eu-west-1"), "{error:?}");
        assert_eq!(east.changes, [Change::CreatedIndex]);
        let stats = kit.sim.stats().per_operation;
        assert!(!stats.contains_key("resource-explorer-2:UpdateIndexType"));
        assert!(!stats.contains_key("resource-explorer-2:CreateView"));
    });
}
