//! Instants ↔ civil time in an IANA zone: offsets, transitions, and which instant a
//! civil minute fires at.
//!
//! chrono-tz answers "what is the offset at this instant" and "which instants have this
//! civil time"; it does not list transitions. [`first_offset_change`] finds the next one
//! by probing the offset once an hour and bisecting the hour where it changed. That
//! assumes no zone changes its offset twice within one hour and back, which holds for
//! every zone in the tz database since 1970 (transitions are months apart; the closest
//! are a day or more).

use chrono::{Duration as ChronoDuration, MappedLocalTime, NaiveDateTime, Offset, TimeZone};
use chrono_tz::{GapInfo, Tz};

use super::pattern::floor_minute;
use super::wall_clock::WallClock;

const PROBE_MILLIS: i64 = 3_600_000;

/// Local time minus UTC at `t`, in seconds.
pub(crate) fn offset_at(zone: Tz, t: WallClock) -> i32 {
    zone.offset_from_utc_datetime(&t.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The civil time at `t` under `offset` seconds.
pub(crate) fn civil_at(t: WallClock, offset: i32) -> NaiveDateTime {
    t.naive_utc() + ChronoDuration::seconds(i64::from(offset))
}

/// The civil minute containing `t` in `zone`.
pub(crate) fn local_minute(zone: Tz, t: WallClock) -> NaiveDateTime {
    floor_minute(civil_at(t, offset_at(zone, t)))
}

/// The instant at which civil time `civil` is reached under `offset` seconds.
pub(crate) fn instant_at(civil: NaiveDateTime, offset: i32) -> WallClock {
    WallClock::from_naive_utc(civil - ChronoDuration::seconds(i64::from(offset)))
}

/// The first instant in `(after, until]` whose offset differs from the offset at `after`.
pub(crate) fn first_offset_change(
    zone: Tz,
    after: WallClock,
    until: WallClock,
) -> Option<WallClock> {
    let offset = offset_at(zone, after);
    let mut lo = after;
    while lo < until {
        let hi = lo.plus_millis(PROBE_MILLIS).min(until);
        if offset_at(zone, hi) != offset {
            // Bisect (lo, hi]: lo has `offset`, hi does not.
            let (mut lo, mut hi) = (lo, hi);
            while hi.unix_millis() - lo.unix_millis() > 1 {
                let mid = lo.plus_millis((hi.unix_millis() - lo.unix_millis()) / 2);
                if offset_at(zone, mid) == offset {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return Some(hi);
        }
        lo = hi;
    }
    None
}

/// The instant at which a matching civil minute fires (the DST rule of
/// [`CronSchedule::next_fire_after`](super::CronSchedule::next_fire_after)):
/// - a minute that occurs once fires at its start;
/// - a minute that occurs twice (fall back) fires at its first occurrence only;
/// - a minute that does not occur (spring forward) fires at the first instant after the
///   gap, the transition itself.
///
/// `None` only for a gap at the very edge of the zone's known history.
pub(crate) fn fire_instant(zone: Tz, civil: NaiveDateTime) -> Option<WallClock> {
    match zone.from_local_datetime(&civil) {
        MappedLocalTime::Single(at) => Some(WallClock::from_naive_utc(at.naive_utc())),
        MappedLocalTime::Ambiguous(first, _) => Some(WallClock::from_naive_utc(first.naive_utc())),
        MappedLocalTime::None => GapInfo::new(&civil, &zone)
            .and_then(|gap| gap.end)
            .map(|end| WallClock::from_naive_utc(end.naive_utc())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn transitions_are_found_to_the_millisecond() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let lord_howe: Tz = "Australia/Lord_Howe".parse().unwrap();
        let cases: &[(Tz, &str, &str, Option<&str>)] = &[
            (
                berlin,
                "2026-03-28T12:00:00Z",
                "2026-03-30T00:00:00Z",
                Some("2026-03-29T01:00:00Z"),
            ),
            (
                berlin,
                "2026-10-24T12:00:00Z",
                "2026-10-26T00:00:00Z",
                Some("2026-10-25T01:00:00Z"),
            ),
            (berlin, "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", None),
            (
                lord_howe,
                "2026-10-03T00:00:00Z",
                "2026-10-04T00:00:00Z",
                Some("2026-10-03T15:30:00Z"),
            ),
            (
                lord_howe,
                "2026-04-04T00:00:00Z",
                "2026-04-05T00:00:00Z",
                Some("2026-04-04T15:00:00Z"),
            ),
        ];
        for &(zone, after, until, want) in cases {
            assert_eq!(
                first_offset_change(zone, w(after), w(until)),
                want.map(w),
                "{zone} {after}"
            );
        }
    }
}
