//! `Engine`: this process's place in admission.
//!
//! Opening an engine resolves the admission directory, takes its coordinator lock within
//! 5 s, opens the sled state and starts the quota actors on their own thread. Closing it
//! retires the actors (graceful records), flushes, and marks the state cleanly shut down,
//! so the next owner resumes exactly instead of conservatively.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::closable_store::ClosableStore;
use tollgate_actors::{AdmissionError, AdmissionHandle, AdmissionRuntime, RuntimeConfig};
use tollgate_quota::overrides::PolicyTable;
use tollgate_storage::{AdmissionDir, CoordinatorLock, PreviousShutdown, SledStore, StorageError};

use crate::config::EngineConfig;

/// How long taking the admission directory may take before it is an error.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an engine could not open or close.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The admission directory or its state is unusable.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The admission runtime failed.
    #[error(transparent)]
    Admission(#[from] AdmissionError),
}

/// A running engine.
pub struct Engine {
    dir: AdmissionDir,
    policies: PolicyTable,
    store: Arc<ClosableStore<SledStore>>,
    runtime: Option<AdmissionRuntime>,
    previous_shutdown: PreviousShutdown,
    _lock: CoordinatorLock,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.dir)
            .field("previous_shutdown", &self.previous_shutdown)
            .finish()
    }
}

impl Engine {
    /// Open the admission directory and start admission.
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let dir = AdmissionDir::resolve(&config.dir_env)?;
        let lock = CoordinatorLock::acquire_within(&dir, LOCK_TIMEOUT)?;
        let opened = SledStore::open(&dir, &lock)?;
        let store = Arc::new(ClosableStore::new(Arc::new(opened.store)));
        let runtime = AdmissionRuntime::start(RuntimeConfig::for_this_process(store.clone()))?;
        Ok(Engine {
            dir,
            policies: config.policies,
            store,
            runtime: Some(runtime),
            previous_shutdown: opened.previous_shutdown,
            _lock: lock,
        })
    }

    /// The admission handle (`Send + Clone`, usable from any tokio runtime).
    pub fn admission(&self) -> AdmissionHandle {
        self.runtime
            .as_ref()
            .map(AdmissionRuntime::handle)
            .expect("the runtime lives until close")
    }

    /// The effective policies.
    pub fn policies(&self) -> &PolicyTable {
        &self.policies
    }

    /// The admission directory in use.
    pub fn admission_dir(&self) -> &AdmissionDir {
        &self.dir
    }

    /// How the previous owner of the state shut down.
    pub fn previous_shutdown(&self) -> PreviousShutdown {
        self.previous_shutdown
    }

    /// Retire the actors, flush, and mark the state cleanly shut down.
    pub async fn close(mut self) -> Result<(), EngineError> {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown().await?;
        }
        // Close sled even if callers still hold admission handles: the next owner (in this
        // process or another) must be able to open it.
        if let Some(sled) = self.store.close() {
            sled.mark_clean_shutdown()?;
        }
        Ok(())
    }
}
