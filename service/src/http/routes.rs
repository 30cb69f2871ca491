//! The route table and its handlers: each parses, asks the manager, answers JSON.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use tollgate_actors::ClientInfo;
use tollgate_quota::QuotaSnapshot;

use crate::activity::{KeySeries, BUCKET};
use crate::scan_request::ScanOrigin;

use super::auth::require;
use super::body::parse_submission;
use super::error::ApiError;
use super::{page, ApiState};

type Data = web::Data<ApiState>;

/// Register every route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/metrics", web::get().to(metrics))
        .route("/v1/scans", web::post().to(submit))
        .route("/v1/scans", web::get().to(list))
        .route("/v1/scans/{id}", web::get().to(show))
        .route("/v1/scans/{id}", web::delete().to(cancel))
        .route("/v1/scans/{id}/report", web::get().to(report))
        .route("/v1/quotas", web::get().to(quotas))
        .route("/v1/resources", web::get().to(super::inventory::resources))
        .route(
            "/v1/resources/history",
            web::get().to(super::inventory::history),
        )
        .route("/v1/changes", web::get().to(super::inventory::changes))
        .route("/", web::get().to(page::index))
        .default_service(web::to(|| async {
            Err::<HttpResponse, _>(ApiError::no_route())
        }));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

async fn metrics(state: Data) -> HttpResponse {
    let keys = state.admission.status().await.unwrap_or_default();
    let (queued, running) = state.manager.active_counts();
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(state.metrics.render(queued, running, &keys, now_ms(&state)))
}

/// The admission clock now, in Unix milliseconds (what attempt events are stamped with).
fn now_ms(state: &Data) -> u64 {
    state.admission.now().as_micros() / 1000
}

async fn submit(req: HttpRequest, state: Data, body: web::Bytes) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let submission = parse_submission(&body, &state.targets)?;
    // A scan whose credentials cannot be had is refused up front, with the same message
    // `tollgate discover` prints (what was tried, how to fix it).
    if let Err(e) =
        tollgate_engine::aws::check_credentials(submission.request.credentials_source()).await
    {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, e.to_string()));
    }
    let origin = ScanOrigin::OnDemand {
        force: submission.force,
    };
    let submitted = state
        .manager
        .submit(submission.target, submission.request, origin)?;
    Ok(HttpResponse::Accepted().json(submitted))
}

async fn list(req: HttpRequest, state: Data) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let scans = state.manager.list()?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "scans": scans })))
}

async fn show(
    req: HttpRequest,
    state: Data,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    Ok(HttpResponse::Ok().json(state.manager.show(&id)?))
}

async fn report(
    req: HttpRequest,
    state: Data,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let mut json = state.manager.report_json(&id)?;
    json.push(b'\n');
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(json))
}

async fn cancel(
    req: HttpRequest,
    state: Data,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    Ok(HttpResponse::Ok().json(state.manager.cancel(&id).await?))
}

/// The shape of `tollgate status --json`, with each key's account and recent activity
/// (the live page groups by the one and charts the other).
#[derive(Serialize)]
struct Quotas {
    /// Seconds per bucket of each key's `activity`.
    activity_bucket_seconds: u64,
    admission_dir: String,
    source: String,
    coordinator_pid: Option<u32>,
    clients: Vec<ClientInfo>,
    keys: Vec<KeyView>,
}

#[derive(Serialize)]
struct KeyView {
    key: String,
    /// The key's account (its second part).
    account: String,
    state: QuotaSnapshot,
    /// Admissions and throttled responses over the last five minutes, oldest bucket
    /// first; absent when the key had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    activity: Option<KeySeries>,
}

async fn quotas(req: HttpRequest, state: Data) -> Result<HttpResponse, ApiError> {
    require(&req, &state.token)?;
    let live = state.admission.coordination().await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("admission is not answering: {e}"),
        )
    })?;
    let (dir, source) = state.admission_dir.clone();
    let now = now_ms(&state);
    let activity = state.metrics.activity();
    Ok(HttpResponse::Ok().json(Quotas {
        activity_bucket_seconds: BUCKET.as_secs(),
        admission_dir: dir,
        source,
        coordinator_pid: Some(live.coordinator_pid),
        clients: live.clients,
        keys: live
            .keys
            .into_iter()
            .map(|k| KeyView {
                account: k.key.split('/').nth(1).unwrap_or("").to_string(),
                activity: activity.series(&k.key, now),
                key: k.key,
                state: k.state,
            })
            .collect(),
    }))
}
