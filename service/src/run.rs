//! `RunningService`: everything the service is, wired together and started — history,
//! token, metrics, the discovery runtime over the given admission, the scan manager
//! (after recovering what a killed predecessor left), the HTTP API and one task per
//! `[[schedule]]` entry — and stopped in the right order (schedules, then scans stored
//! `interrupted`, then the API, then discovery).

use std::net::SocketAddr;
use std::sync::Arc;

use tollgate_actors::AdmissionHandle;
use tollgate_engine::aws::telemetry::TelemetrySink;
use tollgate_engine::fleet_degraded::DegradedNotes;
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::{Clock, PolicyTable};
use tollgate_scan::supervisor::SupervisorDeps;
use tollgate_scan::Discovery;

use crate::config::{ServiceConfig, StoreSetting};
use crate::history::{History, HistoryError};
use crate::http::{self, ApiState};
use crate::manager::{ManagerDeps, ScanManager};
use crate::metrics::ServiceMetrics;
use crate::scan_request::{ScanOrigin, ScanRequest};
use crate::scheduler::{run_entry, CursorStore};
use crate::state_dir::StateDir;
use crate::token::{ApiToken, TokenError};

/// What a service needs from its host.
pub struct ServiceOptions {
    /// Where the API listens.
    pub listen: SocketAddr,
    /// The validated configuration.
    pub config: ServiceConfig,
    /// Token and history live here.
    pub state_dir: StateDir,
    /// Admission (the coordinator's own handle in `tollgate serve`).
    pub admission: AdmissionHandle,
    /// The admission directory's path and how it was chosen, for `/v1/quotas`.
    pub admission_dir: (String, String),
    /// Effective policies.
    pub policies: PolicyTable,
    /// Wall-clock time for records.
    pub clock: Arc<dyn Clock>,
    /// Also write every attempt event here (`tollgate serve --telemetry FILE`); the
    /// metrics always get them.
    pub telemetry: Option<Arc<dyn TelemetrySink>>,
    /// Whether a scan's end asks which of its keys degraded (the coordinator runs in
    /// fleet mode).
    pub fleet_notes: DegradedNotes,
}

/// Attempt events to the metrics and to the user's sink.
#[derive(Debug)]
struct MetricsAnd(Arc<ServiceMetrics>, Arc<dyn TelemetrySink>);

impl TelemetrySink for MetricsAnd {
    fn record(&self, event: &tollgate_engine::aws::AttemptEvent) {
        self.0.record(event);
        self.1.record(event);
    }
}

/// The service could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The token file.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The history.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The listen address.
    #[error("cannot listen on {addr}: {source}; choose another address with --listen")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A started service.
pub struct RunningService {
    addrs: Vec<SocketAddr>,
    manager: ScanManager,
    server: actix_web::dev::ServerHandle,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    discovery: Discovery,
    token: ApiToken,
    schedules: Vec<tokio::task::JoinHandle<()>>,
}

/// One task per `[[schedule]]` entry; each submits its target (joining a scan of it
/// that is still running).
fn start_schedules(
    config: &ServiceConfig,
    manager: &ScanManager,
    clock: Arc<dyn Clock>,
    history: History,
) -> Vec<tokio::task::JoinHandle<()>> {
    let store: Arc<dyn CursorStore> = Arc::new(history);
    config
        .schedules
        .iter()
        .filter_map(|entry| {
            let request = config.targets.get(&entry.target)?.clone();
            let manager = manager.clone();
            let fire = Arc::new(move |target: &str| {
                let (manager, request, target) =
                    (manager.clone(), request.clone(), target.to_string());
                tokio::spawn(submit_scheduled(manager, target, request));
            });
            Some(tokio::spawn(run_entry(
                entry.clone(),
                clock.clone(),
                store.clone(),
                config.catch_up,
                fire,
            )))
        })
        .collect()
}

/// A scheduled submission: the same credentials check `POST /v1/scans` makes, then the
/// submission; a refusal is stored as a failed scan saying why (nobody is there to read
/// an HTTP error).
async fn submit_scheduled(manager: ScanManager, target: String, request: ScanRequest) {
    if let Err(e) = tollgate_engine::aws::check_credentials(request.credentials_source()).await {
        let why = e.to_string();
        match manager
            .record_refused(Some(target.clone()), &request, &why)
            .await
        {
            Ok(scan_id) => {
                tracing::warn!(%target, %scan_id, reason = %why, "scheduled scan failed its credentials check")
            }
            Err(e) => {
                tracing::error!(%target, error = %e, "could not store a refused scheduled scan")
            }
        }
        return;
    }
    match manager.submit(Some(target.clone()), request, ScanOrigin::Scheduled) {
        Ok(s) => {
            tracing::info!(%target, scan_id = %s.scan_id, joined = s.joined, "scheduled scan submitted")
        }
        Err(e) => tracing::warn!(%target, error = %e, "scheduled scan refused"),
    }
}

impl RunningService {
    /// Start everything; call from a multi-threaded tokio runtime.
    pub async fn start(options: ServiceOptions) -> Result<RunningService, ServiceError> {
        let token = ApiToken::load_or_create(&options.state_dir.token_path())?;
        let history = History::open(&options.state_dir.history_path())?;
        let history_store = history.clone();
        let store = match &options.config.store {
            StoreSetting::StateDir => Some(format!(
                "sqlite:{}",
                options.state_dir.inventory_path().display()
            )),
            StoreSetting::Off => None,
            StoreSetting::Url(url) => Some(url.clone()),
        };
        let metrics = Arc::new(ServiceMetrics::new());
        let sink: Arc<dyn TelemetrySink> = match options.telemetry {
            Some(user) => Arc::new(MetricsAnd(metrics.clone(), user)),
            None => metrics.clone(),
        };
        let discovery = Discovery::start_with(SupervisorDeps {
            admission: options.admission.clone(),
            policies: options.policies.clone(),
            telemetry: ScanTelemetry::new(sink),
            http: tollgate_engine::aws::default_http_client(),
            fleet_notes: options.fleet_notes,
        });
        let manager = ScanManager::new(ManagerDeps {
            supervisor: discovery.supervisor(),
            history,
            clock: options.clock.clone(),
            runtime: tokio::runtime::Handle::current(),
            max_concurrent_scans: options.config.max_concurrent_scans,
            retention: options.config.retention,
            metrics: metrics.clone(),
            guard: options.config.guard,
            store: store.clone(),
        });
        let interrupted = manager.recover().await?;
        if !interrupted.is_empty() {
            tracing::warn!(scans = ?interrupted, "scans left running by a stopped service are marked interrupted");
        }
        let bound = http::bind(
            options.listen,
            ApiState {
                manager: manager.clone(),
                token: token.clone(),
                metrics,
                admission: options.admission,
                admission_dir: options.admission_dir,
                targets: options.config.targets.clone(),
                store: store.clone(),
            },
        )
        .map_err(|source| ServiceError::Bind {
            addr: options.listen,
            source,
        })?;
        let server = bound.server.handle();
        let served = tokio::spawn(bound.server);
        let schedules = start_schedules(&options.config, &manager, options.clock, history_store);
        Ok(RunningService {
            addrs: bound.addrs,
            manager,
            server,
            served,
            discovery,
            token,
            schedules,
        })
    }

    /// The address the API listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// The scan manager (embedders, schedules).
    pub fn manager(&self) -> &ScanManager {
        &self.manager
    }

    /// The API token.
    pub fn token(&self) -> &ApiToken {
        &self.token
    }

    /// Stop: scans stored `interrupted`, the API closed, the discovery runtime stopped.
    pub async fn stop(self) {
        for schedule in &self.schedules {
            schedule.abort();
        }
        self.manager.shutdown().await;
        self.server.stop(true).await;
        let _ = self.served.await;
        let discovery = self.discovery;
        let _ = tokio::task::spawn_blocking(move || discovery.shutdown()).await;
    }
}
