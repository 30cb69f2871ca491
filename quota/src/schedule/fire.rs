//! Fire times: when a scan schedule runs, and when an allowance resets.
//!
//! # The DST rule
//! A pattern names civil minutes; each matching civil minute fires exactly once:
//! - a minute that occurs once fires at its start;
//! - a minute that occurs twice (the repeated hour when clocks fall back) fires at its
//!   *first* occurrence only, so a `30 2 * * *` job runs once on that night, in the
//!   earlier pass, and `*/15` jobs do not run again in the second pass;
//! - a minute that does not occur (the hour skipped when clocks spring forward) fires at
//!   the first valid instant after the gap, which is the transition itself; several
//!   skipped minutes fire together there, once.
//!
//! The fire instant of a civil minute never decreases as the civil minute increases
//! (skipped minutes map to the transition, repeated ones to their first pass), so the next
//! fire after `t` is found by locating the first civil minute whose fire instant is past
//! `t` and then the first *matching* civil minute from there.

use std::time::Duration;

use chrono::{Duration as ChronoDuration, NaiveDate, NaiveDateTime};

use super::cron::CronSchedule;
use super::pattern::DATE_HORIZON_YEARS;
use super::wall_clock::WallClock;
use super::zone::{fire_instant, local_minute};

impl CronSchedule {
    /// The first fire instant strictly after `t` under the DST rule above, or `None` if the
    /// pattern fires no more before the end of [`WallClock`]'s range.
    pub fn next_fire_after(&self, t: WallClock) -> Option<WallClock> {
        let horizon = local_minute(self.zone, t)
            .date()
            .checked_add_signed(ChronoDuration::days(366 * i64::from(DATE_HORIZON_YEARS)))
            .unwrap_or(NaiveDate::MAX);
        self.fire_after(t, horizon)
    }

    /// The last fire instant at or before `t`, or `None` if there is none since the Unix
    /// epoch. An allowance's period starts there.
    pub fn last_fire_at_or_before(&self, t: WallClock) -> Option<WallClock> {
        // Look back over a doubling span until a fire lies in (t - span, t], then walk
        // forward to the last one not after t.
        let mut span = Duration::from_secs(60);
        loop {
            let from = t.saturating_sub(span);
            let until = local_minute(self.zone, t)
                .date()
                .succ_opt()
                .unwrap_or(NaiveDate::MAX);
            let probe = if from == WallClock::UNIX_EPOCH {
                // Include a fire exactly at the epoch.
                self.fire_at_or_after_epoch(until)
            } else {
                self.fire_after(from, until)
            };
            if let Some(mut last) = probe.filter(|&f| f <= t) {
                while let Some(next) = self.fire_after(last, until).filter(|&f| f <= t) {
                    last = next;
                }
                return Some(last);
            }
            if from == WallClock::UNIX_EPOCH {
                return None;
            }
            span = span.saturating_mul(2);
        }
    }

    fn fire_at_or_after_epoch(&self, last_date: NaiveDate) -> Option<WallClock> {
        let epoch = WallClock::UNIX_EPOCH;
        if self.matches(epoch) {
            let first = fire_instant(self.zone, local_minute(self.zone, epoch));
            if first == Some(epoch) {
                return first;
            }
        }
        self.fire_after(epoch, last_date)
    }

    /// The first fire instant after `t` of a civil minute dated no later than `last_date`.
    ///
    /// Civil minutes after the one containing [`WallClock::MAX`] would fire past the range
    /// (the conversion clamps them to `MAX`): the search ends there instead of walking
    /// every match up to `last_date` for a fire after `MAX` that cannot come.
    pub(super) fn fire_after(&self, t: WallClock, last_date: NaiveDate) -> Option<WallClock> {
        let end = local_minute(self.zone, WallClock::MAX);
        let last_date = last_date.min(end.date());
        let fires_after_t =
            |civil: NaiveDateTime| fire_instant(self.zone, civil).is_some_and(|f| f > t);
        // The civil minute containing t fired at or before t. Gallop, then bisect, to the
        // first civil minute that fires after t (usually the next one).
        let start = local_minute(self.zone, t);
        let mut below = 0i64;
        let mut above = 1i64;
        while !fires_after_t(start + ChronoDuration::minutes(above)) {
            below = above;
            above *= 2;
            if above > 4 * 24 * 60 {
                break; // no zone repeats more than a day; fall through to the checked walk
            }
        }
        while above - below > 1 {
            let mid = below + (above - below) / 2;
            if fires_after_t(start + ChronoDuration::minutes(mid)) {
                above = mid;
            } else {
                below = mid;
            }
        }
        let mut civil = self
            .pattern
            .first_match_from(start + ChronoDuration::minutes(above), last_date)?;
        loop {
            if civil > end {
                return None;
            }
            match fire_instant(self.zone, civil) {
                Some(fire) if fire > t => return Some(fire),
                _ => {
                    civil = self
                        .pattern
                        .first_match_from(civil + ChronoDuration::minutes(1), last_date)?
                }
            }
        }
    }
}
