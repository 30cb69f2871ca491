//! `POST /v1/scans` bodies: `{"target": NAME}` or the scan's own fields, checked field
//! by field so a refusal names the field (serde's messages name a line and column).

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::ApiError;
use crate::duration::{duration_from_seconds, parse_duration};
use crate::scan_request::{ScanFields, ScanRequest};

const FIELDS: [&str; 16] = [
    "target",
    "regions_fallback",
    "organization",
    "role_name",
    "accounts",
    "exclude_accounts",
    "max_accounts_in_flight",
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

fn strings(field: &str, value: &Value) -> Result<Vec<String>, ApiError> {
    let Value::Array(items) = value else {
        return Err(ApiError::bad_field(field, "must be an array of strings"));
    };
    items
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| ApiError::bad_field(field, "must be an array of strings"))
        })
        .collect()
}

fn string(field: &str, value: &Value) -> Result<String, ApiError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ApiError::bad_field(field, "must be a string"))
}

/// A parsed `POST /v1/scans` body.
#[derive(Debug)]
pub struct Submission {
    /// The config target it names, if it names one.
    pub target: Option<String>,
    /// The validated request.
    pub request: ScanRequest,
    /// `"force": true`: skip the cooldown (docs/service.md, "Guard rails").
    pub force: bool,
}

/// Parse a submission: `force` (a boolean, allowed beside `target` too), then the target
/// or the scan's fields.
pub fn parse_submission(
    body: &[u8],
    targets: &BTreeMap<String, ScanRequest>,
) -> Result<Submission, ApiError> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_field("body", format!("not JSON ({e})")))?;
    let force = match value.as_object_mut().and_then(|m| m.remove("force")) {
        None => false,
        Some(Value::Bool(force)) => force,
        Some(_) => return Err(ApiError::bad_field("force", "must be true or false")),
    };
    let (target, request) = parse_scan(value, targets)?;
    Ok(Submission {
        target,
        request,
        force,
    })
}

/// The target or the scan's fields of a body (without `force`).
fn parse_scan(
    value: Value,
    targets: &BTreeMap<String, ScanRequest>,
) -> Result<(Option<String>, ScanRequest), ApiError> {
    let Value::Object(map) = value else {
        return Err(ApiError::bad_field("body", "must be a JSON object"));
    };
    if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(ApiError::bad_field(
            unknown,
            format!("unknown field; expected one of {}", FIELDS.join(", ")),
        ));
    }
    if let Some(target) = map.get("target") {
        let name = string("target", target)?;
        if let Some(other) = map.keys().find(|k| *k != "target") {
            return Err(ApiError::bad_field(
                other,
                "not allowed with `target` (the target's configuration says it)",
            ));
        }
        let request = targets.get(&name).cloned().ok_or_else(|| {
            let known: Vec<&str> = targets.keys().map(String::as_str).collect();
            ApiError::bad_field(
                "target",
                format!(
                    "no target {name:?} in the service's configuration (known: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        return Ok((Some(name), request));
    }
    let mut fields = ScanFields::default();
    if let Some(v) = map.get("regions") {
        fields.regions = strings("regions", v)?;
    }
    if let Some(v) = map.get("datasets") {
        fields.datasets = strings("datasets", v)?;
    }
    if let Some(v) = map.get("endpoint_url") {
        fields.endpoint_url = Some(string("endpoint_url", v)?);
    }
    if let Some(v) = map.get("profile") {
        fields.profile = Some(string("profile", v)?);
    }
    if let Some(v) = map.get("role_arn") {
        fields.role_arn = Some(string("role_arn", v)?);
    }
    if let Some(v) = map.get("external_id") {
        fields.external_id = Some(string("external_id", v)?);
    }
    if let Some(v) = map.get("session_name") {
        fields.session_name = Some(string("session_name", v)?);
    }
    if let Some(v) = map.get("regions_fallback") {
        fields.regions_fallback = strings("regions_fallback", v)?;
    }
    if let Some(v) = map.get("organization") {
        fields.organization = v
            .as_bool()
            .ok_or_else(|| ApiError::bad_field("organization", "must be true or false"))?;
    }
    if let Some(v) = map.get("role_name") {
        fields.role_name = Some(string("role_name", v)?);
    }
    if let Some(v) = map.get("accounts") {
        fields.accounts = strings("accounts", v)?;
    }
    if let Some(v) = map.get("exclude_accounts") {
        fields.exclude_accounts = strings("exclude_accounts", v)?;
    }
    if let Some(v) = map.get("max_accounts_in_flight") {
        fields.max_accounts_in_flight = Some(v.as_i64().ok_or_else(|| {
            ApiError::bad_field("max_accounts_in_flight", "must be a positive number")
        })?);
    }
    if let Some(v) = map.get("timeout") {
        let timeout = match v {
            Value::String(text) => {
                parse_duration(text).map_err(|e| ApiError::bad_field("timeout", e))?
            }
            Value::Number(n) => {
                let seconds = n.as_f64().ok_or_else(|| {
                    ApiError::bad_field("timeout", "must be a positive number of seconds")
                })?;
                duration_from_seconds(seconds).map_err(|e| ApiError::bad_field("timeout", e))?
            }
            _ => {
                return Err(ApiError::bad_field(
                    "timeout",
                    "must be a duration like \"90s\" or seconds",
                ))
            }
        };
        fields.timeout = Some(timeout);
    }
    let request = fields
        .into_request()
        .map_err(|e| ApiError::bad_field(e.field, e.message))?;
    Ok((None, request))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<(Option<String>, ScanRequest), String> {
        let mut targets = BTreeMap::new();
        targets.insert(
            "prod".to_string(),
            ScanRequest::from(
                tollgate_engine::DiscoveryRequest::default()
                    .validate()
                    .unwrap(),
            ),
        );
        parse_submission(body.as_bytes(), &targets)
            .map(|s| (s.target, s.request))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_target_or_fields_are_accepted() {
        assert_eq!(
            parse(r#"{"target":"prod"}"#).unwrap().0.as_deref(),
            Some("prod")
        );
        let (target, request) =
            parse(r#"{"regions":["us-east-1"],"datasets":["kms-keys"],"timeout":"30s"}"#).unwrap();
        assert_eq!(target, None);
        assert_eq!(request.regions, ["us-east-1"]);
        assert_eq!(request.timeout, std::time::Duration::from_secs(30));
    }

    #[test]
    fn force_is_a_boolean_beside_a_target_or_fields() {
        let mut targets = BTreeMap::new();
        targets.insert(
            "prod".to_string(),
            ScanRequest::from(
                tollgate_engine::DiscoveryRequest::default()
                    .validate()
                    .unwrap(),
            ),
        );
        let forced = parse_submission(br#"{"target":"prod","force":true}"#, &targets).unwrap();
        assert!(forced.force);
        assert_eq!(forced.target.as_deref(), Some("prod"));
        let fields = parse_submission(br#"{"regions":["us-east-1"],"force":false}"#, &targets);
        assert!(!fields.unwrap().force);
        assert!(!parse_submission(b"{}", &targets).unwrap().force);
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (r#"{"regions":"us-east-1"}"#, "regions:"),
            (r#"{"datasets":["ec2"]}"#, "datasets:"),
            (r#"{"timeout":"soon"}"#, "timeout:"),
            // Regression: 1e20 seconds panicked an actix worker converting to Duration.
            (r#"{"timeout":1e20}"#, "timeout:"),
            (r#"{"timeout":"99999999999999999999d"}"#, "timeout:"),
            (r#"{"timeout":-1}"#, "timeout:"),
            (r#"{"role_arn":"scanner"}"#, "role_arn:"),
            (r#"{"role_arn":7}"#, "role_arn:"),
            (r#"{"color":"red"}"#, "color:"),
            (r#"{"target":"dev"}"#, "target:"),
            (r#"{"target":"prod","regions":[]}"#, "regions:"),
            (r#"{"target":"prod","force":"yes"}"#, "force:"),
            (r#"[1]"#, "body:"),
            (r#"{"#, "body:"),
        ];
        for (body, field) in cases {
            let err = parse(body).unwrap_err();
            assert!(err.starts_with(field), "{body}: {err}");
        }
    }
}
