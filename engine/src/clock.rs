//! The engine's monotonic time: one function, [`now`], that engine code reads tokio's clock
//! through.
//!
//! Why tokio's clock and not a wall clock? Deadlines, backoff sleeps and telemetry
//! durations are all `tokio::time::Instant`s, and tokio's clock can be paused and
//! advanced: a test that pauses it drives every deadline, sleep and measurement together,
//! just as `tollgate_actors::TokioClock` does for admission. The read itself is
//! [`tollgate_actors::clock::monotonic_now`], the workspace's one annotated place
//! (`clippy.toml` bans every other).

use tokio::time::Instant;

/// The current instant on tokio's (pausable) monotonic clock.
pub(crate) fn now() -> Instant {
    tollgate_actors::clock::monotonic_now()
}
