//! How CloudWatch rounds a GetMetricData `StartTime` down before it reads datapoints.
//!
//! Rounding down moves the start earlier, so it can add a leading bucket; a bound that
//! ignored it could under-reserve. The rule, from the GetMetricData contract (and issue
//! 22, which restates it):
//!
//! - a period under 60 s rounds to its own divisions of a minute (a multiple of 1, 5,
//!   10 or 30 s, which are the multiples of the period since the epoch);
//! - otherwise the start's age at the attempt decides: under 15 days to the minute,
//!   15 to 63 days to 5 minutes, older than 63 days to the hour.
//!
//! # The boundaries
//! AWS's wording is "less than 15 days ago", "between 15 and 63 days ago" and "greater
//! than 63 days ago"; seed 000 gives no figures of its own ("the calculation includes
//! AWS StartTime rounding"). So exactly 15 days rounds to 5 minutes (not "less than 15"),
//! and exactly 63 days still rounds to 5 minutes (not "greater than 63"). A start in the
//! future has a negative age and rounds to the minute.
//!
//! The age is taken at the attempt instant the caller passes, which is a little before
//! AWS receives the request. Within that sliver before a boundary AWS may round more
//! coarsely than this module does; the bound is exact for the instant it is given.
//!
//! UTC has no offset, so "clock intervals" of 5 minutes or an hour are multiples since
//! the Unix epoch, and every rounding here is a floor to a multiple.

use std::time::Duration;

use super::query::Period;
use crate::schedule::WallClock;

/// Starts younger than this round to the minute (for periods of a minute or more).
pub const MINUTE_ROUNDING_BELOW: Duration = Duration::from_secs(15 * 86_400);
/// Starts older than this round to the hour; from [`MINUTE_ROUNDING_BELOW`] up to and
/// including this age, to 5 minutes.
pub const HOUR_ROUNDING_ABOVE: Duration = Duration::from_secs(63 * 86_400);

/// The unit a `StartTime` is rounded down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRounding {
    /// A multiple of the (sub-minute) period.
    Period(Period),
    /// The whole minute.
    Minute,
    /// The 5-minute clock interval.
    FiveMinutes,
    /// The whole hour.
    Hour,
}

impl StartRounding {
    /// The rounding CloudWatch applies to `start` at `period`, asked at `at`.
    pub fn of(start: WallClock, period: Period, at: WallClock) -> StartRounding {
        if period.is_sub_minute() {
            return StartRounding::Period(period);
        }
        let age_ms = at.unix_millis() - start.unix_millis(); // both within 0..=WallClock::MAX
        if age_ms < millis(MINUTE_ROUNDING_BELOW) {
            StartRounding::Minute
        } else if age_ms <= millis(HOUR_ROUNDING_ABOVE) {
            StartRounding::FiveMinutes
        } else {
            StartRounding::Hour
        }
    }

    /// The unit in milliseconds.
    pub fn unit_ms(self) -> u64 {
        match self {
            StartRounding::Period(p) => p.millis(),
            StartRounding::Minute => 60_000,
            StartRounding::FiveMinutes => 300_000,
            StartRounding::Hour => 3_600_000,
        }
    }

    /// `start` rounded down to this unit.
    pub fn apply(self, start: WallClock) -> WallClock {
        let ms = start.unix_millis().unsigned_abs(); // a WallClock is never negative
        let unit = self.unit_ms();
        let floored = ms - ms % unit;
        // A floor of an in-range instant stays in range.
        WallClock::from_unix_millis(floored as i64).unwrap_or(WallClock::UNIX_EPOCH)
    }
}

/// `start` rounded down as CloudWatch does for `period`, asked at `at`.
pub fn rounded_start(start: WallClock, period: Period, at: WallClock) -> WallClock {
    StartRounding::of(start, period, at).apply(start)
}

fn millis(d: Duration) -> i64 {
    d.as_millis() as i64 // both constants are a few billion milliseconds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    const DAY_MS: i64 = 86_400_000;

    fn aged(start: WallClock, age_ms: i64) -> WallClock {
        WallClock::from_unix_millis(start.unix_millis() + age_ms).unwrap()
    }

    #[test]
    fn the_age_picks_minute_five_minutes_or_hour_with_aws_boundaries() {
        let start = w("2026-01-05T12:32:34.500Z");
        let minute = Period::new(60).unwrap();
        let cases: &[(i64, StartRounding, &str)] = &[
            (-DAY_MS, StartRounding::Minute, "2026-01-05T12:32:00.000Z"),
            (0, StartRounding::Minute, "2026-01-05T12:32:00.000Z"),
            (
                15 * DAY_MS - 1,
                StartRounding::Minute,
                "2026-01-05T12:32:00.000Z",
            ),
            (
                15 * DAY_MS,
                StartRounding::FiveMinutes,
                "2026-01-05T12:30:00.000Z",
            ),
            (
                63 * DAY_MS,
                StartRounding::FiveMinutes,
                "2026-01-05T12:30:00.000Z",
            ),
            (
                63 * DAY_MS + 1,
                StartRounding::Hour,
                "2026-01-05T12:00:00.000Z",
            ),
            (
                400 * DAY_MS,
                StartRounding::Hour,
                "2026-01-05T12:00:00.000Z",
            ),
        ];
        for &(age, rounding, rounded) in cases {
            let at = WallClock::from_unix_millis(start.unix_millis() + age).unwrap();
            assert_eq!(StartRounding::of(start, minute, at), rounding, "age {age}");
            assert_eq!(rounded_start(start, minute, at), w(rounded), "age {age}");
        }
    }

    #[test]
    fn sub_minute_periods_round_to_their_divisions_of_a_minute_at_any_age() {
        // Sub-second digits go too, even at a 1-second period.
        let start = w("2026-01-05T01:05:23.250Z");
        for age in [0, 20 * DAY_MS, 100 * DAY_MS] {
            let at = aged(start, age);
            let r = |s| rounded_start(start, Period::new(s).unwrap(), at);
            assert_eq!(r(1), w("2026-01-05T01:05:23Z"));
            assert_eq!(r(5), w("2026-01-05T01:05:20Z"));
            assert_eq!(r(10), w("2026-01-05T01:05:20Z"));
            assert_eq!(r(30), w("2026-01-05T01:05:00Z"));
        }
    }

    #[test]
    fn an_aligned_start_is_left_alone() {
        let start = w("2026-01-05T00:00:00Z");
        let at = aged(start, 100 * DAY_MS);
        assert_eq!(rounded_start(start, Period::new(300).unwrap(), at), start);
        assert_eq!(
            rounded_start(WallClock::UNIX_EPOCH, Period::new(1).unwrap(), at),
            WallClock::UNIX_EPOCH
        );
    }
}
