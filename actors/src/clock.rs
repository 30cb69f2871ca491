//! The clock the actors use: tokio's (pausable) monotonic time, anchored to a wall-clock
//! epoch so that timestamps agree across processes.
//!
//! This is the one place in tollgate that reads real time. The anchor is read once, at
//! construction; afterwards time advances with `tokio::time::Instant`, so a test that
//! pauses tokio's clock drives every actor timer and every admission decision together.

use std::time::{SystemTime, UNIX_EPOCH};

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
            started: tokio::time::Instant::now(),
            epoch_at_start: at,
        }
    }

    /// A clock anchored at the current Unix time, so processes agree on instants.
    pub fn system() -> Self {
        TokioClock::starting_at(unix_now())
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.epoch_at_start + self.started.elapsed()
    }
}

/// The current Unix time in microseconds.
#[allow(clippy::disallowed_methods)] // clock: the single annotated wall-clock read
pub fn unix_now() -> Timestamp {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_micros(since.as_micros() as u64)
}
