//! What one call runs with: who it is for and what bounds it ([`CallContext`], [`ScanId`]),
//! and the gate's shared parts ([`GateInner`]).
//!
//! Split from [`crate::aws::call`] so that the dependencies point one way: the gate
//! (`call`) hands its inner parts to the retry owner (`retry`), and both read these types
//! from here; the retry owner never imports the gate.

use std::fmt;
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::AdmissionHandle;
use tollgate_quota::{AccountScope, Partition, PolicyTable};

use crate::aws::backoff::RetrySettings;
use crate::aws::telemetry::TelemetrySink;

/// A scan's id: the admission cancellation scope of its calls and the `scanId` of its
/// telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScanId(pub u64);

impl ScanId {
    /// The admission scope (`WaitOptions::scope`, `AdmissionHandle::cancel_scope`).
    pub fn scope(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ScanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scan-{:016x}", self.0)
    }
}

/// Who a call is for and what bounds it. Cheap to clone; one per collector or batch.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The scan that owns the call.
    pub scan_id: ScanId,
    /// The collector making it (`s3-buckets`).
    pub collector: &'static str,
    /// Datasets the call serves (telemetry sorts and deduplicates them).
    pub datasets: Vec<String>,
    /// The scan's deadline: admission waits, backoff and transport all end here.
    pub deadline: Instant,
    /// The scan's cancellation: queued attempts never dispatch, in-flight ones abort.
    pub cancel: CancellationToken,
}

/// The gate's parts: admission, policies, the caller's account, retry settings, telemetry
/// and the one shared inner HTTP client.
pub(crate) struct GateInner {
    pub admission: AdmissionHandle,
    pub policies: PolicyTable,
    pub partition: Partition,
    pub account: AccountScope,
    pub retry: RetrySettings,
    pub telemetry: Arc<dyn TelemetrySink>,
    pub http: SharedHttpClient,
    pub signed_request_max_wait: std::time::Duration,
}
