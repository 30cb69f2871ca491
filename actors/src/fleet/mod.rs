//! Fleet mode's seam in the actors: where a coordinator's quota actors find the shared
//! table, without this crate knowing the AWS SDK.
//!
//! The table is a [`FleetStore`]: get an item, put one on condition of its version. The
//! DynamoDB implementation lives in `tollgate-fleet`; an in-memory one ([`MemoryFleetStore`])
//! serves paused-time tests. [`exchange`] is the read-compute-write loop around the pure
//! `tollgate_quota::fleet::take_block`, retried on conflict with a fresh read.
//!
//! A process that wants fleet mode installs a [`FleetInstall`] at startup
//! ([`FleetInstall::install_for_this_process`], like the schedules); every coordinator
//! this process starts then runs its keys under fleet blocks, with a host id stored in
//! its admission directory ([`host_id`]). Without an install nothing changes.
//!
//! Breakers in fleet mode (issue 14) are shared through [`breakers`]: a breaker item per
//! scope beside the quota items, read and written only while a scope fails.

pub mod breakers;
mod exchange;
pub mod host_id;
mod memory;
mod store;

use std::sync::{Arc, RwLock};

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

/// Fleet mode as a process installs it: the table and the settings; the host id comes
/// from the admission directory of each coordinator the process starts.
#[derive(Clone)]
pub struct FleetInstall {
    pub store: Arc<dyn FleetStore>,
    pub config: FleetConfig,
}

impl std::fmt::Debug for FleetInstall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetInstall")
            .field("store", &self.store.describe())
            .field("config", &self.config)
            .finish()
    }
}

static THIS_PROCESS: RwLock<Option<FleetInstall>> = RwLock::new(None);

impl FleetInstall {
    /// Make `self` the fleet mode of every coordinator this process starts from now on.
    pub fn install_for_this_process(self) {
        if let Ok(mut slot) = THIS_PROCESS.write() {
            *slot = Some(self);
        }
    }

    /// The fleet mode installed for this process, if any.
    pub fn for_this_process() -> Option<FleetInstall> {
        THIS_PROCESS.read().ok().and_then(|slot| slot.clone())
    }

    /// The setup for a coordinator whose host id is `host`.
    pub fn setup(&self, host: HostId) -> FleetSetup {
        FleetSetup {
            store: self.store.clone(),
            config: self.config,
            host,
        }
    }
}
