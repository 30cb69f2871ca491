//! Schedules and allowances late in `WallClock`'s range (which ends at
//! 9999-12-31T23:59:59.999Z).
//!
//! Regression (fuzz target `policy`, issue 14): an allowance read at `WallClock::MAX`
//! (a replay's `start_at`, `tollgate policies --at`) took 41 s in the fuzzer, and hours
//! for `* * * * *` in a debug build. Two causes:
//! - croner matches no date after its year 5000, so every pattern stopped matching there
//!   and the searches for the last or next fire walked millions of days;
//! - a civil minute past the range "fired" at `WallClock::MAX` (the conversion clamps),
//!   so `next_fire_after(MAX)` walked every match of the next 401 years looking for a
//!   fire after `MAX`.

use tollgate_quota::schedule::{Allowance, CronSchedule, WallClock};

fn w(text: &str) -> WallClock {
    WallClock::parse_rfc3339(text).unwrap()
}

fn cron(pattern: &str, zone: &str) -> CronSchedule {
    CronSchedule::parse(pattern, zone).unwrap()
}

#[test]
fn patterns_match_after_the_year_5000_as_they_do_400_years_earlier() {
    // 9000-03-03 and 8600-03-03 are both Fridays (400 years are whole weeks).
    let friday_noon = cron("0 12 * * FRI", "Europe/Berlin");
    for year in [2026, 5000, 5001, 8600, 9000, 9999] {
        let t = w(&format!("{year}-06-01T00:00:00Z"));
        let fire = friday_noon.next_fire_after(t).expect("fires");
        assert!(fire > t && friday_noon.matches(fire), "{year}: {fire:?}");
    }
    assert!(cron("0 0 29 2 *", "UTC").matches(w("9996-02-29T00:00:00Z")));
    assert_eq!(
        cron("0 18 * * *", "UTC").next_fire_after(w("9000-12-31T12:00:00Z")),
        Some(w("9000-12-31T18:00:00Z"))
    );
}

#[test]
fn a_fire_past_the_end_of_the_range_is_none() {
    let t = w("9999-12-31T12:00:00Z");
    // Midnight UTC after t is 10000-01-01, past the range.
    assert_eq!(cron("0 0 * * *", "UTC").next_fire_after(t), None);
    // 10000-01-01T00:00 in New York is 05:00Z, past the range too.
    assert_eq!(
        cron("0 0 * * *", "America/New_York").next_fire_after(t),
        None
    );
}

#[test]
fn fires_up_to_the_last_instant_are_kept() {
    let t = w("9999-12-31T12:00:00Z");
    // 18:00 in New York on 9999-12-31 is 23:00Z, inside the range.
    assert_eq!(
        cron("0 18 * * *", "America/New_York").next_fire_after(t),
        Some(w("9999-12-31T23:00:00Z"))
    );
    assert_eq!(
        cron("* * * * *", "UTC").next_fire_after(w("9999-12-31T23:58:30Z")),
        Some(w("9999-12-31T23:59:00Z"))
    );
}

#[test]
fn an_allowance_read_at_the_last_instant_has_its_period() {
    for zone in [
        "UTC",
        "America/New_York",
        "Asia/Tokyo",
        "Australia/Lord_Howe",
    ] {
        let every_minute = cron("* * * * *", zone);
        assert_eq!(every_minute.next_fire_after(WallClock::MAX), None, "{zone}");
        let period = Allowance::new(10, every_minute)
            .unwrap()
            .period_at(WallClock::MAX);
        assert_eq!(period.next_reset, WallClock::MAX, "{zone}");
        assert_eq!(period.start, w("9999-12-31T23:59:00Z"), "{zone}");
        let daily = Allowance::new(10, cron("0 0 * * *", zone)).unwrap();
        let period = daily.period_at(WallClock::MAX);
        assert_eq!(period.next_reset, WallClock::MAX, "{zone}");
        assert!(
            period.start > w("9999-12-30T00:00:00Z"),
            "{zone}: {period:?}"
        );
    }
}
