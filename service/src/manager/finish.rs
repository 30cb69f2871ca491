//! How a scan leaves the active table: its record and report stored (and flushed), the
//! supervisor told to forget it, retention applied, the next queued scan started.

use actix::Addr;
use tokio::sync::oneshot;
use tollgate_collectors::output::{rfc3339, DatasetReport, Reason, ReasonKind};
use tollgate_collectors::{DatasetStatus, DiscoveryReport};
use tollgate_engine::aws::ScanId;
use tollgate_quota::Timestamp;
use tollgate_scan::organization::{OrganizationHandle, OrganizationReport};
use tollgate_scan::supervisor::{AwaitReport, ForgetScan, Supervisor};
use tollgate_scan::DiscoveryRequest;

use super::{Active, ManagerError, ScanManager};
use crate::record::{OrganizationView, ProgressView, ScanRecord, ScanStatus, StoreOutcome};

/// Wait for an engine scan's report; `None` if the discovery runtime went away.
pub(super) async fn await_report(
    supervisor: &Addr<Supervisor>,
    scan_id: ScanId,
) -> Option<DiscoveryReport> {
    let (reply, answer) = oneshot::channel();
    supervisor.send(AwaitReport { scan_id, reply }).await.ok()?;
    answer.await.ok()?.ok()
}

/// A report for a scan that never reached the engine: every dataset `status`, one reason.
fn unstarted_report(
    record: &ScanRecord,
    status: DatasetStatus,
    why: &str,
    at: u64,
) -> DiscoveryReport {
    let at = rfc3339(Timestamp::from_micros(at));
    DiscoveryReport {
        scan_id: record.scan_id.clone(),
        partition: "aws".to_string(),
        account: None,
        identity_note: None,
        regions: record.regions.clone(),
        regions_reason: None,
        regions_source: None,
        started_at: at.clone(),
        finished_at: at,
        datasets: record
            .datasets
            .iter()
            .map(|d| {
                let report = DatasetReport {
                    status,
                    reasons: vec![Reason {
                        operation: "scan".to_string(),
                        field: None,
                        kind: ReasonKind::of_unfinished(status),
                        code: None,
                        message: why.to_string(),
                        count: 1,
                    }],
                    items: Vec::new(),
                    coverage: Vec::new(),
                };
                (d.clone(), report)
            })
            .collect(),
        throttling: Default::default(),
        fleet_degraded: Vec::new(),
    }
}

impl ScanManager {
    /// Write a finished scan's report to the inventory store, account by account; what
    /// happened, for its record. A store that fails costs the scan nothing: the report is
    /// kept in the history as always, and the record says why it was not stored.
    async fn store<R: serde::Serialize>(&self, report: Option<&R>) -> Option<StoreOutcome> {
        let url = self.shared.deps.store.clone()?;
        let report = serde_json::to_value(report?).ok()?;
        let counted = report.clone();
        let shown = tollgate_inventory::StoreUrl::parse(&url)
            .map(|u| u.redacted())
            .unwrap_or_else(|_| "(an unreadable store URL)".to_owned());
        let written = tokio::task::spawn_blocking(move || {
            tollgate_inventory::Store::open(&url)?.write_report(&report)
        })
        .await;
        Some(match written {
            Ok(Ok(summary)) => {
                self.shared.deps.metrics.inventory_stored(&counted);
                StoreOutcome {
                    url: summary.url,
                    stored: true,
                    scan: Some(summary.scan.0),
                    resources_written: Some(summary.counts.resources_written),
                    error: None,
                }
            }
            Ok(Err(e)) => {
                tracing::error!(store = %shown, error = %e, "a finished scan was not stored in the inventory");
                StoreOutcome {
                    url: shown,
                    stored: false,
                    scan: None,
                    resources_written: None,
                    error: Some(e.to_string()),
                }
            }
            Err(e) => StoreOutcome {
                url: shown,
                stored: false,
                scan: None,
                resources_written: None,
                error: Some(format!("the store's writer stopped: {e}")),
            },
        })
    }

    /// A queued scan cancelled or interrupted before it started.
    pub(super) async fn finish_unstarted(
        &self,
        active: Active,
        status: ScanStatus,
    ) -> Result<ScanRecord, ManagerError> {
        let now = self.now();
        let mut record = active.record;
        record.status = status;
        record.finished_at = Some(now);
        let report = match status {
            ScanStatus::Cancelled => Some(unstarted_report(
                &record,
                DatasetStatus::Cancelled,
                "cancelled while queued",
                now,
            )),
            // Nothing was collected: the record says `interrupted`, there is no report.
            _ => None,
        };
        self.shared
            .deps
            .history
            .finish(&record, report.as_ref())
            .await?;
        self.shared.deps.metrics.scan_finished(status, None);
        Ok(record)
    }

    /// A submission refused before it was queued (a scheduled scan whose credentials
    /// cannot be had): stored at once as a `failed` scan whose report says why, so the
    /// history and the page show the refusal. Returns its id.
    pub async fn record_refused(
        &self,
        target: Option<String>,
        request: &DiscoveryRequest,
        why: &str,
    ) -> Result<String, ManagerError> {
        let now = self.now();
        let record = ScanRecord {
            finished_at: Some(now),
            ..ScanRecord::unstarted(
                super::new_scan_id(),
                target,
                request,
                ScanStatus::Failed,
                now,
            )
        };
        let report = unstarted_report(&record, DatasetStatus::Failed, why, now);
        self.shared
            .deps
            .history
            .finish(&record, Some(&report))
            .await?;
        self.shared
            .deps
            .metrics
            .scan_finished(ScanStatus::Failed, None);
        self.shared
            .deps
            .history
            .apply_retention(self.shared.deps.retention, now)?;
        Ok(record.scan_id)
    }

    /// The engine refused the scan (or is gone): stored `failed` with a report saying why.
    pub(super) async fn finish_failed(&self, scan_id: &str, why: String) {
        let Some(mut record) = self.state().active.get(scan_id).map(|a| a.record.clone()) else {
            return;
        };
        let now = self.now();
        record.status = ScanStatus::Failed;
        record.finished_at = Some(now);
        let report = unstarted_report(&record, DatasetStatus::Failed, &why, now);
        if let Err(e) = self
            .shared
            .deps
            .history
            .finish(&record, Some(&report))
            .await
        {
            tracing::error!(%scan_id, error = %e, "could not store a failed scan");
        }
        self.shared
            .deps
            .metrics
            .scan_finished(ScanStatus::Failed, None);
        self.leave(scan_id, None);
    }

    /// A started scan's report arrived (or the runtime went away).
    pub(super) async fn finish_started(
        &self,
        scan_id: &str,
        engine_id: ScanId,
        report: Option<DiscoveryReport>,
    ) {
        let (mut record, cancel_requested, interrupted, progress) = {
            let state = self.state();
            let Some(active) = state.active.get(scan_id) else {
                return;
            };
            let progress: Vec<ProgressView> = active
                .engine
                .iter()
                .flat_map(|(_, p)| p.iter().map(|p| ProgressView::from(&p.snapshot())))
                .collect();
            (
                active.record.clone(),
                active.cancel_requested,
                active.interrupted,
                progress,
            )
        };
        let now = self.now();
        let report = report.map(|mut r| {
            r.scan_id = scan_id.to_string();
            r
        });
        record.status = match &report {
            _ if interrupted => ScanStatus::Interrupted,
            None => ScanStatus::Failed,
            Some(r) => match ScanStatus::of_report(r) {
                ScanStatus::Complete => ScanStatus::Complete,
                _ if cancel_requested => ScanStatus::Cancelled,
                other => other,
            },
        };
        record.finished_at = Some(now);
        record.account = report.as_ref().and_then(|r| r.account.clone());
        record.final_progress = progress;
        record.store = self.store(report.as_ref()).await;
        if let Err(e) = self
            .shared
            .deps
            .history
            .finish(&record, report.as_ref())
            .await
        {
            tracing::error!(%scan_id, error = %e, "could not store a finished scan");
        }
        let seconds = record
            .started_at
            .map(|s| now.saturating_sub(s) as f64 / 1e6);
        self.shared
            .deps
            .metrics
            .scan_finished(record.status, seconds);
        self.leave(scan_id, Some(engine_id));
    }

    /// An organization scan's report arrived (or the runtime went away): stored with
    /// each account's outcome, its status the report's worst.
    pub(super) async fn finish_organization(
        &self,
        scan_id: &str,
        handle: &OrganizationHandle,
        report: Option<OrganizationReport>,
    ) {
        let (mut record, cancel_requested, interrupted) = {
            let state = self.state();
            let Some(active) = state.active.get(scan_id) else {
                return;
            };
            (
                active.record.clone(),
                active.cancel_requested,
                active.interrupted,
            )
        };
        let now = self.now();
        let report = report.map(|mut r| {
            r.scan_id = scan_id.to_string();
            r
        });
        record.status = match &report {
            _ if interrupted => ScanStatus::Interrupted,
            None => ScanStatus::Failed,
            Some(r) => match r.overall_status() {
                DatasetStatus::Complete => ScanStatus::Complete,
                _ if cancel_requested => ScanStatus::Cancelled,
                DatasetStatus::Partial => ScanStatus::Partial,
                DatasetStatus::Failed => ScanStatus::Failed,
                _ => ScanStatus::Cancelled,
            },
        };
        record.finished_at = Some(now);
        record.account = report
            .as_ref()
            .and_then(|r| r.organization.caller_account.clone());
        record.final_accounts = OrganizationView::from(&handle.progress()).accounts;
        record.store = self.store(report.as_ref()).await;
        if let Err(e) = self
            .shared
            .deps
            .history
            .finish(&record, report.as_ref())
            .await
        {
            tracing::error!(%scan_id, error = %e, "could not store a finished organization scan");
        }
        let seconds = record
            .started_at
            .map(|s| now.saturating_sub(s) as f64 / 1e6);
        self.shared
            .deps
            .metrics
            .scan_finished(record.status, seconds);
        self.shared
            .deps
            .metrics
            .scan_accounts()
            .forget(&handle.id().to_string());
        self.leave(scan_id, None);
    }

    /// The scan is stored: drop it from the table and the supervisor, start its account's
    /// cooldown, start the next.
    fn leave(&self, scan_id: &str, engine_id: Option<ScanId>) {
        {
            let now = self.now();
            let mut state = self.state();
            super::guard::forget_cooled(&mut state.latest, &self.shared.deps.guard, now);
            if let Some(active) = state.active.remove(scan_id) {
                state.running = state.running.saturating_sub(1);
                state.latest.insert(
                    active.account,
                    super::guard::LatestScan {
                        scan_id: scan_id.to_string(),
                        finished_at: now,
                    },
                );
            }
            self.pump(&mut state);
        }
        if let Some(engine_id) = engine_id {
            self.shared.deps.supervisor.do_send(ForgetScan(engine_id));
            self.shared
                .deps
                .metrics
                .scan_accounts()
                .forget(&engine_id.to_string());
        }
        if let Err(e) = self
            .shared
            .deps
            .history
            .apply_retention(self.shared.deps.retention, self.now())
        {
            tracing::warn!(error = %e, "could not apply history retention");
        }
        self.shared.left.notify_waiters();
    }
}
