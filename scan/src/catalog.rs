//! The catalog commands' lifecycle (seed 000: status, initialisation and supported-type
//! listing use the discovery's lifecycle): one request budget — a scan id, the request's
//! deadline and cancellation — then the one scan set-up every scan makes
//! ([`crate::scan_setup::prepare`]: identity → gate, regions, `--regions all`), then the
//! catalog's work from [`tollgate_collectors::catalog`].

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_collectors::catalog::plan::{plan, DatasetPlan};
use tollgate_collectors::catalog::search;
use tollgate_collectors::catalog::setup::{self, InitPlan, InitReport};
use tollgate_collectors::catalog::{status, RegionStatus};
use tollgate_collectors::Dataset;
use tollgate_engine::aws::{CallContext, ScanId};

use crate::request::{DiscoveryRequest, RegionSource};
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

/// `discover --catalog`'s plan: the request narrowed to what the catalog names.
#[derive(Debug, Clone)]
pub struct CatalogScan {
    /// The request to run: the datasets the catalog found (and those it does not index),
    /// in the regions where it found them (and those it does not cover). `None` when the
    /// catalog holds none of the selected types in any scanned region.
    pub request: Option<DiscoveryRequest>,
    /// The datasets left out: the catalog covers every scanned region and holds none.
    pub skipped: Vec<Dataset>,
    /// What the user is told once (no index, regions not covered, catalog unavailable).
    pub notes: Vec<String>,
}

/// Read the catalog for `request` and narrow it (see [`CatalogScan`]). The request's
/// regions are resolved first (`--regions all` included); the narrowed request lists
/// them. Datasets run over the union of their regions: a dataset may be listed in a
/// region where the catalog found only another dataset's resources.
pub async fn plan_scan(
    request: DiscoveryRequest,
    deps: SupervisorDeps,
    cancel: CancellationToken,
) -> Result<CatalogScan, SetupError> {
    let scan_id = ScanId(fastrand::u64(1..));
    let ctx = context(scan_id, &request, &cancel);
    let setup = prepare(request.clone(), deps, scan_id, cancel).await?;
    let mut narrowed = request.clone();
    narrowed.regions = setup.regions.clone();
    narrowed.region_source = RegionSource::Listed;
    let account = setup.account.as_deref();
    let findings =
        match search::collect(&setup.gate, &setup.sdk, &ctx, &setup.regions, account).await {
            Ok(findings) => findings,
            Err(e) => {
                let note = format!("the catalog could not be read ({e}): every dataset is swept");
                return Ok(CatalogScan {
                    request: Some(narrowed),
                    skipped: Vec::new(),
                    notes: vec![note],
                });
            }
        };
    let mut datasets = Vec::new();
    let mut skipped = Vec::new();
    let mut regions: Vec<String> = Vec::new();
    for dataset in request.effective_datasets() {
        match plan(dataset, &setup.regions, &findings) {
            DatasetPlan::Load { regions: r, .. } => {
                datasets.push(dataset);
                regions.extend(r);
            }
            DatasetPlan::Skip => skipped.push(dataset),
        }
    }
    regions.sort();
    regions.dedup();
    narrowed.datasets = datasets;
    narrowed.regions = regions;
    let request = (!narrowed.datasets.is_empty()).then_some(narrowed);
    Ok(CatalogScan {
        request,
        skipped,
        notes: findings.notes,
    })
}
