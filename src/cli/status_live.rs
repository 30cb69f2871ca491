//! The live half of `tollgate status`: ask the running coordinator over its socket.
//!
//! Status joins admission like any process (so if the coordinator vanished a moment ago,
//! status may briefly take the role itself and hand it back on exit), asks for the
//! coordinator's pid, its connected clients and every key's state, then leaves. Since it
//! may take the role, it joins with the spec any engine of `config` would (the policies'
//! schedules, fleet mode when TOLLGATE_FLEET_TABLE is set).

use tollgate_actors::{connect, CoordinationStatus};
use tollgate_engine::EngineConfig;
use tollgate_storage::AdmissionDir;

/// The coordinator's view, or an error naming the directory.
pub fn fetch(dir: &AdmissionDir, config: EngineConfig) -> anyhow::Result<CoordinationStatus> {
    let config = config.with_fleet(tollgate_fleet::spec_from_env()?);
    let admission = connect(dir, config.coordinator_spec())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let status = admission.handle().coordination().await;
        admission.shutdown().await?;
        Ok(status?)
    })
}
