//! `Engine`: this process's place in admission.
//!
//! Opening an engine resolves the admission directory and joins it: the first process
//! takes the coordinator lock, opens the sled state and hosts the quota actors; any later
//! one becomes a client of its Unix socket (and takes over if the coordinator goes away).
//! Either way the engine hands out the same `Send + Clone` admission handle. Closing it
//! hands the coordinator role over gracefully (graceful records, clean-shutdown mark,
//! sled closed, lock released) or closes the client's connection.

use tollgate_actors::{connect, Admission, AdmissionError, AdmissionHandle};
use tollgate_quota::overrides::PolicyTable;
use tollgate_storage::{AdmissionDir, StorageError};

use crate::config::EngineConfig;

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
    admission: Admission,
}

impl Engine {
    /// Resolve the admission directory and join it, as coordinator or client.
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let dir = AdmissionDir::resolve(&config.dir_env)?;
        // Any coordinator this process starts (now or by failover) enforces the
        // configuration's schedules and allowances; the actors' clock counts Unix time.
        tollgate_actors::Schedules::new(
            std::sync::Arc::new(config.policies.clone()),
            tollgate_quota::WallClock::UNIX_EPOCH,
        )
        .install_for_this_process();
        let admission = connect(&dir)?;
        Ok(Engine {
            policies: config.policies,
            admission,
        })
    }

    /// The admission handle (`Send + Clone`, usable from any tokio runtime).
    pub fn admission(&self) -> AdmissionHandle {
        self.admission.handle()
    }

    /// The effective policies.
    pub fn policies(&self) -> &PolicyTable {
        &self.policies
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
