//! `ScanManager`: the service's scans, from submission to the history.
//!
//! - **Join**: a request whose [`JoinKey`] equals a queued or running scan's gets that
//!   scan's id (`joined: true`); no second scan runs.
//! - **Guard** ([`guard`]): at most `max_scans_per_account` scans of one account run at
//!   once; an on-demand scan of an account scanned less than `cooldown` ago, or with a
//!   scan already waiting for its cap, is refused ([`ManagerError::Refused`], HTTP 429)
//!   unless forced; scheduled scans are exempt from the refusals.
//! - **Queue**: at most `max_concurrent_scans` run; the rest wait `queued`, first come
//!   first served (skipping scans whose account is at its cap), and start as running
//!   scans finish.
//! - **Run**: each running scan is one engine scan, opened with the supervisor's
//!   `StartScan` and awaited with `AwaitReport` on a task of the service's runtime.
//! - **Finish**: the record and report are written and flushed to the [`History`]
//!   before the scan leaves the active table (so a reader sees it running or stored,
//!   never neither); then the supervisor is told to `ForgetScan`, so a long-running
//!   service holds no finished scan in memory.
//! - **Cancel**: a queued scan never starts and is stored `cancelled` with every dataset
//!   cancelled; a running one gets `CancelScan` (queued admissions removed, in-flight
//!   calls aborted) and is stored with what it collected.
//! - **Stop** ([`ScanManager::shutdown`]): queued and running scans are cancelled and
//!   stored `interrupted`, waiting at most [`SHUTDOWN_GRACE`].
//!
//! The report a scan stores is the engine's, with `scan_id` set to the service's id
//! (the one the API and the history know it by).

mod finish;
pub mod guard;
mod views;

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix::Addr;
use tokio::sync::Notify;
use tollgate_collectors::Progress;
use tollgate_engine::aws::ScanId;
use tollgate_quota::Clock;
use tollgate_scan::organization::OrganizationHandle;
use tollgate_scan::supervisor::StartOrganizationScan;
use tollgate_scan::supervisor::{CancelScan, StartScan, Supervisor, STOP_GRACE};

use crate::config::Retention;
use crate::history::{History, HistoryError};
use crate::metrics::ServiceMetrics;
use crate::record::{ScanRecord, ScanStatus, ScanSummary};
use crate::scan_request::{JoinKey, ScanOrigin, ScanRequest};
use guard::{AccountSelector, AccountState, GuardSettings, LatestScan, Refusal};

/// How long [`ScanManager::shutdown`] waits for cancelled scans to store their reports.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(STOP_GRACE.as_secs() + 5);

/// A request the manager refused, or could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// No scan has this id (or retention dropped it).
    #[error("no scan {0}")]
    UnknownScan(String),
    /// The scan is queued or running: its report does not exist yet.
    #[error("scan {0} is {1}; its report is available once it finishes")]
    NotFinished(String, &'static str),
    /// The scan finished without a report (interrupted by a stop).
    #[error("scan {0} was interrupted before it produced a report")]
    NoReport(String),
    /// The scan already finished; there is nothing to cancel.
    #[error("scan {0} already finished ({1})")]
    AlreadyFinished(String, &'static str),
    /// The service is stopping and takes no new scans.
    #[error("the service is stopping")]
    Stopping,
    /// The guard rails refused an on-demand scan (cooldown or busy): HTTP 429.
    #[error("{0}")]
    Refused(Refusal),
    /// The history failed.
    #[error(transparent)]
    History(#[from] HistoryError),
}

/// What `submit` answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Submitted {
    /// The scan that will produce the report.
    pub scan_id: String,
    /// True if an identical scan was already queued or running.
    pub joined: bool,
}

/// What the manager needs from its host.
pub struct ManagerDeps {
    /// The discovery runtime's supervisor.
    pub supervisor: Addr<Supervisor>,
    /// Where records and reports go.
    pub history: History,
    /// Wall-clock time for records (injected).
    pub clock: Arc<dyn Clock>,
    /// Where scan tasks run.
    pub runtime: tokio::runtime::Handle,
    /// Scans running at once.
    pub max_concurrent_scans: NonZeroUsize,
    /// History retention, applied after each finished scan.
    pub retention: Retention,
    /// Scan counters and durations.
    pub metrics: Arc<ServiceMetrics>,
    /// Per-account cap and cooldown ([`guard`]).
    pub guard: GuardSettings,
    /// The inventory store every finished scan's report is written to (a URL), if any.
    pub store: Option<String>,
}

/// The scan manager (cheap to clone; clones share everything).
#[derive(Clone)]
pub struct ScanManager {
    shared: Arc<Shared>,
}

struct Shared {
    deps: ManagerDeps,
    state: Mutex<State>,
    /// Signalled whenever a scan leaves the active table.
    left: Notify,
}

#[derive(Default)]
struct State {
    active: HashMap<String, Active>,
    queue: VecDeque<String>,
    running: usize,
    stopping: bool,
    /// Each account's latest finished scan, for the cooldown.
    latest: HashMap<AccountSelector, LatestScan>,
}

/// A queued or running scan.
struct Active {
    record: ScanRecord,
    key: JoinKey,
    account: AccountSelector,
    request: ScanRequest,
    /// The engine's scan, once started.
    engine: Option<(ScanId, Vec<Progress>)>,
    /// An organization scan's handle, once started (per-account progress, cancel).
    organization: Option<OrganizationHandle>,
    cancel_requested: bool,
    interrupted: bool,
}

fn new_scan_id() -> String {
    format!("scan-{:016x}", fastrand::u64(1..))
}

impl ScanManager {
    /// A manager over `deps`. Call [`ScanManager::recover`] before serving.
    pub fn new(deps: ManagerDeps) -> ScanManager {
        ScanManager {
            shared: Arc::new(Shared {
                deps,
                state: Mutex::new(State::default()),
                left: Notify::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> u64 {
        self.shared.deps.clock.now().as_micros()
    }

    /// At start-up: mark scans a killed service left queued or running `interrupted`,
    /// and apply retention. Returns the ids marked.
    pub async fn recover(&self) -> Result<Vec<String>, HistoryError> {
        let ids = self
            .shared
            .deps
            .history
            .interrupt_unfinished(self.now())
            .await?;
        for _ in &ids {
            self.shared
                .deps
                .metrics
                .scan_finished(ScanStatus::Interrupted, None);
        }
        self.shared
            .deps
            .history
            .apply_retention(self.shared.deps.retention, self.now())?;
        Ok(ids)
    }

    /// Submit a validated request, for `target` (a config target's name) or ad hoc. An
    /// identical queued or running scan is joined; otherwise the guard rails decide
    /// ([`guard::admit`]) before the scan is queued.
    pub fn submit(
        &self,
        target: Option<String>,
        request: impl Into<ScanRequest>,
        origin: ScanOrigin,
    ) -> Result<Submitted, ManagerError> {
        let request = request.into();
        let key = JoinKey::of(&request);
        let account = AccountSelector::of(&request);
        let mut state = self.state();
        if state.stopping {
            return Err(ManagerError::Stopping);
        }
        if let Some(active) = state.active.values().find(|a| a.key == key) {
            return Ok(Submitted {
                scan_id: active.record.scan_id.clone(),
                joined: true,
            });
        }
        let of_account = || state.active.values().filter(|a| a.account == account);
        let known = AccountState {
            latest: state.latest.get(&account),
            waiting: of_account()
                .filter(|a| a.record.status == ScanStatus::Queued)
                .map(|a| a.record.scan_id.as_str())
                .min_by_key(|id| state.queue.iter().position(|q| q == id)),
            running: of_account()
                .filter(|a| a.record.status == ScanStatus::Running)
                .count(),
        };
        guard::admit(&self.shared.deps.guard, origin, known, self.now())
            .map_err(ManagerError::Refused)?;
        let mut scan_id = new_scan_id();
        while state.active.contains_key(&scan_id) {
            scan_id = new_scan_id();
        }
        let record = ScanRecord::unstarted(
            scan_id.clone(),
            target,
            &request,
            ScanStatus::Queued,
            self.now(),
        );
        self.shared.deps.history.put(&record)?;
        state.active.insert(
            scan_id.clone(),
            Active {
                record,
                key,
                account,
                request,
                engine: None,
                organization: None,
                cancel_requested: false,
                interrupted: false,
            },
        );
        state.queue.push_back(scan_id.clone());
        self.pump(&mut state);
        Ok(Submitted {
            scan_id,
            joined: false,
        })
    }

    /// Start queued scans while there is room, oldest first, skipping those whose account
    /// is at its cap.
    fn pump(&self, state: &mut State) {
        while state.running < self.shared.deps.max_concurrent_scans.get() && !state.stopping {
            let next = {
                let account_of = |id: &String| state.active.get(id).map(|a| &a.account);
                let queue: Vec<&AccountSelector> =
                    state.queue.iter().filter_map(account_of).collect();
                let mut running: HashMap<&AccountSelector, usize> = HashMap::new();
                for active in state.active.values() {
                    if active.record.status == ScanStatus::Running {
                        *running.entry(&active.account).or_default() += 1;
                    }
                }
                guard::next_to_start(
                    &queue,
                    &running,
                    self.shared.deps.guard.max_scans_per_account,
                )
            };
            // Queue entries without an active scan were filtered out above; drop them.
            state.queue.retain(|id| state.active.contains_key(id));
            let Some(scan_id) = next.and_then(|i| state.queue.remove(i)) else {
                return;
            };
            let Some(active) = state.active.get_mut(&scan_id) else {
                continue;
            };
            state.running += 1;
            active.record.status = ScanStatus::Running;
            active.record.started_at = Some(self.now());
            if let Err(e) = self.shared.deps.history.put(&active.record) {
                tracing::warn!(%scan_id, error = %e, "could not record the scan's start");
            }
            let request = active.request.clone();
            let manager = self.clone();
            self.shared
                .deps
                .runtime
                .spawn(async move { manager.drive(scan_id, request).await });
        }
    }

    /// Cancel a queued or running scan. Returns its summary as it is now.
    pub async fn cancel(&self, scan_id: &str) -> Result<ScanSummary, ManagerError> {
        let queued = {
            let mut state = self.state();
            let Some(active) = state.active.get_mut(scan_id) else {
                drop(state);
                let record = self.stored(scan_id)?;
                return Err(ManagerError::AlreadyFinished(
                    scan_id.to_string(),
                    record.status.as_str(),
                ));
            };
            active.cancel_requested = true;
            if active.record.status == ScanStatus::Queued {
                state.queue.retain(|id| id != scan_id);
                state.active.remove(scan_id)
            } else {
                if let Some((engine_id, _)) = active.engine {
                    self.shared.deps.supervisor.do_send(CancelScan(engine_id));
                }
                if let Some(org) = &active.organization {
                    org.cancel();
                }
                let summary = active.record.summary();
                return Ok(summary);
            }
        };
        let active = queued.expect("a queued scan is in the table");
        let record = self.finish_unstarted(active, ScanStatus::Cancelled).await?;
        self.shared.left.notify_waiters();
        Ok(record.summary())
    }

    /// Stop: no new scans; queued and running ones are cancelled and stored
    /// `interrupted`. Waits at most [`SHUTDOWN_GRACE`] for running scans to store.
    pub async fn shutdown(&self) {
        let queued: Vec<Active> = {
            let mut state = self.state();
            state.stopping = true;
            let ids: Vec<String> = state.queue.drain(..).collect();
            for active in state.active.values_mut() {
                active.interrupted = true;
                if let Some((engine_id, _)) = active.engine {
                    self.shared.deps.supervisor.do_send(CancelScan(engine_id));
                }
                if let Some(org) = &active.organization {
                    org.cancel();
                }
            }
            ids.iter()
                .filter_map(|id| state.active.remove(id))
                .collect()
        };
        for active in queued {
            if let Err(e) = self.finish_unstarted(active, ScanStatus::Interrupted).await {
                tracing::warn!(error = %e, "could not store a queued scan as interrupted");
            }
        }
        let deadline = tollgate_actors::clock::monotonic_now() + SHUTDOWN_GRACE;
        loop {
            let left = self.shared.left.notified();
            if self.state().active.is_empty() {
                return;
            }
            if tokio::time::timeout_at(deadline, left).await.is_err() {
                tracing::warn!("scans still running after the shutdown grace; the next start marks them interrupted");
                return;
            }
        }
    }

    /// Scans queued and running now.
    pub fn active_counts(&self) -> (usize, usize) {
        let state = self.state();
        (state.queue.len(), state.running)
    }

    /// Open the engine scan, wait for its report, store it.
    async fn drive(&self, scan_id: String, request: ScanRequest) {
        let request = match request {
            ScanRequest::Account(request) => request,
            ScanRequest::Organization(org) => return self.drive_organization(scan_id, org).await,
        };
        let supervisor = self.shared.deps.supervisor.clone();
        let started = match supervisor.send(StartScan(request)).await {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => return self.finish_failed(&scan_id, e.to_string()).await,
            Err(_) => {
                return self
                    .finish_failed(&scan_id, "the discovery runtime stopped".into())
                    .await
            }
        };
        {
            let mut state = self.state();
            if let Some(active) = state.active.get_mut(&scan_id) {
                active.engine = Some((started.scan_id, started.progress.clone()));
                if active.cancel_requested || active.interrupted {
                    supervisor.do_send(CancelScan(started.scan_id));
                }
            }
        }
        let report = finish::await_report(&supervisor, started.scan_id).await;
        self.finish_started(&scan_id, started.scan_id, report).await;
    }

    /// Open the organization scan, wait for its report, store it.
    async fn drive_organization(
        &self,
        scan_id: String,
        request: tollgate_scan::organization::OrganizationRequest,
    ) {
        let supervisor = self.shared.deps.supervisor.clone();
        let handle = match supervisor.send(StartOrganizationScan(request)).await {
            Ok(Ok(handle)) => handle,
            Ok(Err(e)) => return self.finish_failed(&scan_id, e.to_string()).await,
            Err(_) => {
                return self
                    .finish_failed(&scan_id, "the discovery runtime stopped".into())
                    .await
            }
        };
        {
            let mut state = self.state();
            if let Some(active) = state.active.get_mut(&scan_id) {
                active.organization = Some(handle.clone());
                if active.cancel_requested || active.interrupted {
                    handle.cancel();
                }
            }
        }
        let report = handle.report().await.ok();
        self.finish_organization(&scan_id, &handle, report).await;
    }
}
