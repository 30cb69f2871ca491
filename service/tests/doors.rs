//! The service's doors, the functions that turn bytes from outside into typed values
//! (`POST /v1/scans` bodies, the page's `?token=`, the configuration file), on inputs
//! the fuzz targets of `fuzz/` (api_body, api_query, service_config) found or that
//! their properties rest on: every such input gets a clear refusal, never a panic.
//! The runs and findings are recorded in fuzz/README.md.

use std::path::Path;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::ResponseError;
use tollgate_service::http::page::page_token;
use tollgate_service::{ConfigError, ServiceConfig};

#[test]
fn the_page_reads_its_token_from_the_query_and_ignores_other_parameters() {
    assert_eq!(page_token("token=abc").unwrap().as_deref(), Some("abc"));
    assert_eq!(
        page_token("x=1&token=a%20b&y=").unwrap().as_deref(),
        Some("a b")
    );
    assert_eq!(page_token("").unwrap(), None);
    assert_eq!(page_token("other=1").unwrap(), None);
}

#[test]
fn a_token_given_twice_is_a_json_refusal_naming_the_parameter() {
    // Finding 3 of fuzz/README.md (found writing the api_query target): actix's
    // `web::Query` extractor answered this with a plain-text 400 ("Query deserialize
    // error: ..."), unlike every other refusal of the API.
    let err = page_token("token=a&token=b").unwrap_err();
    assert_eq!(err.status_code(), StatusCode::BAD_REQUEST);
    assert!(err.to_string().starts_with("token: "), "{err}");
    assert!(err.to_string().contains("duplicate field"), "{err}");
    let body = err.error_response().into_body();
    let bytes = actix_web::body::to_bytes(body);
    let bytes = block_on(bytes).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(
        json["error"].as_str().unwrap().starts_with("token: "),
        "{json}"
    );
}

/// Drive a future that never waits (a body already in memory) to its end.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn parse_config(text: &str) -> Result<ServiceConfig, ConfigError> {
    ServiceConfig::parse(Path::new("/etc/tollgate.toml"), text)
}

#[test]
fn a_control_character_in_a_comment_is_refused_with_a_reason_and_no_made_up_key() {
    // Finding 2 of fuzz/README.md (service_config): toml gives an empty message for
    // this, and the line's text before `=` (a comment) was named as the key.
    let err = parse_config("[fleet]\ntable = \"ok-table\"\n#\0\0\0skew = 5\n").unwrap_err();
    assert_eq!((err.line, err.key.as_deref()), (Some(3), None), "{err}");
    assert!(
        err.message.contains("column 2: control character U+0000"),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("/etc/tollgate.toml:3: not valid TOML"),
        "{err}"
    );
}

#[test]
fn a_retention_too_long_for_a_duration_is_refused_naming_its_line_not_a_panic() {
    // Finding 4 of fuzz/README.md (found reading the code beside the service_config
    // target, which had not reached it in 600 s): `days * 86_400` overflowed, a panic
    // in a debug build and a wrapped, far shorter retention in a release one.
    let err =
        parse_config("[service]\n\nretention = { days = 9223372036854775807 }\n").unwrap_err();
    assert_eq!(
        (err.line, err.key.as_deref()),
        (Some(3), Some("service.retention.days")),
        "{err}"
    );
    assert!(err.message.contains("too large"), "{err}");
    let last = u64::MAX / 86_400;
    let longest = parse_config(&format!("[service]\nretention = {{ days = {last} }}\n")).unwrap();
    assert_eq!(
        longest.retention.max_age,
        Duration::from_secs(last * 86_400)
    );
    let past = format!("[service]\nretention = {{ days = {} }}\n", last + 1);
    assert!(parse_config(&past).is_err());
}
