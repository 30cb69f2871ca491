//! The clock the actors use: tokio's (pausable) monotonic time, anchored to a wall-clock
//! epoch so that timestamps agree across processes.
//!
//! This is the one place in tollgate's library crates that reads real time, and
//! `clippy.toml` holds everything else to it: `std`'s and tokio's `Instant::now` and
//! `elapsed`, `SystemTime::now` and [`unix_now`] are disallowed elsewhere. There are
//! two readings here, both annotated:
//! - [`monotonic_now`]: tokio's monotonic instant, what sleeps, timers and deadlines
//!   (`tokio::time::Instant`) are measured against. It is injected the way tokio injects
//!   time: a test pauses the runtime (`start_paused`, `tokio::time::pause`) and every
//!   reading follows `advance`.
//! - the wall clock, read once per [`TokioClock::system`] to anchor it (and by
//!   [`unix_now`], kept for the benchmarks that time real processes).
//!
//! Timestamps (`tollgate_quota::Timestamp`) come from a [`Clock`] passed in: a
//! `TokioClock` in real use, whose anchor is read once at construction; afterwards it
//! advances with [`monotonic_now`], so a test that pauses tokio's clock drives every
//! actor timer and every admission decision together.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tollgate_quota::{Clock, Timestamp};

/// Timestamps from tokio's clock, anchored at `epoch_at_start`.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    started: tokio::time::Instant,
    epoch_at_start: Timestamp,
}

impl TokioClock {
    /// A clock whose first reading is `at`: for simulations.
    pub fn starting_at(at: Timestamp) -> Self {
        TokioClock {
            started: monotonic_now(),
            epoch_at_start: at,
        }
    }

    /// A clock anchored at the current Unix time, so processes agree on instants.
    pub fn system() -> Self {
        TokioClock::starting_at(wall_now())
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.epoch_at_start + since(self.started)
    }
}

/// tokio's monotonic instant now: the reference of every sleep, timer and deadline.
/// Paused and advanced with the runtime in tests; outside a runtime, the OS's clock.
#[allow(clippy::disallowed_methods)] // clock: the single annotated monotonic read
pub fn monotonic_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// How long ago `earlier` was on [`monotonic_now`]'s clock (zero if it is ahead).
pub fn since(earlier: tokio::time::Instant) -> Duration {
    monotonic_now().saturating_duration_since(earlier)
}

/// How long is left until `deadline` on [`monotonic_now`]'s clock (zero once it passed).
pub fn until(deadline: tokio::time::Instant) -> Duration {
    deadline.saturating_duration_since(monotonic_now())
}

/// The current Unix time in microseconds. Disallowed outside this module by
/// `clippy.toml`: libraries read a [`Clock`] that was passed in instead, and only the
/// benchmarks (which time real processes against each other) call this.
pub fn unix_now() -> Timestamp {
    wall_now()
}

/// The wall clock.
#[allow(clippy::disallowed_methods)] // clock: the single annotated wall-clock read
fn wall_now() -> Timestamp {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_micros(since.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_follows_paused_tokio_time() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let clock = TokioClock::starting_at(Timestamp::from_micros(1_000_000));
            let start = monotonic_now();
            let deadline = start + Duration::from_secs(5);
            tokio::time::advance(Duration::from_secs(2)).await;
            assert_eq!(clock.now(), Timestamp::from_micros(3_000_000));
            assert_eq!(since(start), Duration::from_secs(2));
            assert_eq!(until(deadline), Duration::from_secs(3));
            tokio::time::advance(Duration::from_secs(4)).await;
            assert_eq!(
                until(deadline),
                Duration::ZERO,
                "a passed deadline leaves zero"
            );
        });
    }
}
