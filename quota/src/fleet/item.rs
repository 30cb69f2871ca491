//! The fleet item of one canonical key: what every host reads and conditionally writes.
//!
//! The store encodes it attribute by attribute (the layout is documented beside the
//! DynamoDB encoding, `fleet/src/layout.rs`, and in docs/fleet.md); here it is plain data.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fleet::calendar::ItemCalendar;
use crate::fleet::penalty::FleetPenalty;
use crate::time::Timestamp;

pub use crate::fleet::host_id::HostId;

/// The state of one key shared by the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetItem {
    /// The theoretical arrival time: the due instant of the last token handed out (GCRA).
    /// Every grant's tokens are due after it, and it never moves backwards.
    pub tat: Timestamp,
    /// The refill rate (tokens/s) the last writer's policy had.
    pub rate: f64,
    /// The capacity the last writer's policy had.
    pub burst: f64,
    /// The fleet penalty: factor on the rate, cooldown, learned ceiling.
    pub penalty: FleetPenalty,
    /// Shared retry units not yet handed out.
    pub retry_units: u32,
    /// The retry capacity the last writer's policy had.
    pub retry_capacity: u32,
    /// Hosts' last writes (each by the writer's own clock).
    pub hosts: BTreeMap<HostId, Timestamp>,
    /// The key's calendar (issue 23): `None` while no host declared a schedule or an
    /// allowance, so an unscheduled key's item carries nothing more. With one, `rate` and
    /// `burst` are the parameters in force (strictest among the hosts seen), not the last
    /// writer's.
    #[serde(skip)]
    pub calendar: Option<ItemCalendar>,
}

impl FleetItem {
    /// A new key's item: nothing handed out, full retry units, no penalty.
    pub fn fresh(rate: f64, burst: f64, retry_capacity: u32) -> Self {
        FleetItem {
            tat: Timestamp::ZERO,
            rate,
            burst,
            penalty: FleetPenalty::default(),
            retry_units: retry_capacity,
            retry_capacity,
            hosts: BTreeMap::new(),
            calendar: None,
        }
    }

    /// The latest instant the item knows of: its `tat` or a host's last write (the
    /// table's TTL counts from it).
    pub fn last_touched(&self) -> Timestamp {
        self.hosts.values().copied().fold(self.tat, Timestamp::max)
    }

    /// Hosts whose last write is within `window` of `now`, at least 1.
    pub fn hosts_seen(&self, now: Timestamp, window: Duration) -> usize {
        let since = now.saturating_sub(window);
        self.hosts.values().filter(|t| **t >= since).count().max(1)
    }
}
