//! `CronSchedule`: a validated cron pattern in an IANA time zone.
//!
//! One value serves both users: scheduled limits ask [`CronSchedule::matches`] and
//! [`CronSchedule::next_change_after`] (a pattern is a *match pattern* over minutes), and
//! scan schedules ask [`CronSchedule::next_fire_after`] (a pattern names *fire times*).
//! Both are pure: the instant is always an argument. The searches live in `fire.rs` and
//! `change.rs`.

use std::fmt;
use std::sync::Arc;

use chrono_tz::Tz;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::error::ScheduleError;
use super::pattern::CivilPattern;
use super::wall_clock::WallClock;
use super::zone::local_minute;

/// A 5-field cron pattern (croner syntax) evaluated in one IANA time zone.
#[derive(Clone)]
pub struct CronSchedule {
    /// Shared: a parsed croner pattern is a few hundred bytes, and schedules are cloned
    /// with the policy table.
    pub(super) pattern: Arc<CivilPattern>,
    pub(super) text: String,
    pub(super) zone: Tz,
}

impl CronSchedule {
    /// Validate a pattern and a zone name: 5 fields in croner syntax (`* 9-17 * * MON-FRI`,
    /// `*/15 * * * *`, `0 0 L * *`, `@daily`), matching at least one date, and a zone name
    /// from the IANA database (`Europe/Berlin`, `UTC`; exact spelling).
    pub fn parse(pattern: &str, timezone: &str) -> Result<Self, ScheduleError> {
        let zone: Tz = timezone.parse().map_err(|_| ScheduleError::UnknownZone)?;
        let civil = CivilPattern::parse(pattern)?;
        Ok(CronSchedule {
            pattern: Arc::new(civil),
            text: pattern.trim().to_owned(),
            zone,
        })
    }

    /// The pattern as given (trimmed).
    pub fn pattern(&self) -> &str {
        &self.text
    }

    /// The zone's IANA name.
    pub fn timezone(&self) -> &'static str {
        self.zone.name()
    }

    /// True if the minute containing `t`, read in the schedule's zone, matches. In a
    /// repeated hour (fall back) both passes read the same civil minutes, so both match
    /// alike; civil minutes skipped by a spring-forward gap are never read.
    pub fn matches(&self, t: WallClock) -> bool {
        self.pattern.matches(local_minute(self.zone, t))
    }
}

impl PartialEq for CronSchedule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.zone == other.zone
    }
}

impl fmt::Debug for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronSchedule")
            .field("cron", &self.text)
            .field("timezone", &self.zone.name())
            .finish()
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.text, self.zone.name())
    }
}

/// `{"cron": ..., "timezone": ...}`, the shape it is configured in.
impl Serialize for CronSchedule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("CronSchedule", 2)?;
        s.serialize_field("cron", &self.text)?;
        s.serialize_field("timezone", self.zone.name())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_must_be_known_iana_names() {
        assert!(CronSchedule::parse("* * * * *", "Europe/Berlin").is_ok());
        assert!(CronSchedule::parse("* * * * *", "UTC").is_ok());
        for bad in ["", "Mars/Olympus", "europe/berlin", "CEST+SECRET"] {
            let err = CronSchedule::parse("* * * * *", bad).unwrap_err();
            assert_eq!(err, ScheduleError::UnknownZone, "{bad}");
            assert_eq!(err.subject(), "timezone");
        }
        let err = CronSchedule::parse("nope", "UTC").unwrap_err();
        assert_eq!(err.subject(), "cron");
    }

    #[test]
    fn a_schedule_serializes_as_it_is_configured() {
        let s = CronSchedule::parse(" * 9-17 * * MON-FRI ", "Europe/Berlin").unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"cron": "* 9-17 * * MON-FRI", "timezone": "Europe/Berlin"})
        );
        assert_eq!(s.to_string(), "* 9-17 * * MON-FRI (Europe/Berlin)");
    }
}
