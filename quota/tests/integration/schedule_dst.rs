//! DST table tests for cron schedules: the spring-forward and fall-back nights of 2026 in
//! Europe/Berlin and America/New_York, and Australia/Lord_Howe, whose clocks move by 30
//! minutes. Instants are UTC; the comments give local time.

use tollgate_quota::schedule::{CronSchedule, WallClock};

fn w(text: &str) -> WallClock {
    WallClock::parse_rfc3339(text).unwrap()
}

fn day_after(t: WallClock) -> WallClock {
    t.saturating_add(std::time::Duration::from_secs(86_400))
}

/// (zone, pattern, after, expected next fire)
#[rustfmt::skip]
const NEXT_FIRE: &[(&str, &str, &str, &str)] = &[
    // Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z.
    ("Europe/Berlin", "30 2 * * *", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z"), // skipped: fires at the gap's end
    ("Europe/Berlin", "0,30 2 * * *", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z"),
    ("Europe/Berlin", "0,30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"), // both skipped minutes fired once
    ("Europe/Berlin", "0 3 * * *", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z"),
    ("Europe/Berlin", "*/15 * * * *", "2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z"), // 01:45 CET → 03:00 CEST
    ("Europe/Berlin", "*/15 * * * *", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"),
    ("Europe/Berlin", "0 1 * * *", "2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z"),
    // Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z; 02:00-02:59 happens twice.
    ("Europe/Berlin", "30 2 * * *", "2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"), // first pass
    ("Europe/Berlin", "30 2 * * *", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"), // not again in the second pass
    ("Europe/Berlin", "*/20 * * * *", "2026-10-25T00:50:00Z", "2026-10-25T02:00:00Z"), // 02:00-02:40 CET already fired
    ("Europe/Berlin", "0 3 * * *", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"),
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z.
    ("America/New_York", "30 2 * * *", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"),
    ("America/New_York", "30 2 * * *", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"),
    ("America/New_York", "0 0 * * *", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"),
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00Z; 01:00-01:59 twice.
    ("America/New_York", "30 1 * * *", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z"),
    ("America/New_York", "30 1 * * *", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"),
    ("America/New_York", "30 1 * * *", "2026-11-01T06:10:00Z", "2026-11-02T06:30:00Z"), // inside the second pass
    ("America/New_York", "0 2 * * *", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"),
    // Lord Howe, 2026-10-04: 02:00 (+10:30) becomes 02:30 (+11) at 15:30Z the day before.
    ("Australia/Lord_Howe", "15 2 * * *", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z"),
    ("Australia/Lord_Howe", "45 2 * * *", "2026-10-03T15:00:00Z", "2026-10-03T15:45:00Z"),
    // Lord Howe, 2026-04-05: 02:00 (+11) becomes 01:30 (+10:30) at 15:00Z; 01:30-01:59 twice.
    ("Australia/Lord_Howe", "45 1 * * *", "2026-04-04T14:00:00Z", "2026-04-04T14:45:00Z"),
    ("Australia/Lord_Howe", "45 1 * * *", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"),
    ("Australia/Lord_Howe", "0 2 * * *", "2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"),
];

#[test]
fn a_skipped_time_fires_at_the_end_of_the_gap_and_a_repeated_time_fires_once() {
    for &(zone, pattern, after, want) in NEXT_FIRE {
        let s = CronSchedule::parse(pattern, zone).unwrap();
        assert_eq!(
            s.next_fire_after(w(after)).map(|t| t.to_string()),
            Some(w(want).to_string()),
            "{zone} {pattern:?} after {after}"
        );
        // The fire just found is the last one at or before itself.
        assert_eq!(
            s.last_fire_at_or_before(w(want)),
            Some(w(want)),
            "{zone} {pattern:?}"
        );
    }
}

/// (zone, pattern, instant, matches)
#[rustfmt::skip]
const MATCHES: &[(&str, &str, &str, bool)] = &[
    ("Europe/Berlin", "* 2 * * *", "2026-03-29T00:59:59Z", false), // 01:59 CET
    ("Europe/Berlin", "* 2 * * *", "2026-03-29T01:00:00Z", false), // 03:00 CEST: 02:xx never happens
    ("Europe/Berlin", "* 3 * * *", "2026-03-29T01:00:00Z", true),
    ("Europe/Berlin", "* 2 * * *", "2026-10-25T00:30:00Z", true),  // 02:30 CEST
    ("Europe/Berlin", "* 2 * * *", "2026-10-25T01:30:00Z", true),  // 02:30 CET, the second pass
    ("Europe/Berlin", "* 2 * * *", "2026-10-25T02:00:00Z", false), // 03:00 CET
    ("America/New_York", "* 2 * * *", "2026-03-08T06:59:00Z", false), // 01:59 EST
    ("America/New_York", "* 3 * * *", "2026-03-08T07:00:00Z", true),  // 03:00 EDT
    ("America/New_York", "* 1 * * *", "2026-11-01T05:30:00Z", true),  // 01:30 EDT
    ("America/New_York", "* 1 * * *", "2026-11-01T06:30:00Z", true),  // 01:30 EST
    ("America/New_York", "* 1 * * *", "2026-11-01T07:00:00Z", false), // 02:00 EST
    ("Australia/Lord_Howe", "0-29 2 * * *", "2026-10-03T15:29:59Z", false), // 01:59 +10:30
    ("Australia/Lord_Howe", "30-59 2 * * *", "2026-10-03T15:30:00Z", true), // 02:30 +11
    ("Australia/Lord_Howe", "30-59 1 * * *", "2026-04-04T14:45:00Z", true), // 01:45 +11
    ("Australia/Lord_Howe", "30-59 1 * * *", "2026-04-04T15:00:00Z", true), // 01:30 +10:30
    ("Asia/Kolkata", "30 9 * * *", "2026-01-05T04:00:00Z", true), // 09:30 +05:30
];

#[test]
fn matching_reads_the_civil_minute_of_the_instant_in_the_zone() {
    for &(zone, pattern, at, want) in MATCHES {
        let s = CronSchedule::parse(pattern, zone).unwrap();
        assert_eq!(s.matches(w(at)), want, "{zone} {pattern:?} at {at}");
    }
}

/// (zone, pattern, after, expected next change within a day)
#[rustfmt::skip]
const NEXT_CHANGE: &[(&str, &str, &str, &str)] = &[
    // The 02:xx hour does not exist on the spring-forward night: the next change is the
    // next night's 02:00.
    ("Europe/Berlin", "* 2 * * *", "2026-03-28T12:00:00Z", "2026-03-30T00:00:00Z"),
    // Matching through both passes of the repeated hour, until 03:00 CET.
    ("Europe/Berlin", "* 2 * * *", "2026-10-25T00:10:00Z", "2026-10-25T02:00:00Z"),
    // At 01:30 CEST: the clock goes from 02:59:59 CEST back to 02:00 CET, so 03:xx is
    // first shown at 03:00 CET.
    ("Europe/Berlin", "* 3 * * *", "2026-10-24T23:30:00Z", "2026-10-25T02:00:00Z"),
    ("America/New_York", "* 1 * * *", "2026-11-01T05:10:00Z", "2026-11-01T07:00:00Z"),
    ("America/New_York", "* 2 * * *", "2026-03-08T06:30:00Z", "2026-03-09T06:00:00Z"),
    // A change that happens at the transition: 01:59 EDT → 01:00 EST does not change
    // "* 1 * * *", but 01:59 EDT → 01:00 EST does change "59 1 * * *".
    ("America/New_York", "59 1 * * *", "2026-11-01T05:59:00Z", "2026-11-01T06:00:00Z"),
    ("Australia/Lord_Howe", "0-29 2 * * *", "2026-10-03T14:00:00Z", "2026-10-04T15:00:00Z"),
    ("Australia/Lord_Howe", "30-59 1 * * *", "2026-04-04T14:31:00Z", "2026-04-04T15:30:00Z"),
    // Business hours: Friday 17:00 CET until Monday 09:00 CET.
    ("Europe/Berlin", "* 9-16 * * MON-FRI", "2026-01-09T16:00:00Z", "2026-01-12T08:00:00Z"),
];

#[test]
fn the_next_change_crosses_transitions_exactly() {
    for &(zone, pattern, after, want) in NEXT_CHANGE {
        let s = CronSchedule::parse(pattern, zone).unwrap();
        let t = w(after);
        let cap = day_after(day_after(day_after(t)));
        assert_eq!(
            s.next_change_after(t, cap).to_string(),
            w(want).to_string(),
            "{zone} {pattern:?} after {after}"
        );
    }
}

#[test]
fn a_pattern_that_does_not_change_before_the_cap_returns_the_cap() {
    let s = CronSchedule::parse("* * * * *", "Europe/Berlin").unwrap();
    let t = w("2026-10-24T12:00:00Z");
    assert_eq!(s.next_change_after(t, day_after(t)), day_after(t));
    let yearly = CronSchedule::parse("0 0 1 1 *", "America/New_York").unwrap();
    assert_eq!(yearly.next_change_after(t, day_after(t)), day_after(t));
    // A cap not after t still moves forward.
    assert_eq!(
        s.next_change_after(t, t),
        t.saturating_add(std::time::Duration::from_millis(1))
    );
}
