//! What the API reads from a request besides its body: the query string (only `GET /`
//! reads one, `?token=`, through `page_token`, as actix's `web::Query` would) and the
//! token a request presents (`Authorization: Bearer ...` or the page's cookie, checked by
//! `require` on every route but `/healthz` and `/metrics`).
//!
//! Input: `QUERY`, then optionally `\n` and an `Authorization` value, then optionally
//! `\n` and a `Cookie` value. The query is taken only if `/?QUERY` is a URI (the HTTP
//! parser refuses the rest before a handler runs) and the headers only if they are
//! header values; the request is built with actix's own `TestRequest`.
//!
//! Beyond "no panic": a query is refused only as a 400 naming `token`, and only when it
//! does not hold exactly one `token` pair; an accepted token is that pair's value; the
//! token check admits a request only if what it presents is the token, refuses with 401
//! otherwise.
#![no_main]

use std::sync::OnceLock;

use actix_web::http::header::HeaderValue;
use actix_web::http::{StatusCode, Uri};
use actix_web::test::TestRequest;
use actix_web::ResponseError;
use libfuzzer_sys::fuzz_target;
use tollgate_service::http::auth::{require, COOKIE};
use tollgate_service::http::page::page_token;
use tollgate_service::ApiToken;

/// The token the fuzzer's seeds present (`corpus/api_query/` holds it).
const TOKEN: &str = "0123456789abcdef0123456789abcdef";

fn token() -> &'static ApiToken {
    static TOKEN_FILE: OnceLock<ApiToken> = OnceLock::new();
    TOKEN_FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("tollgate-fuzz-token-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, TOKEN).expect("a temporary file");
        let token = ApiToken::read(&path).expect("the fuzz token reads");
        let _ = std::fs::remove_file(&path);
        token
    })
}

fn check_query(query: &str) {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).expect("form decoding is lossy, it never fails");
    let tokens: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "token")
        .map(|(_, v)| v.as_str())
        .collect();
    match page_token(query) {
        Ok(Some(t)) => assert_eq!(tokens, [t.as_str()], "{query:?}"),
        Ok(None) => assert!(tokens.is_empty(), "{query:?}: token {tokens:?} missed"),
        Err(e) => {
            assert_eq!(e.status_code(), StatusCode::BAD_REQUEST, "{e}");
            assert!(e.to_string().starts_with("token: "), "{e}");
            assert!(tokens.len() > 1, "{query:?} refused: {e}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == b'\n');
    let query = parts.next().unwrap_or_default();
    let mut request = TestRequest::default();
    if let Ok(query) = std::str::from_utf8(query) {
        if let Ok(uri) = Uri::try_from(format!("/?{query}")) {
            check_query(uri.query().unwrap_or_default());
            request = request.uri(&uri.to_string());
        }
    }
    let authorization = parts.next().and_then(|v| HeaderValue::from_bytes(v).ok());
    let cookie = parts.next().and_then(|v| HeaderValue::from_bytes(v).ok());
    if let Some(v) = &authorization {
        request = request.insert_header(("authorization", v.clone()));
    }
    if let Some(v) = &cookie {
        request = request.insert_header(("cookie", v.clone()));
    }
    let req = request.to_http_request();
    match require(&req, token()) {
        Ok(()) => {
            // Admitted: the header or the cookie carries exactly the token.
            let by_header = authorization
                .as_ref()
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|t| t.trim() == TOKEN);
            let by_cookie = cookie
                .as_ref()
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| {
                    c.split(';')
                        .any(|pair| pair.trim() == format!("{COOKIE}={TOKEN}"))
                });
            assert!(
                by_header || by_cookie,
                "admitted {authorization:?} {cookie:?}"
            );
        }
        Err(e) => {
            assert_eq!(e.status_code(), StatusCode::UNAUTHORIZED, "{e}");
            assert!(!e.to_string().is_empty());
        }
    }
});
