//! Property tests for scheduled policies and fire times against brute force.
//!
//! Random cron patterns (from a grammar of fields: `*`, values, ranges, steps, lists,
//! day and month names, `L`, `#`), zones (with 60- and 30-minute DST shifts, a half-hour
//! offset and UTC) and instants (anywhere in 2025-2027, or within a day and a half of a
//! 2026 transition). The reference evaluates croner's own matcher minute by minute on
//! chrono-tz's local time, independently of the schedule module's searches.

use chrono::{NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use tollgate_quota::overlay::PolicyOverlay;
use tollgate_quota::schedule::{resolve, CronSchedule, PolicySchedule, ScheduleEntry, WallClock};
use tollgate_quota::Policy;

const MINUTE: i64 = 60_000;
const DAY: i64 = 24 * 60 * MINUTE;

const ZONES: &[&str] = &[
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "UTC",
];

/// The 2026 offset transitions of the zones above that have DST.
const TRANSITIONS: &[(&str, &str)] = &[
    ("Europe/Berlin", "2026-03-29T01:00:00Z"),
    ("Europe/Berlin", "2026-10-25T01:00:00Z"),
    ("America/New_York", "2026-03-08T07:00:00Z"),
    ("America/New_York", "2026-11-01T06:00:00Z"),
    ("Australia/Lord_Howe", "2026-04-04T15:00:00Z"),
    ("Australia/Lord_Howe", "2026-10-03T15:30:00Z"),
];

fn millis(text: &str) -> i64 {
    WallClock::parse_rfc3339(text).unwrap().unix_millis()
}

fn atom(min: u32, max: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (min..=max).prop_map(|v| v.to_string()),
        3 => (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => (min..=max, min..=max, 2..=7u32)
            .prop_map(|(a, b, s)| format!("{}-{}/{s}", a.min(b), a.max(b))),
    ]
}

/// One field; `star` weighs `*` against 11 for the other shapes (date fields lean on `*`
/// so that patterns often match on the nights of the transitions).
fn field(
    min: u32,
    max: u32,
    star: u32,
    extra: &'static [&'static str],
) -> impl Strategy<Value = String> {
    let extras: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    prop_oneof![
        star => Just("*".to_owned()),
        1 => (2..=((max - min) / 2).max(2)).prop_map(|s| format!("*/{s}")),
        4 => prop::collection::vec(atom(min, max), 1..=3).prop_map(|v| v.join(",")),
        4 => prop::sample::select(extras),
    ]
}

fn pattern() -> impl Strategy<Value = String> {
    (
        field(0, 59, 3, &["0-29", "30-59", "*/30", "15", "45", "59", "0"]),
        field(0, 23, 3, &["1-3", "2", "1", "3", "0-2", "2-4", "9-17"]),
        field(1, 31, 22, &["L", "1-7", "15"]),
        field(1, 12, 22, &["JAN-MAR", "MAR,OCT,NOV", "APR", "DEC"]),
        field(
            0,
            7,
            22,
            &["MON-FRI", "SAT,SUN", "SUN", "5#2", "0L", "+MON"],
        ),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"))
}

/// A zone and an instant: mostly within a day and a half of one of that zone's 2026
/// transitions, otherwise any zone anywhere in 2025-2027.
fn zoned_instant() -> impl Strategy<Value = (&'static str, i64)> {
    let near = (
        prop::sample::select(TRANSITIONS),
        -36 * 60 * MINUTE..36 * 60 * MINUTE,
    )
        .prop_map(|((zone, t), d)| (zone, millis(t) + d));
    let anywhere = (
        prop::sample::select(ZONES),
        millis("2025-01-01T00:00:00Z")..millis("2028-01-01T00:00:00Z"),
    );
    prop_oneof![3 => near, 2 => anywhere]
}

fn reference(pattern: &str) -> Cron {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(pattern)
        .unwrap()
}

/// Brute force: does the minute starting at `m` (UTC ms, whole minute) match in `zone`?
fn brute_matches(cron: &Cron, zone: Tz, m: i64) -> bool {
    cron.is_time_matching(&zone.timestamp_millis_opt(m).unwrap())
        .unwrap()
}

fn local(zone: Tz, m: i64) -> NaiveDateTime {
    zone.timestamp_millis_opt(m).unwrap().naive_local()
}

fn schedule_or_skip(pattern: &str, zone: &str) -> Result<CronSchedule, TestCaseError> {
    let parsed = CronSchedule::parse(pattern, zone);
    prop_assume!(parsed.is_ok(), "refused: {}", pattern);
    Ok(parsed.unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// The effective policy is the base overlaid by the first entry whose brute-force
    /// match holds at t's minute; valid_until is exact: no entry's match changes at any
    /// minute strictly before it, and one does change at it unless it is the cap.
    #[test]
    fn the_effective_policy_and_its_valid_until_equal_a_minute_by_minute_evaluation(
        (zone, t) in zoned_instant(),
        entries in prop::collection::vec((pattern(), prop::option::weighted(0.3, prop::sample::select(ZONES))), 1..=3),
        cap_minutes in prop_oneof![1 => 1i64..120, 3 => 1i64..(8 * 24 * 60)],
        cap_extra in 0i64..MINUTE,
    ) {
        let base = Policy::new(100.0, 50.0, 10, 20).unwrap();
        let mut typed = Vec::new();
        let mut brute = Vec::new();
        for (index, (pattern, other_zone)) in entries.iter().enumerate() {
            let zone = other_zone.unwrap_or(zone);
            typed.push(ScheduleEntry {
                cron: schedule_or_skip(pattern, zone)?,
                overlay: PolicyOverlay::new(Some(index as f64 + 1.0), None, None, None).unwrap(),
            });
            brute.push((reference(pattern), zone.parse::<Tz>().unwrap()));
        }
        let schedule = PolicySchedule::new(typed).unwrap();
        let cap = t + cap_minutes * MINUTE + cap_extra;
        let state = |m: i64| -> Vec<bool> {
            brute.iter().map(|(cron, zone)| brute_matches(cron, *zone, m)).collect()
        };
        let at = WallClock::from_unix_millis(t).unwrap();
        let r = resolve(&base, &schedule, at, WallClock::from_unix_millis(cap).unwrap());

        let minute = t - t.rem_euclid(MINUTE);
        let s0 = state(minute);
        let first = s0.iter().position(|&b| b);
        prop_assert_eq!(r.entry, first, "entry at {}", at);
        let want = first.map_or(base, |i| {
            PolicyOverlay::new(Some(i as f64 + 1.0), None, None, None).unwrap().apply(&base).unwrap()
        });
        prop_assert_eq!(r.policy, want);

        let until = r.valid_until.unix_millis();
        prop_assert!(until > t && until <= cap, "valid_until {} outside ({}, {}]", r.valid_until, at, cap);
        let mut m = minute + MINUTE;
        while m < until {
            prop_assert_eq!(state(m), s0.clone(), "a match changes at {} before valid_until {}",
                WallClock::from_unix_millis(m).unwrap(), r.valid_until);
            m += MINUTE;
        }
        if until < cap {
            prop_assert_eq!(until.rem_euclid(MINUTE), 0, "valid_until {} is not a minute", r.valid_until);
            prop_assert_ne!(state(until), s0, "nothing changes at valid_until {}", r.valid_until);
        }
    }

    /// next_fire_after(t) is the first instant after t at which, minute by minute, civil
    /// time moves past every civil minute seen so far (a repeated minute fires once)
    /// onto or over a matching one (skipped matching minutes fire at the jump).
    #[test]
    fn the_next_fire_equals_a_minute_by_minute_walk_of_civil_time(
        pattern in pattern(),
        (zone, t) in zoned_instant(),
    ) {
        let schedule = schedule_or_skip(&pattern, zone)?;
        let cron = reference(&pattern);
        let tz: Tz = zone.parse().unwrap();
        let civil_matches = |c: NaiveDateTime| cron.is_time_matching(&c).unwrap();

        let horizon = t + 10 * DAY;
        let start = t - t.rem_euclid(MINUTE) - 2 * DAY;
        let mut seen = local(tz, start);
        let mut expected = None;
        let mut m = start + MINUTE;
        while m <= horizon {
            let civil = local(tz, m);
            if civil > seen {
                let mut skipped = seen + chrono::Duration::minutes(1);
                let mut fires = civil_matches(civil);
                while !fires && skipped < civil {
                    fires = civil_matches(skipped);
                    skipped += chrono::Duration::minutes(1);
                }
                seen = civil;
                if fires && m > t {
                    expected = Some(m);
                    break;
                }
            }
            m += MINUTE;
        }
        let at = WallClock::from_unix_millis(t).unwrap();
        let got = schedule.next_fire_after(at).map(|f| f.unix_millis());
        match expected {
            Some(e) => prop_assert_eq!(got, Some(e), "after {}", at),
            None => prop_assert!(got.is_none_or(|g| g > horizon), "after {}: {:?}", at, got),
        }
        // The last fire at or before t is a fire, and the next one after it is past t.
        if let Some(last) = schedule.last_fire_at_or_before(at) {
            prop_assert!(last <= at);
            prop_assert_eq!(schedule.next_fire_after(last.saturating_sub(std::time::Duration::from_millis(1))), Some(last));
            prop_assert!(schedule.next_fire_after(last).is_none_or(|n| n > at));
        }
    }
}
