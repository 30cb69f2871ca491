//! `GET /`: the live page. The token may come once as `?token=`; it is then kept in an
//! HttpOnly cookie and the browser is sent to `/` without it, so the token does not
//! stay in the address bar or history. The page itself is static HTML and JS
//! (`page.html`, embedded) that polls the JSON API with that cookie.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use super::auth::{cookie, require};
use super::error::ApiError;
use super::ApiState;

const PAGE: &str = include_str!("page.html");

#[derive(serde::Deserialize)]
pub(super) struct PageQuery {
    token: Option<String>,
}

pub(super) async fn index(
    req: HttpRequest,
    state: web::Data<ApiState>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    if let Some(token) = &query.token {
        if !state.token.matches(token) {
            return Err(ApiError::unauthorized("wrong API token in ?token="));
        }
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::SET_COOKIE, cookie(&state.token)))
            .insert_header((header::LOCATION, "/"))
            .finish());
    }
    require(&req, &state.token)?;
    Ok(HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(PAGE))
}
