//! Table tests of the calendar on the item: blocks placed by `take_block` for hosts that
//! declare allowances and schedules.

use std::time::Duration;

use crate::fleet::declaration::{Declaration, Declared};
use crate::fleet::item::FleetItem;
use crate::fleet::take::{take_block, BlockGrant, BlockRequest};
use crate::overrides::PolicyTable;
use crate::schedule::WallClock;
use crate::time::Timestamp;

fn wall(text: &str) -> WallClock {
    WallClock::parse_rfc3339(text).unwrap()
}

/// The instant of `text` on a clock counting from the Unix epoch.
fn at(text: &str) -> Timestamp {
    wall(text).to_timestamp(WallClock::UNIX_EPOCH)
}

fn declared(json: &str) -> Declared {
    let name = "kms:ListKeys".parse().unwrap();
    let t = PolicyTable::with_overrides(json, "test").unwrap();
    Declared {
        declaration: Declaration::new(
            t.policy_for_name(&name),
            t.read_time_for_name(&name).cloned(),
        ),
        anchor: WallClock::UNIX_EPOCH,
    }
}

fn request(host: &str, wanted: u64, declared: &Declared) -> BlockRequest {
    let p = declared.declaration.policy();
    BlockRequest {
        host: host.into(),
        wanted,
        rate: p.rate_per_second(),
        burst: p.burst(),
        retry_capacity: p.retry_capacity(),
        throttled: false,
        retry_want: 0,
        retry_refund: 0,
        horizon: Duration::from_secs(2),
        round_trip: Duration::ZERO,
        declared: Some(declared.clone()),
        item_sizing: None,
    }
}

const ALLOWANCE: &str = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
    "allowance": {"amount": 50, "resets": "* * * * *", "timezone": "UTC"}}}"#;

/// Hosts take blocks of `wanted` in turn every `step` from `from` for `span`.
fn run(
    hosts: &[(&str, &Declared)],
    wanted: u64,
    from: Timestamp,
    span: Duration,
    step: Duration,
) -> (Option<FleetItem>, Vec<BlockGrant>) {
    let mut item: Option<FleetItem> = None;
    let mut grants = Vec::new();
    let mut now = from;
    let mut i = 0;
    while now < from + span {
        let (host, d) = hosts[i % hosts.len()];
        let (next, grant) = take_block(item.as_ref(), &request(host, wanted, d), now);
        if let (Some(before), Some(after)) = (
            item.as_ref().and_then(|i| i.calendar.as_ref()?.allowance),
            next.calendar.as_ref().and_then(|c| c.allowance),
        ) {
            assert!(
                after.consumed_total() >= before.consumed_total(),
                "the total consumed never goes down"
            );
            assert!(after.baseline() >= before.baseline(), "nor the baseline");
        }
        item = Some(next);
        grants.push(grant);
        now = now + step;
        i += 1;
    }
    (item, grants)
}

#[test]
fn an_allowance_admits_at_most_its_amount_per_period_across_hosts_each_token_inside_its_period() {
    let d = declared(ALLOWANCE);
    let hosts = [("a", &d), ("b", &d), ("c", &d)];
    let from = at("2026-01-05T10:00:30Z");
    let (item, grants) = run(
        &hosts,
        7,
        from,
        Duration::from_secs(200),
        Duration::from_millis(150),
    );
    let mut per_minute = std::collections::BTreeMap::<u64, u64>::new();
    for g in grants.iter().filter(|g| g.run.count > 0) {
        for j in 0..g.run.count {
            // Spent anywhere in its window, a token stays in the minute it was charged to.
            let (opens, closes) = (g.run.opens(j), g.run.closes(j));
            let minute = opens.as_micros() / 60_000_000;
            assert_eq!(
                minute,
                closes.as_micros() / 60_000_000,
                "token {j} of {g:?}"
            );
            *per_minute.entry(minute).or_default() += 1;
        }
    }
    assert!(per_minute.len() >= 3, "{per_minute:?}");
    for (minute, n) in &per_minute {
        assert!(*n <= 50, "minute {minute}: {n} tokens");
    }
    // Busy hosts use whole periods after the first (which began before the run).
    let full: Vec<_> = per_minute.values().skip(1).take(2).collect();
    assert_eq!(full, [&50, &50], "{per_minute:?}");
    let counter = item.unwrap().calendar.unwrap().allowance.unwrap();
    assert_eq!(
        counter.consumed_total(),
        per_minute.values().sum::<u64>(),
        "every token granted is charged, none given back"
    );
}

#[test]
fn the_next_period_starts_at_the_reset_instant() {
    let d = declared(ALLOWANCE);
    let from = at("2026-01-05T10:00:20Z");
    // Spend the period, then ask just before the reset.
    let (item, _) = take_block(None, &request("a", 50, &d), from);
    let (item, refused) = take_block(Some(&item), &request("b", 5, &d), from);
    assert_eq!(refused.run.count, 0, "nothing left this period");
    let reset = at("2026-01-05T10:01:00Z");
    let ask = refused.next_at.expect("when to ask");
    assert!(ask < reset && ask >= from, "asks before the reset: {ask:?}");
    let (_, g) = take_block(Some(&item), &request("b", 5, &d), ask);
    assert_eq!(g.run.count, 5);
    assert_eq!(
        g.run.opens(0),
        reset,
        "the first token of the period opens at the reset"
    );
    assert_eq!(g.allowance.as_ref().unwrap().remaining, 45);
}

const BERLIN: &str = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
    "schedule": [{"cron": "* 17-23 * * *", "timezone": "Europe/Berlin", "ratePerSecond": 2, "burst": 1}]}}"#;

#[test]
fn a_block_never_straddles_a_lowered_rate_at_a_berlin_boundary() {
    let d = declared(BERLIN);
    let hosts = [("a", &d), ("b", &d), ("c", &d)];
    // 17:00 in Berlin is 16:00Z in winter.
    let boundary = at("2026-01-05T16:00:00Z");
    let from = boundary.saturating_sub(Duration::from_secs(5));
    let (_, grants) = run(
        &hosts,
        12,
        from,
        Duration::from_secs(15),
        Duration::from_millis(200),
    );
    let mut after = Vec::new();
    for g in grants.iter().filter(|g| g.run.count > 0) {
        for j in 0..g.run.count {
            if g.run.due(j) < boundary {
                assert!(g.run.closes(j) < boundary, "an old token closes before it");
                assert_eq!(g.run.spacing, Duration::from_millis(50));
            } else {
                assert!(
                    g.run.opens(j) >= boundary,
                    "a new token opens at it or later"
                );
                after.push(g.run.due(j));
            }
        }
    }
    after.sort();
    assert!(after.len() >= 15, "{}", after.len());
    for w in after.windows(2) {
        assert!(
            w[1].saturating_since(w[0]) >= Duration::from_millis(500),
            "2/s from 17:00"
        );
    }
}

#[test]
fn the_strictest_host_sets_the_rate_and_the_others_see_who_differs() {
    let loose = declared(r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5}}"#);
    let strict = declared(
        r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
            "schedule": [{"cron": "* * * * *", "timezone": "UTC", "ratePerSecond": 4, "burst": 2}]}}"#,
    );
    let now = at("2026-01-05T10:00:00Z");
    let (item, _) = take_block(None, &request("strict", 1, &strict), now);
    let (item, g) = take_block(Some(&item), &request("loose", 4, &loose), now);
    assert_eq!(
        (g.rate, g.burst),
        (4.0, 2.0),
        "the loose host is held to the schedule"
    );
    assert_eq!(g.run.spacing, Duration::from_millis(250));
    assert_eq!(g.disagreeing, vec!["strict".to_string()]);
    // Once the strict host is no longer seen, the loose one's policy is in force.
    let later = now + Duration::from_secs(61);
    let (_, g) = take_block(Some(&item), &request("loose", 4, &loose), later);
    assert_eq!((g.rate, g.run.spacing), (20.0, Duration::from_millis(50)));
    assert!(g.disagreeing.is_empty());
}

#[test]
fn an_unscheduled_key_gains_no_calendar() {
    let plain = declared(r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5}}"#);
    let (item, _) = take_block(None, &request("a", 3, &plain), at("2026-01-05T10:00:00Z"));
    assert_eq!(item.calendar, None);
}
