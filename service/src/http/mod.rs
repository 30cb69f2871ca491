//! The HTTP API (actix-web, JSON). Every route but `/healthz` and `/metrics` needs the
//! token ([`auth`]); every refusal is `{"error": ...}` ([`error`]).
//!
//! | method and path | answer |
//! |---|---|
//! | `POST /v1/scans` | `202 {"scan_id", "joined"}` |
//! | `GET /v1/scans` | `{"scans": [...]}`, newest first |
//! | `GET /v1/scans/{id}` | the scan with per-dataset progress |
//! | `GET /v1/scans/{id}/report` | the report `tollgate discover` writes; 409 while queued or running |
//! | `DELETE /v1/scans/{id}` | cancel; the partial report is kept |
//! | `GET /v1/quotas` | live quota state, as `tollgate status --json` |
//! | `GET /v1/resources`, `GET /v1/changes` | pages of the inventory store |
//! | `GET /v1/resources/history` | one resource's current row and versions |
//! | `GET /metrics` | Prometheus text exposition |
//! | `GET /healthz` | `{"status": "ok"}` |
//! | `GET /` | the live page |

pub mod auth;
pub mod body;
pub mod error;
mod inventory;
pub mod page;
mod routes;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::{web, App, HttpServer};
use tollgate_actors::AdmissionHandle;

use crate::manager::ScanManager;
use crate::metrics::ServiceMetrics;
use crate::token::ApiToken;

/// What the handlers share.
pub struct ApiState {
    /// The scans.
    pub manager: ScanManager,
    /// The bearer token.
    pub token: ApiToken,
    /// Metrics.
    pub metrics: Arc<ServiceMetrics>,
    /// Admission, for `/v1/quotas` and the key gauges.
    pub admission: AdmissionHandle,
    /// The admission directory and how it was chosen, for `/v1/quotas`.
    pub admission_dir: (String, String),
    /// Named targets from the configuration.
    pub targets: BTreeMap<String, crate::scan_request::ScanRequest>,
    /// The inventory store `GET /v1/resources`, its `history` and `/v1/changes` read, if any.
    pub store: Option<String>,
}

/// A bound, not yet running server.
pub struct BoundServer {
    /// The server future (run it on a tokio runtime) and its handle.
    pub server: actix_web::dev::Server,
    /// The addresses it listens on.
    pub addrs: Vec<SocketAddr>,
}

/// Bind the API on `listen` (port 0 picks a free one). One worker thread: the API only
/// reads tables and sends messages; scans run elsewhere.
pub fn bind(listen: SocketAddr, state: ApiState) -> std::io::Result<BoundServer> {
    let data = web::Data::new(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(64 * 1024))
            .configure(routes::configure)
    })
    .workers(1)
    .disable_signals()
    .shutdown_timeout(2)
    .bind(listen)?;
    let addrs = server.addrs();
    Ok(BoundServer {
        server: server.run(),
        addrs,
    })
}
