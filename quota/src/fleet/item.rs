//! The fleet item of one canonical key: what every host reads and conditionally writes.
//!
//! The store encodes it attribute by attribute (the layout is documented beside the
//! DynamoDB encoding, `fleet/src/layout.rs`, and in docs/fleet.md); here it is plain data.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fleet::penalty::FleetPenalty;
use crate::time::Timestamp;

/// A host's identity on the item (see `tollgate-fleet` for how it is chosen).
pub type HostId = String;

/// One host's outstanding block: granted tokens and when it lapses (item time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostBlock {
    /// Tokens granted (spent or not: the item cannot tell, so all count until expiry).
    pub tokens: u64,
    /// After this instant (item time) the block no longer counts as outstanding.
    pub expires_at: Timestamp,
}

/// The state of one key shared by the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetItem {
    /// Tokens not yet handed out, as of `at`.
    pub level: f64,
    /// The item's timestamp: refill is computed from it, and it never moves backwards.
    pub at: Timestamp,
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
    /// Outstanding blocks, by host.
    pub blocks: BTreeMap<HostId, HostBlock>,
    /// Hosts' last writes (item time).
    pub hosts: BTreeMap<HostId, Timestamp>,
}

impl FleetItem {
    /// A new key's item: a full level, full retry units, no penalty.
    pub fn fresh(rate: f64, burst: f64, retry_capacity: u32, now: Timestamp) -> Self {
        FleetItem {
            level: burst,
            at: now,
            rate,
            burst,
            penalty: FleetPenalty::default(),
            retry_units: retry_capacity,
            retry_capacity,
            blocks: BTreeMap::new(),
            hosts: BTreeMap::new(),
        }
    }

    /// Tokens in blocks of hosts other than `host` that are unexpired at `now`.
    pub fn outstanding_except(&self, host: &str, now: Timestamp) -> u64 {
        self.blocks
            .iter()
            .filter(|(h, b)| h.as_str() != host && b.expires_at > now)
            .map(|(_, b)| b.tokens)
            .sum()
    }

    /// Tokens in every block unexpired at `now`.
    pub fn outstanding(&self, now: Timestamp) -> u64 {
        self.outstanding_except("", now)
    }

    /// Hosts whose last write is within `window` of `now` (item time), at least 1.
    pub fn hosts_seen(&self, now: Timestamp, window: Duration) -> usize {
        let since = now.saturating_sub(window);
        self.hosts.values().filter(|t| **t >= since).count().max(1)
    }
}
