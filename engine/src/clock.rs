//! The engine's monotonic time: one function, [`now`], the one place engine code reads
//! tokio's clock.
//!
//! Why tokio's clock and not a wall clock? Deadlines, backoff sleeps and telemetry
//! durations are all `tokio::time::Instant`s, and tokio's clock can be paused and
//! advanced: a test that pauses it drives every deadline, sleep and measurement together,
//! just as `tollgate_actors::TokioClock` does for admission. Reading it in one annotated
//! place keeps `clippy.toml`'s ban on clock reads meaningful everywhere else.

use tokio::time::Instant;

/// The current instant on tokio's (pausable) monotonic clock.
#[allow(clippy::disallowed_methods)] // clock: the engine's single annotated monotonic read
pub(crate) fn now() -> Instant {
    Instant::now()
}
