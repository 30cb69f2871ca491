//! `GET /`: the live page. The token may come once as `?token=`; it is then kept in an
//! HttpOnly cookie and the browser is sent to `/` without it, so the token does not
//! stay in the address bar or history. The page itself is static HTML and JS
//! (`page.html`, embedded) that polls the JSON API with that cookie.
//!
//! The query string is the one the API reads anywhere; [`page_token`] reads it as
//! actix's `web::Query` does, but refuses a query it cannot read as the API's
//! `{"error": ...}` naming the parameter (the extractor answered plain text).

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use super::auth::{cookie, require};
use super::error::ApiError;
use super::ApiState;

const PAGE: &str = include_str!("page.html");

#[derive(serde::Deserialize)]
struct PageQuery {
    token: Option<String>,
}

/// The `?token=` of `GET /` (`None` without one). Other parameters are ignored; a query
/// that does not read (the token given twice) is a 400 naming `token`.
pub fn page_token(query: &str) -> Result<Option<String>, ApiError> {
    web::Query::<PageQuery>::from_query(query)
        .map(|q| q.into_inner().token)
        .map_err(|e| ApiError::bad_field("token", format!("{e}; give the page ?token=TOKEN once")))
}

pub(super) async fn index(
    req: HttpRequest,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    if let Some(token) = &page_token(req.query_string())? {
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
