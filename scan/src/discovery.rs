//! `Discovery`: the engine-level facade over the supervisor. It starts the supervisor on
//! its own actor thread and offers `discover(request) -> DiscoveryReport`, plus scan
//! handles for callers that want progress or cancellation.
//!
//! Everything here is a thin wrapper over messages (`StartScan`, `CancelScan`,
//! `GetProgress`, `AwaitReport`): embedders that prefer actix can take
//! [`Discovery::supervisor`] and send them directly, from any tokio runtime (the `Addr`
//! is `Send`).

use std::sync::Arc;
use std::thread::JoinHandle;

use actix::{Actor, Addr, MailboxError};
use tokio::sync::oneshot;

use crate::organization::{
    OrganizationHandle, OrganizationReport, OrganizationRequest, OrganizationRequestError,
};
use crate::request::{DiscoveryRequest, RequestError};
use crate::supervisor::{
    AwaitReport, CancelScan, ForgetScan, StartOrganizationScan, StartScan, Supervisor,
    SupervisorDeps, UnknownScan,
};
use tollgate_collectors::output::DiscoveryReport;
use tollgate_collectors::{DatasetProgress, Progress};
use tollgate_engine::aws::telemetry::{NoTelemetry, TelemetrySink};
use tollgate_engine::aws::ScanId;
use tollgate_engine::engine::Engine;
use tollgate_engine::throttling::ScanTelemetry;

/// Why a scan could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The request was refused before any AWS call.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The discovery runtime stopped (its thread is gone).
    #[error("the discovery runtime stopped; start a new Discovery")]
    Stopped,
    /// The scan id is unknown.
    #[error(transparent)]
    UnknownScan(#[from] UnknownScan),
    /// The organization request was refused before any AWS call.
    #[error(transparent)]
    Organization(#[from] OrganizationRequestError),
}

impl From<crate::organization::handle::RuntimeStopped> for DiscoveryError {
    fn from(_: crate::organization::handle::RuntimeStopped) -> Self {
        DiscoveryError::Stopped
    }
}

impl From<MailboxError> for DiscoveryError {
    fn from(_: MailboxError) -> Self {
        DiscoveryError::Stopped
    }
}

/// The discovery runtime: a supervisor on its own actor thread.
#[derive(Debug)]
pub struct Discovery {
    supervisor: Addr<Supervisor>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Discovery {
    /// Start discovery over `engine`'s admission and policies; attempt events go to
    /// `telemetry` (and to `tracing` at debug level).
    pub fn start(engine: &Engine, telemetry: Option<Arc<dyn TelemetrySink>>) -> Discovery {
        let deps = SupervisorDeps {
            admission: engine.admission(),
            policies: engine.policies().clone(),
            telemetry: ScanTelemetry::new(telemetry.unwrap_or_else(|| Arc::new(NoTelemetry))),
            http: tollgate_engine::aws::default_http_client(),
            fleet_notes: engine.fleet_notes(),
        };
        Discovery::start_with(deps)
    }

    /// Start discovery over explicit dependencies (tests, custom admission).
    pub fn start_with(deps: SupervisorDeps) -> Discovery {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tollgate-discovery".into())
            .spawn(move || {
                let system = actix::System::new();
                system.block_on(async move {
                    // The collectors await their admissions here: a client of another
                    // process's coordinator reads its answers on this thread too.
                    deps.admission.read_answers_here();
                    let supervisor = Supervisor::new(deps).start();
                    let _ = ready_tx.send(supervisor);
                    let _ = stop_rx.await;
                });
            })
            .expect("spawning the discovery thread");
        let supervisor = ready_rx
            .recv()
            .expect("the discovery thread starts its supervisor");
        Discovery {
            supervisor,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// The supervisor, for callers that send messages themselves.
    pub fn supervisor(&self) -> Addr<Supervisor> {
        self.supervisor.clone()
    }

    /// Open a scan; it runs in the background.
    pub async fn start_scan(
        &self,
        request: DiscoveryRequest,
    ) -> Result<ScanHandle, DiscoveryError> {
        let started = self.supervisor.send(StartScan(request)).await??;
        Ok(ScanHandle {
            scan_id: started.scan_id,
            progress: started.progress,
            supervisor: self.supervisor.clone(),
        })
    }

    /// Run one scan to the end. The supervisor forgets the scan once its report is
    /// here (nobody else holds its id), so a long-lived runtime running scan after scan
    /// holds none of their reports.
    pub async fn discover(
        &self,
        request: DiscoveryRequest,
    ) -> Result<DiscoveryReport, DiscoveryError> {
        let scan = self.start_scan(request).await?;
        let report = scan.report().await;
        if report.is_ok() {
            self.supervisor.send(ForgetScan(scan.id())).await?;
        }
        report
    }

    /// Open an organization scan (see [`crate::organization`]); it runs in the
    /// background. The handle gives per-account progress, cancellation and the report.
    pub async fn start_organization_scan(
        &self,
        request: OrganizationRequest,
    ) -> Result<OrganizationHandle, DiscoveryError> {
        Ok(self
            .supervisor
            .send(StartOrganizationScan(request))
            .await??)
    }

    /// Run one organization scan to the end.
    pub async fn discover_organization(
        &self,
        request: OrganizationRequest,
    ) -> Result<OrganizationReport, DiscoveryError> {
        Ok(self
            .start_organization_scan(request)
            .await?
            .report()
            .await?)
    }

    /// Stop the actor thread (scans still running are dropped).
    pub fn shutdown(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// A running (or finished) scan.
#[derive(Debug, Clone)]
pub struct ScanHandle {
    scan_id: ScanId,
    progress: Vec<Progress>,
    supervisor: Addr<Supervisor>,
}

impl ScanHandle {
    /// The scan id.
    pub fn id(&self) -> ScanId {
        self.scan_id
    }

    /// Every dataset's progress now (no message round trip).
    pub fn progress(&self) -> Vec<DatasetProgress> {
        self.progress.iter().map(Progress::snapshot).collect()
    }

    /// Cancel the scan; its report still arrives, unfinished datasets `cancelled`.
    /// False if it had already finished or been cancelled.
    pub async fn cancel(&self) -> Result<bool, DiscoveryError> {
        Ok(self.supervisor.send(CancelScan(self.scan_id)).await?)
    }

    /// Wait for the report.
    pub async fn report(&self) -> Result<DiscoveryReport, DiscoveryError> {
        let (reply, answer) = oneshot::channel();
        self.supervisor
            .send(AwaitReport {
                scan_id: self.scan_id,
                reply,
            })
            .await?;
        Ok(answer.await.map_err(|_| DiscoveryError::Stopped)??)
    }
}

/// `engine.discovery(telemetry)`: a discovery runtime over an engine's admission. The
/// engine is the crate below this one, so the method comes with this trait (in
/// `tollgate_scan::discovery` and the `tollgate` facade's prelude of re-exports).
pub trait EngineDiscovery {
    /// Start a discovery runtime over this engine's admission (see [`Discovery::start`]).
    fn discovery(&self, telemetry: Option<Arc<dyn TelemetrySink>>) -> Discovery;
}

impl EngineDiscovery for Engine {
    fn discovery(&self, telemetry: Option<Arc<dyn TelemetrySink>>) -> Discovery {
        Discovery::start(self, telemetry)
    }
}
