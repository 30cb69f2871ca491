//! `CoordinatorSpec`: what a coordinator enforces, passed as a value to [`connect`].
//!
//! Why a value and not a process-wide install: a coordinator starts in whichever process
//! joins an admission directory first, or in a client whose coordinator went away, so
//! every process that may coordinate must know the schedules and the fleet settings to
//! enforce. Held in a static, two engines in one process (or two tests in one binary)
//! would share whatever was installed last. Held in the spec, each [`connect`] carries its
//! own: the coordinator it starts uses it, and its client keeps it for a takeover (a
//! client that becomes coordinator starts with the same spec).
//!
//! [`connect`]: crate::connect

use std::sync::Arc;

use tollgate_quota::{PolicyTable, WallClock};

use crate::fleet::FleetSpec;
use crate::schedules::Schedules;

/// The settings any coordinator started for one [`connect`](crate::connect) enforces.
#[derive(Debug, Clone, Default)]
pub struct CoordinatorSpec {
    /// The keys' schedules and allowances (seed 003), and the clock's anchor.
    pub schedules: Schedules,
    /// Fleet mode: the shared table for quota blocks and, if set, breakers (`None`:
    /// this host's quota and breakers are its own).
    pub fleet: Option<FleetSpec>,
}

impl CoordinatorSpec {
    /// No schedules, no fleet mode: every key runs on its plain policy.
    pub fn none() -> Self {
        CoordinatorSpec::default()
    }

    /// The schedules and allowances of `policies` on the real clock (whose
    /// `Timestamp::ZERO` is the Unix epoch), without fleet mode.
    pub fn enforcing(policies: Arc<PolicyTable>) -> Self {
        CoordinatorSpec {
            schedules: Schedules::new(policies, WallClock::UNIX_EPOCH),
            fleet: None,
        }
    }

    /// `self` in fleet mode on `fleet` (`None`: without fleet mode).
    pub fn with_fleet(mut self, fleet: Option<FleetSpec>) -> Self {
        self.fleet = fleet;
        self
    }
}
