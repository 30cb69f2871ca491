//! The catalog commands' lifecycle (seed 000: status, initialisation and supported-type
//! listing use the discovery's lifecycle): one request budget — a scan id, the request's
//! deadline and cancellation — then the one scan set-up every scan makes
//! ([`crate::scan_setup::prepare`]: identity → gate, regions, `--regions all`), then the
//! catalog's work from [`tollgate_collectors::catalog`].

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_collectors::catalog::setup::{self, InitPlan, InitReport};
use tollgate_collectors::catalog::{status, RegionStatus};
use tollgate_engine::aws::{CallContext, ScanId};

use crate::request::DiscoveryRequest;
use crate::scan_setup::{prepare, SetupError, SupervisorDeps};

/// `catalog status`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    /// The caller's account (`None`: unresolved; the probes ran on isolated admission).
    pub account: Option<String>,
    /// Why the account is unknown, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_note: Option<String>,
    /// Each region's status, sorted by region.
    pub regions: Vec<RegionStatus>,
}

/// The call context of a catalog command.
fn context(scan_id: ScanId, request: &DiscoveryRequest, cancel: &CancellationToken) -> CallContext {
    CallContext {
        scan_id,
        collector: "catalog",
        datasets: Vec::new(),
        deadline: monotonic_now() + request.timeout,
        cancel: cancel.clone(),
    }
}

/// `catalog status` for `request`'s regions (see [`status::status`]).
pub async fn catalog_status(
    request: DiscoveryRequest,
    deps: SupervisorDeps,
    cancel: CancellationToken,
) -> Result<CatalogStatus, SetupError> {
    let scan_id = ScanId(fastrand::u64(1..));
    let ctx = context(scan_id, &request, &cancel);
    let setup = prepare(request, deps, scan_id, cancel).await?;
    let regions = status::status(&setup.gate, &setup.sdk, &ctx, &setup.regions).await;
    Ok(CatalogStatus {
        account: setup.account.clone(),
        identity_note: setup.identity_note.clone(),
        regions,
    })
}

/// `catalog init` for `request`'s regions with `plan` (see [`setup::init`]).
pub async fn catalog_init(
    request: DiscoveryRequest,
    plan: InitPlan,
    deps: SupervisorDeps,
    cancel: CancellationToken,
) -> Result<InitReport, SetupError> {
    let scan_id = ScanId(fastrand::u64(1..));
    let ctx = context(scan_id, &request, &cancel);
    let setup = prepare(request, deps, scan_id, cancel).await?;
    Ok(setup::init(&setup.gate, &setup.sdk, &ctx, &setup.regions, &plan).await)
}
