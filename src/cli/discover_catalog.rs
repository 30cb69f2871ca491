//! `tollgate discover --catalog`: the request narrowed by the Resource Explorer catalog
//! before the scan (`tollgate_scan::catalog::plan_scan`), what it says told once on
//! stderr.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tollgate_engine::aws::telemetry::{NoTelemetry, TelemetrySink};
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_engine::Engine;
use tollgate_scan::catalog::plan_scan;
use tollgate_scan::scan_setup::SupervisorDeps;
use tollgate_scan::DiscoveryRequest;

/// The engine's dependencies for a catalog command's scan set-up.
pub(super) fn deps(engine: &Engine, telemetry: Option<Arc<dyn TelemetrySink>>) -> SupervisorDeps {
    SupervisorDeps {
        admission: engine.admission(),
        policies: engine.policies().clone(),
        telemetry: ScanTelemetry::new(telemetry.unwrap_or_else(|| Arc::new(NoTelemetry))),
        http: tollgate_engine::aws::default_http_client(),
        fleet_notes: engine.fleet_notes(),
    }
}

/// `discover --catalog`: `request` narrowed by the catalog, its notes and skipped
/// datasets said once on stderr; `None` when the catalog holds none of its types.
pub(super) async fn narrow(
    engine: &Engine,
    request: DiscoveryRequest,
    telemetry: Option<Arc<dyn TelemetrySink>>,
) -> anyhow::Result<Option<DiscoveryRequest>> {
    let planned = plan_scan(request, deps(engine, telemetry), CancellationToken::new()).await?;
    for note in &planned.notes {
        eprintln!("tollgate: catalog: {note}");
    }
    if !planned.skipped.is_empty() {
        let names: Vec<&str> = planned.skipped.iter().map(|d| d.name()).collect();
        eprintln!(
            "tollgate: catalog: not loaded (the catalog covers every region and holds none): {}",
            names.join(", ")
        );
    }
    if planned.request.is_none() {
        eprintln!("tollgate: catalog: nothing to load; no report written");
    }
    Ok(planned.request)
}
