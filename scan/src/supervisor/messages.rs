//! The supervisor's messages, one concern each: embedders send the first four; collectors
//! and the scan's own setup send the rest.

use actix::Message;
use tokio::sync::oneshot;

use crate::organization::{OrganizationHandle, OrganizationRequest, OrganizationRequestError};
use crate::request::{DiscoveryRequest, RequestError};
use crate::scan_setup::MemberScan;
use tollgate_collectors::output::DiscoveryReport;
use tollgate_collectors::{DatasetProgress, Progress};
use tollgate_engine::aws::ScanId;

/// Open a scan: answers at once with its id and progress counters; the scan runs on.
#[derive(Debug, Message)]
#[rtype(result = "Result<ScanStarted, RequestError>")]
pub struct StartScan(pub DiscoveryRequest);

/// A scan that was opened.
#[derive(Debug, Clone)]
pub struct ScanStarted {
    /// Its id.
    pub scan_id: ScanId,
    /// One counter set per dataset, readable at any time.
    pub progress: Vec<Progress>,
}

/// Cancel a scan: its queued admission waiters are removed, in-flight requests abort,
/// and the report (with unfinished datasets `cancelled`) is delivered to waiters.
/// Answers false for an unknown or already finished scan.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "bool")]
pub struct CancelScan(pub ScanId);

/// A snapshot of a scan's progress; `None` for an unknown scan.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Option<Vec<DatasetProgress>>")]
pub struct GetProgress(pub ScanId);

/// Wait for a scan's report. The answer arrives on the sender once the scan finishes
/// (at once if it already has); `Err(UnknownScan)` if there is no such scan.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AwaitReport {
    /// The scan.
    pub scan_id: ScanId,
    /// Where the report goes.
    pub reply: oneshot::Sender<Result<DiscoveryReport, UnknownScan>>,
}

/// No scan has this id (or its report was already forgotten).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no scan {0} is known to this discovery runtime")]
pub struct UnknownScan(pub ScanId);

/// Forget a finished scan's report (embedders that run many scans).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "bool")]
pub struct ForgetScan(pub ScanId);

/// How many scans the supervisor holds, and how many of those still hold their setup
/// (SDK configuration, credentials, gate): what a long-lived runtime keeps per scan.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "ScanCount")]
pub struct CountScans;

/// The answer to [`CountScans`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanCount {
    /// Scans running, or finished and not yet forgotten.
    pub scans: usize,
    /// Of those, the ones holding their setup (only running ones should).
    pub holding_setup: usize,
}

/// A collector finished its dataset (defined beside the collector actor that sends it).
pub use tollgate_collectors::actor::DatasetFinished;

/// Open an organization scan (see [`crate::organization`]): answers at once with its
/// handle (id, per-account progress, cancellation, report); the scan runs on this
/// runtime's actor thread.
#[derive(Debug, Message)]
#[rtype(result = "Result<OrganizationHandle, OrganizationRequestError>")]
pub struct StartOrganizationScan(pub OrganizationRequest);

/// Open one member account's scan of an organization scan (sent by the organization's
/// run): like [`StartScan`], with the account's identity and credentials given.
#[derive(Debug, Message)]
#[rtype(result = "Result<ScanStarted, RequestError>")]
pub struct StartMemberScan(pub MemberScan);
