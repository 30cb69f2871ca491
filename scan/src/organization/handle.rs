//! `OrganizationHandle`: a running (or finished) organization scan, usable from any
//! tokio runtime: per-account progress without a message round trip, cancellation, and
//! the report.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::organization::progress::{OrganizationProgress, ProgressBoard};
use crate::organization::report::OrganizationReport;
use tollgate_engine::aws::ScanId;

/// What the supervisor answers to `StartOrganizationScan`: the handle's parts.
#[derive(Debug, Clone)]
pub struct OrganizationHandle {
    pub(crate) scan_id: ScanId,
    pub(crate) progress: ProgressBoard,
    pub(crate) cancel: CancellationToken,
    pub(crate) report: watch::Receiver<Option<Arc<OrganizationReport>>>,
}

impl OrganizationHandle {
    /// The organization scan's id (its hub calls' attribution; each account's scan has
    /// its own id, named by its report).
    pub fn id(&self) -> ScanId {
        self.scan_id
    }

    /// Every account's progress now.
    pub fn progress(&self) -> OrganizationProgress {
        self.progress.snapshot()
    }

    /// Each account's report as soon as its scan finishes, for a caller that stores
    /// accounts one by one (`discover --store`: a crash loses at most the accounts in
    /// flight). Call it once right after the start: reports are kept from the first
    /// call on (an account that finished before it is only in the final report), and
    /// each is returned once.
    pub fn take_finished_accounts(&self) -> Vec<tollgate_collectors::DiscoveryReport> {
        self.progress.keep_finished();
        self.progress.take_finished()
    }

    /// Whether the report is ready.
    pub fn is_finished(&self) -> bool {
        self.report.borrow().is_some()
    }

    /// Cancel the scan: queued accounts are skipped `cancelled`, running accounts' scans
    /// are cancelled (their reports still arrive, unfinished datasets `cancelled`), and
    /// the report is still delivered. False if it had already finished or been cancelled.
    pub fn cancel(&self) -> bool {
        if self.is_finished() || self.cancel.is_cancelled() {
            return false;
        }
        self.cancel.cancel();
        true
    }

    /// Wait for the report.
    pub async fn report(&self) -> Result<OrganizationReport, RuntimeStopped> {
        let mut report = self.report.clone();
        let ready = report
            .wait_for(Option::is_some)
            .await
            .map_err(|_| RuntimeStopped)?;
        ready.as_deref().cloned().ok_or(RuntimeStopped)
    }
}

/// The discovery runtime stopped before the organization scan's report was ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the discovery runtime stopped before the organization scan's report; start a new Discovery"
)]
pub struct RuntimeStopped;
