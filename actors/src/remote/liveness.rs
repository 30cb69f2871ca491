//! When a client pings a silent coordinator and when it gives it up (see `wire`'s module
//! docs, "Liveness"): the constants and the [`LivenessTimes`] a client carries on its
//! `Link`. Its own file because both the link and the connection thread read it.

use std::time::Duration;

/// Silence (while requests wait) after which a client pings the coordinator.
pub(super) const PING_AFTER: Duration = Duration::from_secs(1);
/// How long an unanswered ping may wait before the coordinator is given up on.
pub(super) const UNRESPONSIVE_AFTER: Duration = Duration::from_secs(5);
/// The tick's period when no delegated reader needs watching.
pub(super) const LIVENESS_INTERVAL: Duration = Duration::from_millis(500);

/// The liveness timings of one client (see the module docs, "Liveness"). Always
/// [`LivenessTimes::DEFAULT`] in a running process; the tests shorten them to check the
/// same rule in a fraction of a second on the real clock the connection thread runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LivenessTimes {
    pub(super) ping_after: Duration,
    pub(super) unresponsive_after: Duration,
    /// The tick's period when no delegated reader needs watching.
    pub(super) interval: Duration,
}

impl LivenessTimes {
    pub(super) const DEFAULT: LivenessTimes = LivenessTimes {
        ping_after: PING_AFTER,
        unresponsive_after: UNRESPONSIVE_AFTER,
        interval: LIVENESS_INTERVAL,
    };
}
