//! Cron schedules in IANA time zones, and what tollgate builds on them: scheduled
//! policies and calendar allowances (seed 003), and the service's scan schedules.
//!
//! Pure like the rest of the crate: no clock is read; every function takes the instant
//! as a [`WallClock`] (UTC milliseconds; see `wall_clock.rs` for its mapping to the
//! actors' [`Timestamp`](crate::Timestamp)).
//!
//! # Layout
//! - `wall_clock`: [`WallClock`], the UTC instant type, and its anchor mapping.
//! - `error`: [`ScheduleError`], which names the part that is wrong, never its text.
//! - `pattern`: a 5-field cron pattern (croner syntax, parsed by croner) matched against
//!   civil minutes, with searches that skip whole months, days and hours.
//! - `zone`: offsets, transitions and the fire instant of a civil minute (chrono-tz).
//! - `cron`: [`CronSchedule`] = pattern + zone; `matches(t)`.
//! - `fire`: `next_fire_after(t)` and `last_fire_at_or_before(t)`, with the DST rule
//!   (a skipped time fires at the end of the gap; a repeated one fires once).
//! - `change`: `next_change_after(t, cap)`, the valid-until scan.
//! - `policy`: [`PolicySchedule`] and [`resolve`] → [`EffectivePolicy`].
//! - `allowance`: [`Allowance`], its periods, and the monotonic [`AllowanceCounter`].
//! - `read_time`: [`ReadTime`], at most one of the two per key.

mod allowance;
mod change;
mod cron;
mod error;
mod fire;
mod pattern;
mod policy;
mod read_time;
mod wall_clock;
mod zone;

pub use allowance::{
    Allowance, AllowanceCounter, AllowanceDenial, AllowancePeriod, InvalidAmount,
    MAX_ALLOWANCE_AMOUNT,
};
pub use change::DEFAULT_SCAN_CAP;
pub use cron::CronSchedule;
pub use error::{CronField, ScheduleError};
pub use policy::{
    resolve, EffectivePolicy, PolicySchedule, ScheduleEntry, TooManyEntries, MAX_SCHEDULE_ENTRIES,
};
pub use read_time::ReadTime;
pub use wall_clock::WallClock;
