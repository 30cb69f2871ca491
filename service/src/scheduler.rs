//! `Scheduler`: fires each `[[schedule]]` entry's target at its instants.
//!
//! The instants come from the shared schedule module (`tollgate_quota::schedule`: cron +
//! time zone → next instant, pure) behind [`NextFire`]; this file only decides and
//! waits. Its DST rule: a fire time that does not exist (clocks spring forward) fires at
//! the first valid instant after the gap; a repeated hour (clocks fall back) fires once,
//! in its first pass. Per entry it keeps a **cursor**: every instant up to the cursor has been
//! handled. The cursor is stored in the history after each step, so a restart knows
//! what it missed.
//!
//! [`decide`] is the whole policy, a pure function with table tests:
//! - the next instant after the cursor is in the future → sleep until it;
//! - it has passed → fire (at start-up: only with `catch_up`, and once however many
//!   instants were missed), and move the cursor to now.
//!
//! Time comes from the injected clock and tokio's timer, so tests run it on paused time.

use std::sync::Arc;
use std::time::Duration;

use tollgate_quota::schedule::{CronSchedule, WallClock};
use tollgate_quota::{Clock, Timestamp};

/// The next instant strictly after a given one (the shared schedule module).
pub trait NextFire: Send + Sync + std::fmt::Debug {
    /// The first fire instant after `after`, or `None` if there is none.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp>;
}

/// A cron pattern in a time zone ([`CronSchedule`], the shared schedule module) as a
/// [`NextFire`]. The service's clock counts from the Unix epoch, so timestamps and wall
/// clock instants share the anchor [`WallClock::UNIX_EPOCH`].
#[derive(Debug, Clone)]
pub struct CronNext(pub CronSchedule);

impl NextFire for CronNext {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let after = WallClock::from_timestamp(after, WallClock::UNIX_EPOCH);
        self.0
            .next_fire_after(after)
            .map(|at| at.to_timestamp(WallClock::UNIX_EPOCH))
    }
}

/// One `[[schedule]]` entry.
#[derive(Debug, Clone)]
pub struct ScheduleEntry {
    /// Stable identity for the stored cursor (target, cron, time zone).
    pub id: String,
    /// The target it scans.
    pub target: String,
    /// Its instants.
    pub next: Arc<dyn NextFire>,
}

/// Entries are equal when they fire the same target by the same rule (the id names the
/// target, the cron pattern and the time zone).
impl PartialEq for ScheduleEntry {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.target == other.target
    }
}

/// What to do now for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Submit the target now, then move the cursor to now.
    Fire,
    /// An instant was missed while the service was down and catch-up is off: move the
    /// cursor to now without firing.
    Skip,
    /// Nothing due before this instant.
    SleepUntil(Timestamp),
    /// The schedule has no further instants.
    Never,
}

/// Where an entry's runner is: its first decision after the service started, or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The first decision after start-up: a passed instant was missed while stopped.
    Starting,
    /// Any later decision.
    Running,
}

/// The scheduling policy (see the module docs), in `phase`.
pub fn decide(
    next: &dyn NextFire,
    cursor: Timestamp,
    now: Timestamp,
    phase: Phase,
    catch_up: bool,
) -> Decision {
    match next.next_after(cursor) {
        None => Decision::Never,
        Some(due) if due > now => Decision::SleepUntil(due),
        Some(_) if phase == Phase::Starting && !catch_up => Decision::Skip,
        Some(_) => Decision::Fire,
    }
}

/// Where cursors are kept (the history, in the service).
pub trait CursorStore: Send + Sync {
    /// The stored cursor of entry `id`.
    fn cursor(&self, id: &str) -> Option<Timestamp>;
    /// Store entry `id`'s cursor.
    fn set_cursor(&self, id: &str, at: Timestamp);
}

/// Runs one entry until the future is dropped. `fire` submits the target.
pub async fn run_entry(
    entry: ScheduleEntry,
    clock: Arc<dyn Clock>,
    store: Arc<dyn CursorStore>,
    catch_up: bool,
    fire: Arc<dyn Fn(&str) + Send + Sync>,
) {
    let mut phase = Phase::Starting;
    let mut cursor = store.cursor(&entry.id).unwrap_or_else(|| {
        // First sight of this entry: nothing before now was missed.
        let now = clock.now();
        store.set_cursor(&entry.id, now);
        now
    });
    loop {
        let now = clock.now();
        match decide(entry.next.as_ref(), cursor, now, phase, catch_up) {
            Decision::Never => {
                tracing::info!(schedule = %entry.id, "schedule has no further instants");
                return;
            }
            Decision::SleepUntil(due) => {
                phase = Phase::Running;
                let wait = Duration::from_micros(due.as_micros().saturating_sub(now.as_micros()));
                tokio::time::sleep(wait).await;
            }
            Decision::Fire => {
                tracing::info!(schedule = %entry.id, target = %entry.target, catch_up = phase == Phase::Starting, "schedule fires");
                fire(&entry.target);
                cursor = now;
                store.set_cursor(&entry.id, cursor);
                phase = Phase::Running;
            }
            Decision::Skip => {
                tracing::info!(schedule = %entry.id, "missed while stopped; catch_up is off, skipping");
                cursor = now;
                store.set_cursor(&entry.id, cursor);
                phase = Phase::Running;
            }
        }
    }
}

#[cfg(test)]
mod tests;
