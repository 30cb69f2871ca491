//! Time as data. The admission maths never reads a clock: every function takes `now` as a
//! [`Timestamp`] and a denial returns the [`Timestamp`] at which to ask again.
//!
//! A timestamp counts microseconds since an epoch chosen by the [`Clock`] that made it.
//! Processes that share quota state must agree on that epoch, so the production clock
//! counts from the Unix epoch; tests use a fake clock that starts wherever they like.
//! Microseconds keep a timestamp in a `u64` for half a million years and are finer than
//! any AWS rate we pace.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// An instant, in microseconds since the clock's epoch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The clock's epoch.
    pub const ZERO: Timestamp = Timestamp(0);

    /// A timestamp `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Timestamp(micros)
    }

    /// A timestamp `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis * 1_000)
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later (clocks may step back).
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self - d`, clamped at the epoch.
    pub fn saturating_sub(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_sub(duration_micros(d)))
    }
}

/// A duration in whole microseconds, rounded up so a computed wake-up is never early.
pub fn duration_micros(d: Duration) -> u64 {
    let micros = d.as_micros();
    let rounded = if d.subsec_nanos().is_multiple_of(1_000) {
        micros
    } else {
        micros + 1
    };
    u64::try_from(rounded).unwrap_or(u64::MAX)
}

/// Seconds as a duration, rounded up to the microsecond; negative or NaN become zero.
pub fn secs_ceil(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    let micros = (secs * 1_000_000.0).ceil();
    if micros >= u64::MAX as f64 {
        Duration::from_micros(u64::MAX)
    } else {
        Duration::from_micros(micros as u64)
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(duration_micros(d)))
    }
}

impl Sub<Timestamp> for Timestamp {
    type Output = Duration;
    /// Saturating: an earlier minus a later timestamp is zero.
    fn sub(self, rhs: Timestamp) -> Duration {
        self.saturating_since(rhs)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// Where the current time comes from. Implementations outside this crate read a real or
/// simulated clock; this crate only ever receives the value.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakeups_round_up() {
        assert_eq!(duration_micros(Duration::from_nanos(1)), 1);
        assert_eq!(duration_micros(Duration::from_nanos(1_000)), 1);
        assert_eq!(secs_ceil(0.25), Duration::from_millis(250));
        assert_eq!(secs_ceil(1.0 / 3.0), Duration::from_micros(333_334));
        assert_eq!(secs_ceil(-1.0), Duration::ZERO);
        assert_eq!(secs_ceil(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp::from_millis(5);
        assert_eq!(Timestamp::ZERO - t, Duration::ZERO);
        assert_eq!(t - Timestamp::ZERO, Duration::from_millis(5));
        assert_eq!(t.saturating_sub(Duration::from_secs(1)), Timestamp::ZERO);
    }
}
