//! Fleet mode's seam in the actors: where a coordinator's quota actors find the shared
//! table, without this crate knowing the AWS SDK.
//!
//! The table is a [`FleetStore`]: get an item, put one on condition of its version. The
//! DynamoDB implementation lives in `tollgate-fleet`; an in-memory one ([`MemoryFleetStore`])
//! serves paused-time tests. [`exchange`] is the read-compute-write loop around the pure
//! `tollgate_quota::fleet::take_block`, retried on conflict with a fresh read.
//!
//! A process that wants fleet mode passes a [`FleetSpec`] in the
//! [`CoordinatorSpec`](crate::CoordinatorSpec) it joins admission with; a coordinator it
//! starts (first, or by failover) then runs its keys under fleet blocks, with a host id
//! stored in its admission directory ([`host_id`]). Without one nothing changes.
//!
//! Breakers in fleet mode (issue 14) are shared through [`breakers`]: a breaker item per
//! scope beside the quota items, read and written only while a scope fails.

pub mod breakers;
mod exchange;
pub mod host_id;
mod memory;
mod store;

use std::sync::Arc;

pub use breakers::{BreakerLink, BreakerStore, MemoryBreakerStore, VersionedBreaker};
pub use exchange::{exchange, MAX_ATTEMPTS};
pub use memory::MemoryFleetStore;
pub use store::{FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, Versioned};
use tollgate_quota::fleet::{FleetConfig, HostId};

/// What a coordinator's actors need for fleet mode.
#[derive(Clone)]
pub struct FleetSetup {
    /// The shared table.
    pub store: Arc<dyn FleetStore>,
    /// Skew bound, spend time, on-error mode.
    pub config: FleetConfig,
    /// This host's id on the items.
    pub host: HostId,
}

impl std::fmt::Debug for FleetSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetSetup")
            .field("store", &self.store.describe())
            .field("config", &self.config)
            .field("host", &self.host)
            .finish()
    }
}

/// Fleet mode as a coordinator spec carries it: the table and the settings, and the
/// table the breakers are shared through (issue 14; `tollgate-fleet` uses the same one).
/// The host id comes from the admission directory of each coordinator started with it.
#[derive(Clone)]
pub struct FleetSpec {
    pub store: Arc<dyn FleetStore>,
    pub config: FleetConfig,
    /// Share the breakers through this table too (`None`: each host's own).
    pub breakers: Option<Arc<dyn BreakerStore>>,
}

impl std::fmt::Debug for FleetSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetSpec")
            .field("store", &self.store.describe())
            .field("config", &self.config)
            .field(
                "breakers",
                &self.breakers.as_ref().map(|b| b.describe_breakers()),
            )
            .finish()
    }
}

impl FleetSpec {
    /// The setup for a coordinator whose host id is `host`.
    pub fn setup(&self, host: HostId) -> FleetSetup {
        FleetSetup {
            store: self.store.clone(),
            config: self.config,
            host,
        }
    }

    /// The breaker link for a coordinator whose host id is `host`, if breakers are shared.
    pub fn breaker_link(&self, host: &HostId) -> Option<BreakerLink> {
        Some(BreakerLink {
            store: self.breakers.clone()?,
            host: host.clone(),
        })
    }
}
