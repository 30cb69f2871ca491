//! `POST /v1/scans` bodies: the bytes the handler hands `parse_submission` (the route
//! reads the body as `web::Bytes`, capped at 64 KiB, and calls it before anything else).
//! Errors are expected; a panic is a finding, and so is a refusal that is not a 400
//! naming a field (`"FIELD: why"`, FIELD one the API knows or a key the body wrote).
//!
//! Beyond "no panic": an accepted body's request is what the engine accepts (validating
//! it again changes nothing, the timeout lies in (0, MAX_TIMEOUT]), a named target gives
//! exactly the configured request, and a request written back as a body parses to the
//! same request (the timeout within a microsecond: it travels as seconds in an f64).
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::ResponseError;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};
use tollgate_scan::request::MAX_TIMEOUT;
use tollgate_scan::DiscoveryRequest;
use tollgate_service::http::body::{parse_submission, Submission};

/// The fields a body may carry (`http/body.rs`), and the names refusals may give besides.
const FIELDS: [&str; 10] = [
    "target",
    "force",
    "regions",
    "datasets",
    "endpoint_url",
    "profile",
    "timeout",
    "role_arn",
    "external_id",
    "session_name",
];
const OTHER_NAMES: [&str; 2] = ["body", "request"];

/// Two configured targets, as a `[[target]]` table gives them.
fn targets() -> &'static BTreeMap<String, DiscoveryRequest> {
    static TARGETS: OnceLock<BTreeMap<String, DiscoveryRequest>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let mut targets = BTreeMap::new();
        targets.insert(
            "prod".to_string(),
            DiscoveryRequest::default().validate().expect("valid"),
        );
        targets.insert(
            "dev".to_string(),
            DiscoveryRequest {
                regions: vec!["eu-west-1".into(), "us-east-1".into()],
                endpoint_url: Some("http://127.0.0.1:5000".into()),
                timeout: Duration::from_secs(300),
                ..DiscoveryRequest::default()
            }
            .validate()
            .expect("valid"),
        );
        targets
    })
}

/// The body that asks for `request` field by field.
fn body_of(request: &DiscoveryRequest, force: bool) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("force".into(), json!(force));
    body.insert("regions".into(), json!(request.regions));
    let datasets: Vec<String> = request.datasets.iter().map(|d| d.to_string()).collect();
    body.insert("datasets".into(), json!(datasets));
    body.insert("timeout".into(), json!(request.timeout.as_secs_f64()));
    if let Some(url) = &request.endpoint_url {
        body.insert("endpoint_url".into(), json!(url));
    }
    if let Some(profile) = &request.profile {
        body.insert("profile".into(), json!(profile));
    }
    if let Some(role) = &request.role {
        body.insert("role_arn".into(), json!(role.role_arn));
        if let Some(id) = &role.external_id {
            body.insert("external_id".into(), json!(id));
        }
        if let Some(name) = &role.session_name {
            body.insert("session_name".into(), json!(name));
        }
    }
    serde_json::to_vec(&Value::Object(body)).expect("a map of strings serializes")
}

fn check_accepted(submission: &Submission) {
    let request = &submission.request;
    assert!(
        !request.timeout.is_zero() && request.timeout <= MAX_TIMEOUT,
        "timeout out of range: {:?}",
        request.timeout
    );
    assert_eq!(
        request.clone().validate().as_ref(),
        Ok(request),
        "an accepted request changes when validated again"
    );
    if let Some(name) = &submission.target {
        assert_eq!(Some(request), targets().get(name), "target {name:?}");
        return;
    }
    let again = parse_submission(&body_of(request, submission.force), targets())
        .unwrap_or_else(|e| panic!("the request written back is refused: {e}"));
    assert_eq!(again.force, submission.force);
    assert_eq!(again.target, None);
    let drift = again.request.timeout.abs_diff(request.timeout);
    assert!(
        drift <= Duration::from_micros(1),
        "timeout drifted by {drift:?}"
    );
    let mut again = again.request;
    again.timeout = request.timeout;
    assert_eq!(
        &again, request,
        "the request written back parses differently"
    );
}

fn check_refused(data: &[u8], error: &tollgate_service::http::error::ApiError) {
    assert_eq!(error.status_code(), StatusCode::BAD_REQUEST, "{error}");
    let message = error.to_string();
    // An unknown key is named as written (it may itself hold ": ").
    let keys: Vec<String> = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let named = FIELDS
        .iter()
        .chain(OTHER_NAMES.iter())
        .copied()
        .chain(keys.iter().map(String::as_str))
        .find(|name| message.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("a refusal that names no field of the body: {message}"));
    let why = &message[named.len() + 2..];
    assert!(
        !why.trim().is_empty(),
        "a refusal without a reason: {message}"
    );
}

fuzz_target!(|data: &[u8]| {
    match parse_submission(data, targets()) {
        Ok(submission) => check_accepted(&submission),
        Err(error) => check_refused(data, &error),
    }
});
