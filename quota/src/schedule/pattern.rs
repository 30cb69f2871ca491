//! A parsed 5-field cron pattern, matched against civil (wall-clock) minutes.
//!
//! croner parses the pattern (its syntax: lists, ranges, steps, `MON-FRI`, `JAN-DEC`,
//! `L`, `W`, `#`, `?`, a `+` for day-of-month AND day-of-week, `@daily` and friends) and
//! decides whether a date matches (day-of-month/day-of-week rules are subtle). The
//! searches here are ours: the minute, hour and month fields are copied into bit masks
//! once, so a search skips whole months, days and hours instead of stepping minute by
//! minute, and the time-zone handling above this file works on civil minutes only.
//!
//! Everything here is civil time: no zone, no instants.

use chrono::{Datelike, Duration as ChronoDuration, NaiveDate, NaiveDateTime, Timelike};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use super::error::{CronField, ScheduleError};

const MINUTES: u64 = (1 << 60) - 1;

/// How far a search for the next matching date may look. Date rules repeat with the
/// 400-year Gregorian cycle (146,097 days, a whole number of weeks), so a pattern that
/// matches no date in 401 years matches none ever.
pub(crate) const DATE_HORIZON_YEARS: i32 = 401;

#[derive(Debug, Clone)]
pub(crate) struct CivilPattern {
    cron: Cron,
    minutes: u64,
    hours: u32,
    months: u16,
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
}

impl CivilPattern {
    pub(crate) fn parse(text: &str) -> Result<Self, ScheduleError> {
        let cron = parser().parse(text).map_err(|_| diagnose(text))?;
        let bit = |ok: Result<bool, croner::errors::CronError>| ok.unwrap_or(false);
        let mut pattern = CivilPattern {
            minutes: (0..60u32)
                .filter(|&m| bit(cron.pattern.minute_match(m)))
                .fold(0, |mask, m| mask | 1 << m),
            hours: (0..24u32)
                .filter(|&h| bit(cron.pattern.hour_match(h)))
                .fold(0, |mask, h| mask | 1 << h),
            months: (1..=12u32)
                .filter(|&m| bit(cron.pattern.month_match(m)))
                .fold(0, |mask, m| mask | 1 << m),
            cron,
        };
        // Seconds are fixed at 0 in a 5-field pattern; a civil minute matches at its start.
        pattern.minutes &= MINUTES;
        let start = NaiveDate::from_ymd_opt(2000, 1, 1).expect("valid date");
        let last = start
            .with_year(2000 + DATE_HORIZON_YEARS)
            .expect("valid date");
        if pattern.minutes == 0
            || pattern.hours == 0
            || pattern.next_matching_date(start, last).is_none()
        {
            return Err(ScheduleError::NeverMatches);
        }
        Ok(pattern)
    }

    /// True if the date part (day of month, month, day of week) matches.
    pub(crate) fn date_matches(&self, date: NaiveDate) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let weekday = croner::Weekday::from_days_from_sunday(date.weekday().num_days_from_sunday());
        let year = within_croner_years(date.year());
        let p = &self.cron.pattern;
        p.day_match(year, date.month(), date.day(), weekday)
            .unwrap_or(false)
            && p.year_match(year).unwrap_or(false)
    }

    /// True if the civil minute containing `at` matches.
    pub(crate) fn matches(&self, at: NaiveDateTime) -> bool {
        self.minutes & (1 << at.minute()) != 0
            && self.hours & (1 << at.hour()) != 0
            && self.date_matches(at.date())
    }

    /// The first matching date in `from..=last`.
    pub(crate) fn next_matching_date(&self, from: NaiveDate, last: NaiveDate) -> Option<NaiveDate> {
        let mut date = from;
        while date <= last {
            if self.months & (1 << date.month()) == 0 {
                // Skip the whole month.
                let (y, m) = if date.month() == 12 {
                    (date.year() + 1, 1)
                } else {
                    (date.year(), date.month() + 1)
                };
                date = NaiveDate::from_ymd_opt(y, m, 1)?;
                continue;
            }
            if self.date_matches(date) {
                return Some(date);
            }
            date = date.succ_opt()?;
        }
        None
    }

    /// The first matching (hour, minute) at or after `hour:minute` within one day.
    fn first_time_in_day(&self, hour: u32, minute: u32) -> Option<(u32, u32)> {
        (hour..24)
            .filter(|&h| self.hours & (1 << h) != 0)
            .find_map(|h| {
                let from = if h == hour { minute } else { 0 };
                first_set(self.minutes, from).map(|m| (h, m))
            })
    }

    /// The first matching civil minute at or after `from` (floored to its minute), on a
    /// date no later than `last`.
    pub(crate) fn first_match_from(
        &self,
        from: NaiveDateTime,
        last: NaiveDate,
    ) -> Option<NaiveDateTime> {
        let mut date = from.date();
        let (mut hour, mut minute) = (from.hour(), from.minute());
        loop {
            let found = self.next_matching_date(date, last)?;
            if found != date {
                (hour, minute) = (0, 0);
            }
            if let Some((h, m)) = self.first_time_in_day(hour, minute) {
                return found.and_hms_opt(h, m, 0);
            }
            date = found.succ_opt()?;
            (hour, minute) = (0, 0);
        }
    }

    /// The first civil minute after the one containing `after` that does not match, on a
    /// date no later than `last`.
    pub(crate) fn next_mismatch(
        &self,
        after: NaiveDateTime,
        last: NaiveDate,
    ) -> Option<NaiveDateTime> {
        let mut at = floor_minute(after) + ChronoDuration::minutes(1);
        let mut known: Option<(NaiveDate, bool)> = None;
        loop {
            let date = at.date();
            if date > last {
                return None;
            }
            let date_ok = match known {
                Some((d, ok)) if d == date => ok,
                _ => {
                    let ok = self.date_matches(date);
                    known = Some((date, ok));
                    ok
                }
            };
            if !date_ok || self.hours & (1 << at.hour()) == 0 {
                return Some(at);
            }
            if let Some(m) = first_set(!self.minutes & MINUTES, at.minute()) {
                return at.with_minute(m);
            }
            // The rest of this hour matches: go on at the next hour.
            at = at.with_minute(0)? + ChronoDuration::hours(1);
        }
    }
}

/// `year`, moved back by whole 400-year Gregorian cycles into croner's range (it matches
/// no date after [`croner::YEAR_UPPER_LIMIT`], 5000, where `WallClock` runs to 9999). A
/// cycle is 146,097 days, a whole number of weeks, and keeps leap years, so month, day
/// and weekday rules match the same dates in both years (a pattern has no year field).
fn within_croner_years(year: i32) -> i32 {
    const CYCLE: i32 = 400;
    let over = year - croner::YEAR_UPPER_LIMIT;
    if over <= 0 {
        return year;
    }
    year - CYCLE * ((over + CYCLE - 1) / CYCLE)
}

/// `at` with seconds and sub-seconds cleared.
pub(crate) fn floor_minute(at: NaiveDateTime) -> NaiveDateTime {
    at.with_second(0)
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(at)
}

/// The lowest set bit of `mask` at or above `from` (below 60).
fn first_set(mask: u64, from: u32) -> Option<u32> {
    if from >= 60 {
        return None;
    }
    let rest = (mask & MINUTES) >> from;
    (rest != 0).then(|| from + rest.trailing_zeros())
}

/// Which part of a refused pattern is wrong, without quoting it: the field count, or the
/// first field that fails on its own (the others replaced by `*`).
fn diagnose(text: &str) -> ScheduleError {
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() != 5 {
        return ScheduleError::FieldCount(fields.len());
    }
    for (index, field) in CronField::ALL.iter().enumerate() {
        let alone: Vec<&str> = (0..5)
            .map(|i| if i == index { fields[i] } else { "*" })
            .collect();
        if parser().parse(&alone.join(" ")).is_err() {
            return ScheduleError::Field(*field);
        }
    }
    ScheduleError::Pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn croner_syntax_is_accepted_and_matched() {
        // 2026-01-05 is a Monday.
        let cases: &[(&str, &str, bool)] = &[
            ("* 9-17 * * MON-FRI", "2026-01-05 09:00", true),
            ("* 9-17 * * MON-FRI", "2026-01-05 18:00", false),
            ("* 9-17 * * MON-FRI", "2026-01-10 10:00", false), // Saturday
            ("*/15 * * * *", "2026-01-05 09:45", true),
            ("*/15 * * * *", "2026-01-05 09:46", false),
            ("0 0 L * *", "2026-02-28 00:00", true),
            ("0 0 * * 5#2", "2026-01-09 00:00", true), // second Friday
            ("0 0 * JAN,dec *", "2026-12-01 00:00", true),
            ("@daily", "2026-07-01 00:00", true),
            ("@daily", "2026-07-01 00:01", false),
            ("0 0 13 * +FRI", "2026-02-13 00:00", true), // Friday the 13th
            ("0 0 13 * +FRI", "2026-01-13 00:00", false),
        ];
        for &(pattern, when, want) in cases {
            let p = CivilPattern::parse(pattern).unwrap();
            assert_eq!(p.matches(at(when)), want, "{pattern} at {when}");
        }
    }

    #[test]
    fn refusals_name_the_field_and_never_the_text() {
        let cases: &[(&str, ScheduleError)] = &[
            ("* * * *", ScheduleError::FieldCount(4)),
            ("0 * * * * *", ScheduleError::FieldCount(6)),
            ("", ScheduleError::FieldCount(0)),
            ("61 * * * *", ScheduleError::Field(CronField::Minute)),
            ("* 24 * * *", ScheduleError::Field(CronField::Hour)),
            ("* * 32 * *", ScheduleError::Field(CronField::DayOfMonth)),
            ("* * * 13 *", ScheduleError::Field(CronField::Month)),
            (
                "* * * * SECRETX",
                ScheduleError::Field(CronField::DayOfWeek),
            ),
            ("0 0 30 2 *", ScheduleError::NeverMatches),
            ("0 0 31 4,6,9,11 *", ScheduleError::NeverMatches),
        ];
        for (pattern, want) in cases {
            let err = CivilPattern::parse(pattern).unwrap_err();
            assert_eq!(&err, want, "{pattern}");
            assert!(!err.to_string().contains("SECRETX"), "{err}");
        }
    }

    #[test]
    fn a_search_skips_to_the_next_match_and_the_next_mismatch() {
        let p = CivilPattern::parse("* 9-17 * * MON-FRI").unwrap();
        let last = NaiveDate::from_ymd_opt(2026, 12, 31).unwrap();
        // Friday 18:00 → Monday 09:00.
        assert_eq!(
            p.first_match_from(at("2026-01-09 18:00"), last),
            Some(at("2026-01-12 09:00"))
        );
        assert_eq!(
            p.next_mismatch(at("2026-01-09 10:30"), last),
            Some(at("2026-01-09 18:00"))
        );
        let every = CivilPattern::parse("* * * * *").unwrap();
        assert_eq!(every.next_mismatch(at("2026-01-09 10:30"), last), None);
        let leap = CivilPattern::parse("0 12 29 2 *").unwrap();
        assert_eq!(
            leap.first_match_from(
                at("2026-03-01 00:00"),
                NaiveDate::from_ymd_opt(2030, 1, 1).unwrap()
            ),
            Some(at("2028-02-29 12:00"))
        );
    }
}
