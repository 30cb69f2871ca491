//! The ideal completion time of `bench fleet`: the shortest time the server's quotas
//! allow for K discoveries of a scenario, to compare each mode's completion with.
//!
//! The server keeps one token bucket per (region, bucket), operations of a group sharing
//! one (see `tollgate_sim::Scenario::quota_bucket`). Each bucket must serve K times the
//! calls one discovery makes against it; starting full, that takes
//! `(K·calls − burst) / (rate · (1 − background_share))` (another client's steady share
//! of the rate, when the scenario has one, is not available). The buckets drain in
//! parallel, so the slowest one decides. The figure ignores latency and dependencies
//! between calls (a bucket's reads cannot start before its listing), so real runs are
//! above it by those.

use std::collections::BTreeMap;

use tollgate_sim::Scenario;

/// The ideal, in seconds, for `k` discoveries of `scenario`.
pub fn ideal_seconds(scenario: &Scenario, k: usize) -> f64 {
    per_operation(scenario, k)
        .into_iter()
        .map(|(_, _, seconds)| seconds)
        .fold(0.0, f64::max)
}

/// `(region, operation, seconds)`: how long the server bucket of each operation a
/// discovery calls needs to serve `k` discoveries' calls against it.
pub fn per_operation(scenario: &Scenario, k: usize) -> Vec<(String, String, f64)> {
    let share_left = 1.0 - scenario.quotas.background_share;
    let mut out = Vec::new();
    for (region, calls) in scenario.expected_calls_by_region() {
        let mut per_bucket: BTreeMap<&str, u64> = BTreeMap::new();
        for (op, n) in &calls {
            *per_bucket.entry(scenario.quota_bucket(op)).or_default() += n;
        }
        for op in calls.keys() {
            let (rate, burst) = scenario.server_quota(op);
            let total = per_bucket[scenario.quota_bucket(op)] as f64 * k as f64;
            let seconds = (total - f64::from(burst)).max(0.0) / (rate * share_left);
            out.push((region.clone(), op.clone(), seconds));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "inline").unwrap_or_else(|e| panic!("{e}"))
    }

    const ONE_REGION: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }
[quotas.operations]
"dynamodb:control-plane-read" = { rate_per_second = 10.0, burst = 5, operations = ["dynamodb:ListTables", "dynamodb:DescribeTable"] }
"kms:DescribeKey" = { rate_per_second = 2.0, burst = 1 }
[[inventory.table_sets]]
count = 99
prefix = "t-"
region = "us-east-1"
[[inventory.key_sets]]
count = 20
region = "us-east-1"
"#;

    #[test]
    fn the_slowest_bucket_decides_and_grouped_operations_share_one() {
        let s = scenario(ONE_REGION);
        // DynamoDB: 1 listing + 99 descriptions share one bucket: (4·100 − 5) / 10 = 39.5 s;
        // KMS DescribeKey: (4·20 − 1) / 2 = 39.5 s as well
        assert!((ideal_seconds(&s, 4) - 39.5).abs() < 1e-9);
        // with one process: DynamoDB (100 − 5) / 10 = 9.5 s, KMS (20 − 1) / 2 = 9.5 s
        assert!((ideal_seconds(&s, 1) - 9.5).abs() < 1e-9);
        // a burst that holds everything: 0
        let roomy = ONE_REGION.replace("burst = 5,", "burst = 1000,");
        let roomy = roomy.replace(
            "rate_per_second = 2.0, burst = 1",
            "rate_per_second = 2.0, burst = 100",
        );
        assert_eq!(ideal_seconds(&scenario(&roomy), 1), 0.0);
    }

    #[test]
    fn regions_have_buckets_of_their_own() {
        // The same 99 tables, split 66 / 33 across two regions: each region's bucket
        // serves its own (4·67 − 5) / 10 = 26.3 s and (4·34 − 5) / 10 = 13.1 s; the
        // ideal is the larger, not the 39.5 s of one summed bucket.
        let s = scenario(
            r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1"]
[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }
[quotas.operations]
"dynamodb:control-plane-read" = { rate_per_second = 10.0, burst = 5, operations = ["dynamodb:ListTables", "dynamodb:DescribeTable"] }
[[inventory.table_sets]]
count = 66
prefix = "t-"
region = "us-east-1"
[[inventory.table_sets]]
count = 33
prefix = "e-"
region = "eu-west-1"
"#,
        );
        assert!(
            (ideal_seconds(&s, 4) - 26.3).abs() < 1e-9,
            "{}",
            ideal_seconds(&s, 4)
        );
    }

    #[test]
    fn background_traffic_leaves_less_of_the_rate() {
        let shared = ONE_REGION.replace("[quotas]\n", "[quotas]\nbackground_share = 0.5\n");
        // half the rate: twice the time
        assert!((ideal_seconds(&scenario(&shared), 4) - 79.0).abs() < 1e-9);
    }
}
