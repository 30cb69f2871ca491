//! `Schedules`: where quota actors find their keys' read-time functions (seed 003), and
//! how they place their clock's timestamps on the calendar.
//!
//! A key's schedule or allowance comes from the coordinator's own [`PolicyTable`] (the
//! overrides and policy file of the process that runs the actors), looked up once when
//! the key's actor starts: the actor, not each caller, owns the calendar, so every process
//! sharing the coordinator sees one allowance counter and one schedule in force.
//!
//! A coordinator can start in any process that joins the admission directory (first, or
//! by failover), so the schedules travel as a value: in the
//! [`CoordinatorSpec`](crate::CoordinatorSpec) a process joins with (kept by its client
//! for a takeover), and from there in the [`RuntimeConfig`](crate::RuntimeConfig) of the
//! actors it starts. Simulated runtimes pass theirs in the config. Two engines in one
//! process each keep their own.
//!
//! The actors' clock counts [`Timestamp`]s; a schedule needs UTC. The mapping is
//! [`WallClock::from_timestamp`] with an *anchor*, the wall-clock instant of
//! `Timestamp::ZERO`: [`WallClock::UNIX_EPOCH`] for the real clock
//! ([`TokioClock::system`](crate::TokioClock::system) already counts from the Unix epoch,
//! read in `clock.rs`, the one annotated place), a replay's `start_at` for simulated time.

use std::sync::Arc;

use tollgate_quota::{Policy, PolicyTable, ReadTime, WallClock};

use crate::key::CanonicalKey;

/// The read-time functions of the keys, and the clock's anchor on the calendar.
#[derive(Debug, Clone, Default)]
pub struct Schedules {
    table: Option<Arc<PolicyTable>>,
    anchor: WallClock,
}

impl Schedules {
    /// No key has a schedule or an allowance (the anchor is the Unix epoch).
    pub fn none() -> Self {
        Schedules::default()
    }

    /// The read-time functions of `table`, for a clock whose `Timestamp::ZERO` is `anchor`.
    pub fn new(table: Arc<PolicyTable>, anchor: WallClock) -> Self {
        Schedules {
            table: Some(table),
            anchor,
        }
    }

    /// The wall-clock instant of `Timestamp::ZERO`.
    pub fn anchor(&self) -> WallClock {
        self.anchor
    }

    /// The key's base policy and read-time function, if it has one.
    pub fn for_key(&self, key: &CanonicalKey) -> Option<(Policy, ReadTime)> {
        let table = self.table.as_ref()?;
        let key = key.quota_key();
        let read_time = table.read_time_for_key(key)?.clone();
        Some((table.policy_for_key(key), read_time))
    }
}
