//! When does `matches` change next? The valid-until stamp of a scheduled policy.
//!
//! A bounded forward scan over *segments*: stretches of time with one UTC offset, in
//! which civil time runs in step with UTC. Within a segment the civil pattern search
//! (`pattern.rs`) jumps straight to the next civil minute where the match flips (next
//! match when not matching, next mismatch when matching), skipping whole months, days
//! and hours; the answer is that civil minute under the segment's offset. If the offset
//! changes first, civil time jumps at the transition, so the match is re-read there and
//! the scan goes on from it. The scan stops at `cap`, so a pattern that never changes
//! (or changes beyond the cap) costs one bounded pass; the caller re-resolves at the cap.

use std::time::Duration;

use chrono::Duration as ChronoDuration;

use super::cron::CronSchedule;
use super::wall_clock::WallClock;
use super::zone::{civil_at, first_offset_change, instant_at, offset_at};

/// The default bound of a forward scan: 8 days, so a weekly pattern always finds its
/// next change.
pub const DEFAULT_SCAN_CAP: Duration = Duration::from_secs(8 * 24 * 3600);

impl CronSchedule {
    /// The earliest instant after `t` at which [`matches`](Self::matches) differs from
    /// `matches(t)`: a civil minute boundary in the zone, or a transition that moves civil
    /// time onto a minute that matches differently. Returns `cap` if there is none before
    /// it (a `cap` not after `t` is taken as `t` + 1 ms).
    pub fn next_change_after(&self, t: WallClock, cap: WallClock) -> WallClock {
        let cap = cap.max(t.plus_millis(1));
        let state = self.matches(t);
        let mut cursor = t;
        while cursor < cap {
            let offset = offset_at(self.zone, cursor);
            let civil = civil_at(cursor, offset);
            // The civil search may stop a day past the cap's civil date under this offset.
            let last_date = (civil_at(cap, offset) + ChronoDuration::days(1)).date();
            let flip = if state {
                self.pattern.next_mismatch(civil, last_date)
            } else {
                self.pattern
                    .first_match_from(civil + ChronoDuration::minutes(1), last_date)
            };
            let candidate = flip.map_or(cap, |c| instant_at(c, offset).min(cap));
            match first_offset_change(self.zone, cursor, candidate) {
                Some(transition) => {
                    if transition >= cap {
                        return cap;
                    }
                    if self.matches(transition) != state {
                        return transition;
                    }
                    cursor = transition;
                }
                None => return candidate,
            }
        }
        cap
    }
}
