//! `WallClock`: a UTC instant, for the parts of admission that follow the calendar.
//!
//! The rest of this crate counts time as a [`Timestamp`]: microseconds since an epoch
//! that the [`Clock`](crate::Clock) chooses. Rates and windows only need differences, so
//! any epoch works; a schedule ("09:00 in Berlin") needs the real date. A `WallClock` is
//! therefore a separate type, milliseconds since the Unix epoch in UTC, and the mapping
//! between the two is explicit: [`WallClock::from_timestamp`] takes the wall-clock
//! instant of `Timestamp::ZERO` (its *anchor*).
//!
//! - Production: the actors' clock counts from the Unix epoch, so the anchor is
//!   [`WallClock::UNIX_EPOCH`].
//! - Replay and simulations: simulated time 0 is the script's `start_at`, so the anchor is
//!   that instant.
//!
//! Milliseconds are plenty: every schedule boundary is a whole minute (or a time-zone
//! transition, a whole second). A timestamp is floored to the millisecond, which keeps
//! the order against any boundary: `t ≥ boundary` holds before and after the conversion.
//! The range is 1970-01-01 through the end of 9999 (what chrono names; cron patterns
//! match past croner's year 5000 through the 400-year cycle, see `pattern.rs`);
//! conversions saturate at its ends.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::error::ScheduleError;
use crate::time::Timestamp;

/// An instant in UTC, milliseconds since 1970-01-01T00:00:00Z.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(try_from = "i64", into = "i64")]
pub struct WallClock(i64);

impl WallClock {
    /// 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: WallClock = WallClock(0);
    /// 9999-12-31T23:59:59.999Z, the last representable instant.
    pub const MAX: WallClock = WallClock(253_402_300_799_999);

    /// The instant `millis` milliseconds after the Unix epoch, if in range.
    pub const fn from_unix_millis(millis: i64) -> Option<WallClock> {
        if millis < 0 || millis > Self::MAX.0 {
            None
        } else {
            Some(WallClock(millis))
        }
    }

    /// Milliseconds since the Unix epoch.
    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// The wall-clock instant of `ts`, given the wall-clock instant of `Timestamp::ZERO`
    /// (floored to the millisecond, saturating at [`WallClock::MAX`]).
    pub fn from_timestamp(ts: Timestamp, anchor: WallClock) -> WallClock {
        let millis = i64::try_from(ts.as_micros() / 1_000).unwrap_or(i64::MAX);
        WallClock(anchor.0.saturating_add(millis).min(Self::MAX.0))
    }

    /// The timestamp of this instant on a clock whose `Timestamp::ZERO` is `anchor`
    /// (`Timestamp::ZERO` if this instant is earlier than the anchor).
    pub fn to_timestamp(self, anchor: WallClock) -> Timestamp {
        let millis = self.0.saturating_sub(anchor.0).max(0);
        Timestamp::from_micros((millis as u64).saturating_mul(1_000))
    }

    /// `self + d`, saturating at [`WallClock::MAX`].
    pub fn saturating_add(self, d: Duration) -> WallClock {
        let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        WallClock(self.0.saturating_add(millis).min(Self::MAX.0))
    }

    /// `self - d`, saturating at [`WallClock::UNIX_EPOCH`].
    pub fn saturating_sub(self, d: Duration) -> WallClock {
        let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        WallClock(self.0.saturating_sub(millis).max(0))
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: WallClock) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// Parse an RFC 3339 date-time with any offset, such as `2026-01-05T00:00:00Z` or
    /// `2026-03-29T03:00:00+02:00` (sub-millisecond digits are floored).
    pub fn parse_rfc3339(text: &str) -> Result<WallClock, ScheduleError> {
        let parsed = DateTime::parse_from_rfc3339(text).map_err(|_| ScheduleError::Instant)?;
        WallClock::from_unix_millis(parsed.timestamp_millis()).ok_or(ScheduleError::InstantRange)
    }

    /// RFC 3339 in UTC with milliseconds, such as `2026-01-05T00:00:00.000Z`.
    pub fn to_rfc3339(self) -> String {
        self.to_utc().to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub(crate) fn to_utc(self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.0).expect("a WallClock is within chrono's range")
    }

    pub(crate) fn naive_utc(self) -> NaiveDateTime {
        self.to_utc().naive_utc()
    }

    /// The instant of a UTC date-time, clamped into range.
    pub(crate) fn from_naive_utc(naive: NaiveDateTime) -> WallClock {
        WallClock(naive.and_utc().timestamp_millis().clamp(0, Self::MAX.0))
    }

    pub(crate) fn plus_millis(self, millis: i64) -> WallClock {
        WallClock(self.0.saturating_add(millis).clamp(0, Self::MAX.0))
    }
}

impl TryFrom<i64> for WallClock {
    type Error = ScheduleError;
    fn try_from(millis: i64) -> Result<Self, ScheduleError> {
        WallClock::from_unix_millis(millis).ok_or(ScheduleError::InstantRange)
    }
}

impl From<WallClock> for i64 {
    fn from(w: WallClock) -> i64 {
        w.0
    }
}

impl fmt::Display for WallClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_maps_through_its_anchor_and_back() {
        let anchor = WallClock::parse_rfc3339("2026-01-05T00:00:00Z").unwrap();
        let ts = Timestamp::from_micros(90_000_999);
        let wall = WallClock::from_timestamp(ts, anchor);
        assert_eq!(wall.to_rfc3339(), "2026-01-05T00:01:30.000Z");
        assert_eq!(wall.to_timestamp(anchor), Timestamp::from_millis(90_000));
        assert_eq!(anchor.to_timestamp(wall), Timestamp::ZERO);
    }

    #[test]
    fn conversions_saturate_at_the_ends_of_the_range() {
        let far = Timestamp::from_micros(u64::MAX);
        assert_eq!(
            WallClock::from_timestamp(far, WallClock::UNIX_EPOCH),
            WallClock::MAX
        );
        assert_eq!(WallClock::from_unix_millis(-1), None);
        assert_eq!(
            WallClock::UNIX_EPOCH.saturating_sub(Duration::from_secs(1)),
            WallClock::UNIX_EPOCH
        );
        assert_eq!(
            WallClock::parse_rfc3339("1969-12-31T23:59:59Z"),
            Err(ScheduleError::InstantRange)
        );
        assert_eq!(WallClock::MAX.to_rfc3339(), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn offsets_in_rfc3339_are_honoured_and_bad_text_is_not_echoed() {
        let a = WallClock::parse_rfc3339("2026-03-29T03:00:00+02:00").unwrap();
        assert_eq!(a.to_string(), "2026-03-29T01:00:00.000Z");
        let err = WallClock::parse_rfc3339("yesterday-SECRET").unwrap_err();
        assert!(!err.to_string().contains("SECRET"), "{err}");
    }

    #[test]
    fn serde_keeps_milliseconds_and_checks_the_range() {
        let a = WallClock::from_unix_millis(1_767_571_200_000).unwrap();
        assert_eq!(serde_json::to_string(&a).unwrap(), "1767571200000");
        assert_eq!(
            serde_json::from_str::<WallClock>("1767571200000").unwrap(),
            a
        );
        assert!(serde_json::from_str::<WallClock>("-5").is_err());
    }
}
