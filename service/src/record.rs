//! `ScanRecord`: what the service remembers of one scan — when it was queued, started and
//! finished, its status, and (once finished) each dataset's last progress. Records are
//! stored in the history; the API shows them as they are.

use serde::{Deserialize, Serialize};
use tollgate_collectors::DatasetProgress;
use tollgate_collectors::{DatasetStatus, DiscoveryReport};

/// A scan's status in the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanStatus {
    /// Waiting for a free slot (`max_concurrent_scans`).
    Queued,
    /// Collecting.
    Running,
    /// Every dataset complete.
    Complete,
    /// Some dataset partial.
    Partial,
    /// Some dataset failed.
    Failed,
    /// Cancelled by a user.
    Cancelled,
    /// The service stopped while it was queued or running.
    Interrupted,
}

impl ScanStatus {
    /// Every status, for metrics.
    pub const ALL: [ScanStatus; 7] = [
        ScanStatus::Queued,
        ScanStatus::Running,
        ScanStatus::Complete,
        ScanStatus::Partial,
        ScanStatus::Failed,
        ScanStatus::Cancelled,
        ScanStatus::Interrupted,
    ];

    /// The name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ScanStatus::Queued => "queued",
            ScanStatus::Running => "running",
            ScanStatus::Complete => "complete",
            ScanStatus::Partial => "partial",
            ScanStatus::Failed => "failed",
            ScanStatus::Cancelled => "cancelled",
            ScanStatus::Interrupted => "interrupted",
        }
    }

    /// Queued or running.
    pub fn is_active(self) -> bool {
        matches!(self, ScanStatus::Queued | ScanStatus::Running)
    }

    /// The status a finished report earns.
    pub fn of_report(report: &DiscoveryReport) -> ScanStatus {
        match report.overall_status() {
            DatasetStatus::Complete => ScanStatus::Complete,
            DatasetStatus::Partial => ScanStatus::Partial,
            DatasetStatus::Failed => ScanStatus::Failed,
            _ => ScanStatus::Cancelled,
        }
    }
}

/// One dataset's progress as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressView {
    /// Dataset name.
    pub dataset: String,
    /// `running`, or the dataset's final status.
    pub status: String,
    /// Resources found by listing.
    pub listed: u64,
    /// Per-resource calls finished.
    pub done: u64,
    /// Per-resource calls planned.
    pub planned: u64,
    /// Items collected.
    pub items: u64,
}

impl From<&DatasetProgress> for ProgressView {
    fn from(p: &DatasetProgress) -> Self {
        ProgressView {
            dataset: p.dataset.name().to_string(),
            status: p
                .finished
                .map_or("running", DatasetStatus::as_str)
                .to_string(),
            listed: p.listed,
            done: p.done,
            planned: p.planned,
            items: p.items,
        }
    }
}

/// One scan, as stored in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanRecord {
    /// `scan-<16 hex>`.
    pub scan_id: String,
    /// The config target it scans, `None` for an ad-hoc request.
    pub target: Option<String>,
    /// Where it is.
    pub status: ScanStatus,
    /// Microseconds since the epoch at queueing.
    pub queued_at: u64,
    /// Microseconds since the epoch at start.
    pub started_at: Option<u64>,
    /// Microseconds since the epoch at the end.
    pub finished_at: Option<u64>,
    /// The scanned account, once known.
    pub account: Option<String>,
    /// Regions asked for (empty: the AWS configuration's region).
    pub regions: Vec<String>,
    /// Datasets asked for.
    pub datasets: Vec<String>,
    /// Each dataset's last progress, kept when the scan finishes.
    pub final_progress: Vec<ProgressView>,
    /// An organization scan's accounts as they ended (empty for a one-account scan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub final_accounts: Vec<AccountView>,
    /// Whether and where its report went into the inventory store (absent: no store, or
    /// no report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreOutcome>,
}

/// What storing a finished scan in the inventory did (docs/inventory.md): the report's
/// `store` field, as `GET /v1/scans/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreOutcome {
    /// The store, its password redacted.
    pub url: String,
    pub stored: bool,
    /// The scan's number in the store (`GET /v1/changes?since=N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_written: Option<u64>,
    /// Why it was not stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A scan as `GET /v1/scans` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSummary {
    /// `scan-<16 hex>`.
    pub scan_id: String,
    /// The config target, `null` for an ad-hoc request.
    pub target: Option<String>,
    /// Where it is.
    pub status: ScanStatus,
    /// RFC 3339 UTC.
    pub queued_at: String,
    /// RFC 3339 UTC, once started.
    pub started_at: Option<String>,
    /// RFC 3339 UTC, once finished.
    pub finished_at: Option<String>,
    /// The scanned account, once known.
    pub account: Option<String>,
    /// While it runs: every account it has sent calls for so far (an organization
    /// target's many; empty once finished, where `account` and the report say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
    /// Regions asked for.
    pub regions: Vec<String>,
    /// Datasets asked for.
    pub datasets: Vec<String>,
}

/// A scan as `GET /v1/scans/{id}` shows it: the summary, per-dataset progress and, once
/// finished, its report's `throttling` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanDetail {
    /// The summary fields.
    #[serde(flatten)]
    pub summary: ScanSummary,
    /// One entry per dataset.
    pub progress: Vec<ProgressView>,
    /// The report's `throttling` block: `null` while the scan is active, for a scan
    /// without a report, and when nothing eventful happened.
    #[serde(default)]
    pub throttling: Option<tollgate_collectors::output::ThrottlingSummary>,
    /// The report's coverage entries by status, with the gaps (`null` while the scan is
    /// active and for a scan without a report).
    #[serde(default)]
    pub coverage: Option<tollgate_collectors::output::CoverageSummary>,
    /// An organization scan's accounts: live progress while it runs, each account's
    /// outcome after (absent for a one-account scan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<OrganizationView>,
    /// Whether and where the scan was stored in the inventory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreOutcome>,
}

/// An organization scan as `GET /v1/scans/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationView {
    /// Accounts `ListAccounts` returned; `null` while listing.
    pub listed: Option<u64>,
    /// Every account the scan covers (skipped ones included), in start order.
    pub accounts: Vec<AccountView>,
}

/// Where one member account of an organization scan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountState {
    /// Waiting for a slot.
    Queued,
    /// Assuming its role or scanning.
    Running,
    /// Its scan finished (`status` says how).
    Done,
    /// Not scanned (`reason` says why).
    Skipped,
}

/// One member account's progress or outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    /// The account id.
    pub account: String,
    /// Where it is.
    pub state: AccountState,
    /// Datasets of its scan finished.
    pub datasets_done: u64,
    /// Datasets its scan covers (0 before its scan started).
    pub datasets_total: u64,
    /// Done: its worst dataset status (`complete`, `partial`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Skipped: why (`excluded`, `role_not_assumable`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&tollgate_scan::organization::AccountProgress> for AccountView {
    fn from(p: &tollgate_scan::organization::AccountProgress) -> Self {
        use tollgate_scan::organization::AccountPhase;
        let (state, status, reason) = match p.phase {
            AccountPhase::Queued => (AccountState::Queued, None, None),
            AccountPhase::Assuming | AccountPhase::Scanning => (AccountState::Running, None, None),
            AccountPhase::Finished(s) => (AccountState::Done, Some(s.as_str().to_string()), None),
            AccountPhase::Skipped(r) => (AccountState::Skipped, None, Some(r.as_str().to_string())),
        };
        AccountView {
            account: p.account.clone(),
            state,
            datasets_done: p.datasets.iter().filter(|d| d.finished.is_some()).count() as u64,
            datasets_total: p.datasets.len() as u64,
            status,
            reason,
        }
    }
}

impl From<&tollgate_scan::organization::OrganizationProgress> for OrganizationView {
    fn from(p: &tollgate_scan::organization::OrganizationProgress) -> Self {
        OrganizationView {
            listed: p.listed,
            accounts: p.accounts.iter().map(AccountView::from).collect(),
        }
    }
}

fn rfc3339(micros: u64) -> String {
    tollgate_collectors::output::rfc3339(tollgate_quota::Timestamp::from_micros(micros))
}

impl ScanRecord {
    /// A scan of `request` that has not started, as submitted at `at` (microseconds).
    pub fn unstarted(
        scan_id: String,
        target: Option<String>,
        request: &tollgate_scan::request::DiscoveryRequest,
        status: ScanStatus,
        at: u64,
    ) -> ScanRecord {
        ScanRecord {
            scan_id,
            target,
            status,
            queued_at: at,
            started_at: None,
            finished_at: None,
            account: None,
            regions: request.regions.clone(),
            datasets: request
                .datasets
                .iter()
                .map(|d| d.name().to_string())
                .collect(),
            final_progress: Vec::new(),
            final_accounts: Vec::new(),
            store: None,
        }
    }

    /// The listed form.
    pub fn summary(&self) -> ScanSummary {
        ScanSummary {
            scan_id: self.scan_id.clone(),
            target: self.target.clone(),
            status: self.status,
            queued_at: rfc3339(self.queued_at),
            started_at: self.started_at.map(rfc3339),
            finished_at: self.finished_at.map(rfc3339),
            account: self.account.clone(),
            accounts: Vec::new(),
            regions: self.regions.clone(),
            datasets: self.datasets.clone(),
        }
    }

    /// Progress of a scan that is not running: its final snapshot, or (queued, or
    /// interrupted before any) zeros with the scan's status.
    pub fn stored_progress(&self) -> Vec<ProgressView> {
        if !self.final_progress.is_empty() {
            return self.final_progress.clone();
        }
        self.datasets
            .iter()
            .map(|d| ProgressView {
                dataset: d.clone(),
                status: self.status.as_str().to_string(),
                listed: 0,
                done: 0,
                planned: 0,
                items: 0,
            })
            .collect()
    }
}
