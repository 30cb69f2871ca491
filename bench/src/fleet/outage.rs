//! The outage figures of `bench fleet` (issue 14): when a scenario takes a service down
//! for a while, what each mode sent into the outage, what it lost, and how soon after the
//! recovery it finished.
//!
//! The outage is the scenario's first fault that answers every matching request with a
//! 5xx or a throttle (`probability` 1) and ends (`until_ms`): a fault with no end is not
//! an outage one recovers from, and a probabilistic one is weather, not an outage. The
//! simulator's clock is restarted as the mode's processes are spawned, so the fault's
//! offsets are offsets from the start of the scan.
//!
//! - **attempts during the outage**: the simulator's arrivals inside `[from, until)` that
//!   the fault answered (its operations and region), counted server-side; the arrivals
//!   to every other operation in the window are reported beside them;
//! - **items lost**: the scenario's inventory times the processes, minus the items the
//!   processes read in full;
//! - **recovery to completion**: the last process's end minus `until` (negative when a
//!   mode finished, having given the service up, before it recovered);
//! - **remaining ideal**: the time the server quotas need after the recovery, if the
//!   outage's operations could do nothing during it (`ideal`, with those
//!   operations' buckets shifted by the outage). The issue's target is to complete within
//!   10 s of the recovery plus this.

use std::time::Duration;

use serde::Serialize;
use tollgate_sim::scenario::{Fault, FaultKind};
use tollgate_sim::{Arrival, Scenario};

/// The slack the issue's target allows after the recovery, on top of the remaining ideal.
pub const TARGET_SLACK_S: f64 = 10.0;

/// The scenario's outage fault, if it has one (see the module docs).
pub fn outage(scenario: &Scenario) -> Option<&Fault> {
    scenario.faults.iter().find(|f| {
        matches!(
            f.kind,
            FaultKind::ServerError { .. } | FaultKind::Throttle { .. }
        ) && f.until.is_some()
            && f.probability >= 1.0
    })
}

/// One mode's outage figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutageFigures {
    /// Start of the outage, seconds from the start of the scan.
    pub from_s: f64,
    /// Its end (the recovery).
    pub until_s: f64,
    /// Attempts the outage's operations received inside the window.
    pub attempts_during: u64,
    /// Attempts every other operation received inside the window.
    pub attempts_during_other: u64,
    /// Items of the inventory (times the processes) not read in full.
    pub items_lost: u64,
    /// Last process's end minus the recovery, seconds.
    pub recovery_to_completion_s: f64,
    /// What the server quotas need after the recovery, seconds.
    pub remaining_ideal_s: f64,
    /// recovery_to_completion_s ≤ remaining_ideal_s + 10 s.
    pub within_target: bool,
}

/// The figures of one mode: `arrivals` from the simulator (offsets from the scan's
/// start), `items_expected` over all processes, `items_read` likewise, `completion` of
/// the last process, `remaining_ideal_s` from [`remaining_ideal`].
pub fn figures(
    fault: &Fault,
    arrivals: &[Arrival],
    items_expected: u64,
    items_read: u64,
    completion: Duration,
    remaining_ideal_s: f64,
) -> OutageFigures {
    let until = fault.until.unwrap_or(Duration::MAX);
    let (mut during, mut other) = (0, 0);
    for a in arrivals
        .iter()
        .filter(|a| a.at >= fault.from && a.at < until)
    {
        if fault.applies(&a.operation, &a.region, a.at) {
            during += 1;
        } else {
            other += 1;
        }
    }
    let recovery_to_completion_s = completion.as_secs_f64() - until.as_secs_f64();
    OutageFigures {
        from_s: fault.from.as_secs_f64(),
        until_s: until.as_secs_f64(),
        attempts_during: during,
        attempts_during_other: other,
        items_lost: items_expected.saturating_sub(items_read),
        recovery_to_completion_s,
        remaining_ideal_s,
        within_target: recovery_to_completion_s <= remaining_ideal_s + TARGET_SLACK_S,
    }
}

/// The ideal time left after the recovery for `k` discoveries: every operation's server
/// bucket needs its `ideal` seconds, and those the outage answers do nothing
/// between `from` and `until`, so their work past `from` moves to after `until`.
/// Never negative (a scan the quotas let finish before the recovery has none left).
pub fn remaining_ideal(scenario: &Scenario, k: usize, fault: &Fault) -> f64 {
    let until = fault.until.unwrap_or(Duration::MAX).as_secs_f64();
    let from = fault.from.as_secs_f64();
    crate::fleet::ideal::per_operation(scenario, k)
        .into_iter()
        .map(|(region, op, seconds)| {
            let hit = fault.applies(&op, &region, fault.from) && seconds > from;
            let end = if hit {
                until + (seconds - from)
            } else {
                seconds
            };
            (end - until).max(0.0)
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_sim::Outcome;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "inline").unwrap_or_else(|e| panic!("{e}"))
    }

    const ACCOUNT: &str = r#"
account = "123456789012"
regions = ["us-east-1"]
[quotas]
default = { rate_per_second = 1000.0, burst = 1000 }
[quotas.operations]
"kms:GetKeyLastUsage" = { rate_per_second = 2.0, burst = 1 }
"dynamodb:control-plane-read" = { rate_per_second = 10.0, burst = 5, operations = ["dynamodb:ListTables", "dynamodb:DescribeTable"] }
[[inventory.key_sets]]
count = 21
region = "us-east-1"
[[inventory.table_sets]]
count = 99
prefix = "t-"
region = "us-east-1"
"#;

    const KMS_DOWN: &str = r#"
[[faults]]
kind = "server_error"
status = 503
operations = ["kms:*"]
from_ms = 10000
until_ms = 30000
"#;

    fn arrival(at_ms: u64, operation: &str) -> Arrival {
        Arrival {
            at: Duration::from_millis(at_ms),
            operation: operation.to_string(),
            region: "us-east-1".to_string(),
            outcome: Outcome::Served,
        }
    }

    #[test]
    fn the_outage_is_the_first_certain_fault_that_ends() {
        let none = scenario(ACCOUNT);
        assert!(outage(&none).is_none());
        let endless = format!("{ACCOUNT}{}", KMS_DOWN.replace("until_ms = 30000\n", ""));
        assert!(outage(&scenario(&endless)).is_none());
        let weather = format!(
            "{ACCOUNT}{}",
            KMS_DOWN.replace("from_ms", "probability = 0.5\nfrom_ms")
        );
        assert!(outage(&scenario(&weather)).is_none());
        let held = format!(
            "{ACCOUNT}[[faults]]\nkind = \"timeout\"\nhold_ms = 100\nuntil_ms = 5000\n{KMS_DOWN}"
        );
        let s = scenario(&held);
        let fault = outage(&s).expect("the 503 fault");
        assert_eq!(fault.from, Duration::from_secs(10));
        let throttled = format!(
            "{ACCOUNT}{}",
            KMS_DOWN
                .replace("server_error", "throttle")
                .replace("status = 503\n", "")
        );
        assert!(outage(&scenario(&throttled)).is_some());
    }

    #[test]
    fn attempts_count_inside_the_window_and_on_the_outage_operations_only() {
        let s = scenario(&format!("{ACCOUNT}{KMS_DOWN}"));
        let fault = outage(&s).unwrap();
        let arrivals = [
            arrival(9_999, "kms:DescribeKey"),         // before
            arrival(10_000, "kms:DescribeKey"),        // first instant: in
            arrival(20_000, "kms:GetKeyLastUsage"),    // in
            arrival(20_000, "dynamodb:DescribeTable"), // in the window, other service
            arrival(29_999, "kms:ListKeys"),           // last instant: in
            arrival(30_000, "kms:ListKeys"),           // recovered: out
            arrival(31_000, "dynamodb:DescribeTable"), // after
        ];
        let f = figures(fault, &arrivals, 480, 470, Duration::from_secs(41), 20.0);
        assert_eq!(f.attempts_during, 3);
        assert_eq!(f.attempts_during_other, 1);
        assert_eq!(f.items_lost, 10);
        assert!((f.recovery_to_completion_s - 11.0).abs() < 1e-9);
        assert!(f.within_target);
        // 31 s after the recovery misses a target of 20 + 10 s
        let late = figures(fault, &arrivals, 480, 480, Duration::from_secs(61), 20.0);
        assert!(!late.within_target && late.items_lost == 0);
        // a mode that gave the service up and ended before the recovery
        let early = figures(fault, &arrivals, 480, 400, Duration::from_secs(25), 20.0);
        assert!((early.recovery_to_completion_s + 5.0).abs() < 1e-9);
    }

    #[test]
    fn the_outage_moves_its_operations_work_past_the_recovery() {
        let s = scenario(&format!("{ACCOUNT}{KMS_DOWN}"));
        let fault = outage(&s).unwrap();
        // 4 processes: GetKeyLastUsage (4·21 − 1) / 2 = 41.5 s, of which 10 s before the
        // outage: 31.5 s after the recovery. DynamoDB ((4·100 − 5) / 10 = 39.5 s) is not
        // hit and ends 9.5 s after the recovery, so KMS decides.
        assert!((remaining_ideal(&s, 4, fault) - 31.5).abs() < 1e-9);
        // one process: KMS (21 − 1) / 2 = 10 s is done when the outage starts; DynamoDB
        // (100 − 5) / 10 = 9.5 s too: nothing is left after the recovery
        assert_eq!(remaining_ideal(&s, 1, fault), 0.0);
        // the outage on DynamoDB instead: 39.5 − 10 = 29.5 s after the recovery
        let ddb = KMS_DOWN.replace("kms:*", "dynamodb:*");
        let s = scenario(&format!("{ACCOUNT}{ddb}"));
        assert!((remaining_ideal(&s, 4, outage(&s).unwrap()) - 29.5).abs() < 1e-9);
    }
}
