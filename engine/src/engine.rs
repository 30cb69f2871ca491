//! `Engine`: this process's place in admission.
//!
//! Opening an engine resolves the admission directory and joins it: the first process
//! takes the coordinator lock, opens the sled state and hosts the quota actors; any later
//! one becomes a client of its Unix socket (and takes over if the coordinator goes away).
//! A coordinator it starts, first or by that takeover, enforces the configuration's
//! [`CoordinatorSpec`](tollgate_actors::CoordinatorSpec) (its policies' schedules, its
//! fleet mode): each engine carries its own, so two engines in one process never see
//! each other's.
//! Either way the engine hands out the same `Send + Clone` admission handle. Closing it
//! hands the coordinator role over gracefully (graceful records, clean-shutdown mark,
//! sled closed, lock released) or closes the client's connection.

use tollgate_actors::{connect, Admission, AdmissionError, AdmissionHandle, BreakerUse};
use tollgate_quota::overrides::PolicyTable;
use tollgate_storage::{AdmissionDir, StorageError};

use crate::config::EngineConfig;
use crate::fleet_degraded::DegradedNotes;

/// Why an engine could not open or close.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The admission directory or its state is unusable.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Joining or leaving admission failed.
    #[error(transparent)]
    Admission(#[from] AdmissionError),
}

/// A running engine.
#[derive(Debug)]
pub struct Engine {
    policies: PolicyTable,
    fleet_notes: DegradedNotes,
    admission: Admission,
    breakers: BreakerUse,
}

impl Engine {
    /// Resolve the admission directory and join it, as coordinator or client.
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let dir = AdmissionDir::resolve(&config.dir_env)?;
        let fleet_notes = DegradedNotes::for_spec(&config.fleet);
        let admission = connect(&dir, config.coordinator_spec())?;
        Ok(Engine {
            policies: config.policies,
            fleet_notes,
            admission,
            breakers: BreakerUse::On,
        })
    }

    /// Have this engine's calls consult the circuit breakers or not ([`BreakerUse::Off`]:
    /// a diagnostic control, `TOLLGATE_BREAKERS=off`).
    pub fn with_breakers(mut self, breakers: BreakerUse) -> Engine {
        self.breakers = breakers;
        self
    }

    /// The admission handle (`Send + Clone`, usable from any tokio runtime).
    pub fn admission(&self) -> AdmissionHandle {
        self.admission.handle().with_breakers(self.breakers)
    }

    /// The effective policies.
    pub fn policies(&self) -> &PolicyTable {
        &self.policies
    }

    /// Whether a scan's end asks which of its keys degraded (in fleet mode only).
    pub fn fleet_notes(&self) -> DegradedNotes {
        self.fleet_notes
    }

    /// The admission directory in use.
    pub fn admission_dir(&self) -> &AdmissionDir {
        self.admission.dir()
    }

    /// True if this process holds the coordinator role (it may gain it later by takeover).
    pub fn is_coordinator(&self) -> bool {
        self.admission.is_coordinator()
    }

    /// Leave admission: hand the coordinator role over gracefully, or disconnect.
    pub async fn close(self) -> Result<(), EngineError> {
        self.admission.shutdown().await?;
        Ok(())
    }
}
