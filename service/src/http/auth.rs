//! Who may call the API: a request carrying the service's token, as
//! `Authorization: Bearer TOKEN` (the CLI, scripts) or in the page's HttpOnly cookie
//! (set once from `GET /?token=TOKEN`, as Jupyter does, so the token leaves the URL).

use actix_web::HttpRequest;

use super::error::ApiError;
use crate::token::ApiToken;

/// The page's cookie.
pub const COOKIE: &str = "tollgate_token";

/// The token a request presents, from the header or the cookie.
fn presented(req: &HttpRequest) -> Option<String> {
    if let Some(value) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        return value.strip_prefix("Bearer ").map(|t| t.trim().to_string());
    }
    let cookies = req.headers().get("cookie").and_then(|v| v.to_str().ok())?;
    cookies.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == COOKIE).then(|| value.to_string())
    })
}

/// Refuse (401) a request without the token.
pub fn require(req: &HttpRequest, token: &ApiToken) -> Result<(), ApiError> {
    match presented(req) {
        None => Err(ApiError::unauthorized(
            "missing API token: send `Authorization: Bearer TOKEN` with the token from \
             STATE_DIR/api-token (the `tollgate scans` commands do)",
        )),
        Some(t) if token.matches(&t) => Ok(()),
        Some(_) => Err(ApiError::unauthorized(
            "wrong API token: use the one in STATE_DIR/api-token of this service",
        )),
    }
}

/// The `Set-Cookie` value that keeps the token for the page.
pub fn cookie(token: &ApiToken) -> String {
    format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
        token.as_str()
    )
}
