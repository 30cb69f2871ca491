//! Why a cron pattern, a time zone or an instant was refused.
//!
//! Messages name the part that is wrong and the rule it breaks, never the text that was
//! given: the caller attaches where it came from (variable, file, key, field), and the
//! document itself may hold anything a user pasted into the wrong variable.

use std::fmt;

/// A field of a 5-field cron pattern, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronField {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl CronField {
    /// The fields in pattern order.
    pub const ALL: [CronField; 5] = [
        CronField::Minute,
        CronField::Hour,
        CronField::DayOfMonth,
        CronField::Month,
        CronField::DayOfWeek,
    ];
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CronField::Minute => "minute (0-59)",
            CronField::Hour => "hour (0-23)",
            CronField::DayOfMonth => "day-of-month (1-31, L, W)",
            CronField::Month => "month (1-12 or JAN-DEC)",
            CronField::DayOfWeek => "day-of-week (0-7 or SUN-SAT, #, L)",
        })
    }
}

/// Why a schedule value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    #[error("must have 5 fields (minute hour day-of-month month day-of-week), such as \"* 9-17 * * MON-FRI\"; it has {0}")]
    FieldCount(usize),
    #[error("has an invalid {0} field (the pattern is not shown)")]
    Field(CronField),
    #[error("is not a valid cron pattern (the pattern is not shown)")]
    Pattern,
    #[error("never matches any date (such as day 30 in February); fix the day or month fields")]
    NeverMatches,
    #[error("is not a known IANA time zone name, such as Europe/Berlin, America/New_York or UTC (the value is not shown)")]
    UnknownZone,
    #[error("is not an RFC 3339 date-time such as 2026-01-05T00:00:00Z (the value is not shown)")]
    Instant,
    #[error("is outside 1970-01-01T00:00:00Z through 9999-12-31T23:59:59.999Z")]
    InstantRange,
}

impl ScheduleError {
    /// The configuration field this error is about: `cron`, `timezone` or `instant`.
    pub fn subject(&self) -> &'static str {
        match self {
            ScheduleError::FieldCount(_)
            | ScheduleError::Field(_)
            | ScheduleError::Pattern
            | ScheduleError::NeverMatches => "cron",
            ScheduleError::UnknownZone => "timezone",
            ScheduleError::Instant | ScheduleError::InstantRange => "instant",
        }
    }
}
