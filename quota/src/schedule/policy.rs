//! Scheduled policies: a key's base policy overlaid by the first matching cron entry.
//!
//! Entries are *match patterns*, not state transitions (seed 003): at instant `t` the
//! effective policy is the base overlaid with the first entry whose cron matches `t`'s
//! minute in that entry's own zone, or the base when none matches. Nothing depends on
//! what was in force before, so every reader (the actor, `tollgate policies --at`, a
//! replay) computes the same answer from the same `t`.
//!
//! [`resolve`] also returns `valid_until`: the earliest later instant at which any
//! entry's match changes (found by each entry's bounded scan, so it is capped). Until
//! then the effective policy cannot change, so the hot path compares one instant and
//! evaluates no cron; at `valid_until` the caller resolves again.

use serde::Serialize;

use super::cron::CronSchedule;
use super::wall_clock::WallClock;
use crate::overlay::PolicyOverlay;
use crate::policy::{Policy, PolicyError};

/// Most entries a schedule may have (each costs a scan per resolution).
pub const MAX_SCHEDULE_ENTRIES: usize = 32;

/// One entry: while `cron` matches, `overlay` applies (unless an earlier entry matches).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleEntry {
    #[serde(flatten)]
    pub cron: CronSchedule,
    #[serde(flatten)]
    pub overlay: PolicyOverlay,
}

/// An ordered list of entries, at most [`MAX_SCHEDULE_ENTRIES`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct PolicySchedule {
    entries: Vec<ScheduleEntry>,
}

/// The policy in force at an instant, and until when it certainly stays in force.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePolicy {
    /// The effective policy.
    pub policy: Policy,
    /// The index of the entry in force, `None` for the base.
    pub entry: Option<usize>,
    /// The earliest later instant at which any entry's match changes, or the scan cap.
    pub valid_until: WallClock,
}

/// Too many entries for one schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("has {0} entries; at most {MAX_SCHEDULE_ENTRIES} are allowed")]
pub struct TooManyEntries(pub usize);

impl PolicySchedule {
    /// A schedule of `entries`, first match wins.
    pub fn new(entries: Vec<ScheduleEntry>) -> Result<Self, TooManyEntries> {
        if entries.len() > MAX_SCHEDULE_ENTRIES {
            return Err(TooManyEntries(entries.len()));
        }
        Ok(PolicySchedule { entries })
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[ScheduleEntry] {
        &self.entries
    }

    /// True without entries (the base always applies).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Check that every entry makes a valid policy of `base` (the same bounds as any
    /// policy); the error carries the index of the first entry that does not.
    pub fn check_over(&self, base: &Policy) -> Result<(), (usize, PolicyError)> {
        for (index, entry) in self.entries.iter().enumerate() {
            entry.overlay.apply(base).map_err(|e| (index, e))?;
        }
        Ok(())
    }
}

/// The effective policy of `base` under `schedule` at `t`, valid until the first change of
/// any entry's match after `t`, or `cap` (`DEFAULT_SCAN_CAP` after `t` is the usual
/// bound). Over a base the schedule was not checked against, an explicit burst above the
/// rate is capped rather than refused ([`PolicyOverlay::apply_capped`]).
pub fn resolve(
    base: &Policy,
    schedule: &PolicySchedule,
    t: WallClock,
    cap: WallClock,
) -> EffectivePolicy {
    let entry = schedule.entries.iter().position(|e| e.cron.matches(t));
    let policy = entry.map_or(*base, |i| schedule.entries[i].overlay.apply_capped(base));
    let valid_until = schedule
        .entries
        .iter()
        .fold(cap.max(t.plus_millis(1)), |until, e| {
            e.cron.next_change_after(t, until)
        });
    EffectivePolicy {
        policy,
        entry,
        valid_until,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    fn entry(cron: &str, zone: &str, rate: f64) -> ScheduleEntry {
        ScheduleEntry {
            cron: CronSchedule::parse(cron, zone).unwrap(),
            overlay: PolicyOverlay::new(Some(rate), Some(1.0), None, None).unwrap(),
        }
    }

    #[test]
    fn business_hours_in_berlin_overlay_the_base_until_1700_local() {
        let base = Policy::new(50.0, 10.0, 10, 20).unwrap();
        let schedule = PolicySchedule::new(vec![
            entry("* 9-16 * * MON-FRI", "Europe/Berlin", 1.0),
            entry("* * * * SAT,SUN", "UTC", 5.0),
        ])
        .unwrap();
        let cap = |t: WallClock| t.saturating_add(super::super::DEFAULT_SCAN_CAP);
        // Monday 2026-01-05 08:59:30 CET: base, until 09:00 CET = 08:00Z.
        let t = w("2026-01-05T07:59:30Z");
        let r = resolve(&base, &schedule, t, cap(t));
        assert_eq!(
            (r.policy, r.entry, r.valid_until),
            (base, None, w("2026-01-05T08:00:00Z"))
        );
        // 09:00 CET: the business-hours entry until 17:00 CET = 16:00Z.
        let t = w("2026-01-05T08:00:00Z");
        let r = resolve(&base, &schedule, t, cap(t));
        assert_eq!(r.entry, Some(0));
        assert_eq!(r.policy, Policy::new(1.0, 1.0, 10, 20).unwrap());
        assert_eq!(r.valid_until, w("2026-01-05T16:00:00Z"));
        // Friday evening: base until Saturday 00:00 UTC, when the second entry starts.
        let t = w("2026-01-09T20:00:00Z");
        let r = resolve(&base, &schedule, t, cap(t));
        assert_eq!((r.entry, r.valid_until), (None, w("2026-01-10T00:00:00Z")));
        // A cap before the next change is returned as is.
        let r = resolve(&base, &schedule, t, w("2026-01-09T21:00:00Z"));
        assert_eq!(r.valid_until, w("2026-01-09T21:00:00Z"));
    }

    #[test]
    fn a_schedule_serializes_in_the_shape_it_is_configured_in() {
        let schedule =
            PolicySchedule::new(vec![entry("* 9-17 * * MON-FRI", "Europe/Berlin", 1.0)]).unwrap();
        assert_eq!(
            serde_json::to_value(&schedule).unwrap(),
            serde_json::json!([{"cron": "* 9-17 * * MON-FRI", "timezone": "Europe/Berlin",
                "ratePerSecond": 1.0, "burst": 1.0}])
        );
    }

    #[test]
    fn entries_are_checked_over_the_base() {
        let base = Policy::new(2.0, 2.0, 10, 20).unwrap();
        let schedule = PolicySchedule::new(vec![
            entry("* * * * *", "UTC", 1.0),
            ScheduleEntry {
                cron: CronSchedule::parse("* * * * *", "UTC").unwrap(),
                overlay: PolicyOverlay::new(None, Some(3.0), None, None).unwrap(),
            },
        ])
        .unwrap();
        assert!(matches!(
            schedule.check_over(&base),
            Err((1, PolicyError::Burst { .. }))
        ));
        let many = vec![entry("* * * * *", "UTC", 1.0); MAX_SCHEDULE_ENTRIES + 1];
        assert_eq!(PolicySchedule::new(many).unwrap_err(), TooManyEntries(33));
    }
}
