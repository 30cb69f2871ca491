//! The live half of `tollgate status`: ask the running coordinator over its socket.
//!
//! Status joins admission like any process (so if the coordinator vanished a moment ago,
//! status may briefly take the role itself and hand it back on exit), asks for the
//! coordinator's pid, its connected clients and every key's state, then leaves.

use tollgate_actors::{connect, CoordinationStatus};
use tollgate_storage::AdmissionDir;

/// The coordinator's view, or an error naming the directory.
pub fn fetch(dir: &AdmissionDir) -> anyhow::Result<CoordinationStatus> {
    let admission = connect(dir)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let status = admission.handle().coordination().await;
        admission.shutdown().await?;
        Ok(status?)
    })
}
