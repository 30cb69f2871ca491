//! `POST /v1/scans` bodies: `{"target": NAME}` or the scan's own fields.
//!
//! Read with serde (`deny_unknown_fields`) under `serde_path_to_error`, so a refusal
//! names the field path (`regions[1]: invalid type: integer `7`, expected a string`)
//! rather than a line and column; the scan's own checks (`ScanFields::into_request`)
//! and `timeout`'s two forms come after, each naming its field too.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::error::ApiError;
use crate::duration::{duration_from_seconds, parse_duration};
use crate::scan_request::{ScanFields, ScanRequest};

/// A body's members as sent, each type checked; absent is `None`, `null` is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubmission {
    #[serde(default, deserialize_with = "present")]
    target: Option<String>,
    #[serde(default, deserialize_with = "present")]
    force: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    regions_fallback: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    organization: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    role_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    accounts: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    exclude_accounts: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    max_accounts_in_flight: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    regions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    datasets: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    types: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    endpoint_url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    profile: Option<String>,
    /// A duration (`"90s"`) or seconds: read below, where its errors say which.
    #[serde(default, deserialize_with = "present")]
    timeout: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    role_arn: Option<String>,
    #[serde(default, deserialize_with = "present")]
    external_id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    session_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    details: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    pricing: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    pricing_url: Option<String>,
}

/// A member that is present must hold a value of its type (`null` is not one), as the
/// API has always answered.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
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
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_field("body", format!("not JSON ({e})")))?;
    let Value::Object(map) = &value else {
        return Err(ApiError::bad_field("body", "must be a JSON object"));
    };
    let raw: RawSubmission = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "body" } else { path.as_str() };
        ApiError::bad_field(field, e.inner())
    })?;
    if raw.target.is_some() {
        if let Some(other) = map.keys().find(|k| *k != "target" && *k != "force") {
            return Err(ApiError::bad_field(
                other,
                "not allowed with `target` (the target's configuration says it)",
            ));
        }
    }
    let force = raw.force.unwrap_or(false);
    let (target, request) = parse_scan(raw, targets)?;
    Ok(Submission {
        target,
        request,
        force,
    })
}

/// The target or the scan's fields of a body.
fn parse_scan(
    raw: RawSubmission,
    targets: &BTreeMap<String, ScanRequest>,
) -> Result<(Option<String>, ScanRequest), ApiError> {
    if let Some(name) = raw.target {
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
    let timeout = match &raw.timeout {
        None => None,
        Some(Value::String(text)) => {
            Some(parse_duration(text).map_err(|e| ApiError::bad_field("timeout", e))?)
        }
        Some(Value::Number(n)) => {
            let seconds = n.as_f64().ok_or_else(|| {
                ApiError::bad_field("timeout", "must be a positive number of seconds")
            })?;
            Some(duration_from_seconds(seconds).map_err(|e| ApiError::bad_field("timeout", e))?)
        }
        Some(_) => {
            return Err(ApiError::bad_field(
                "timeout",
                "must be a duration like \"90s\" or seconds",
            ))
        }
    };
    let fields = ScanFields {
        regions: raw.regions.unwrap_or_default(),
        datasets: raw.datasets.unwrap_or_default(),
        types: raw.types.unwrap_or_default(),
        endpoint_url: raw.endpoint_url,
        profile: raw.profile,
        timeout,
        role_arn: raw.role_arn,
        external_id: raw.external_id,
        session_name: raw.session_name,
        regions_fallback: raw.regions_fallback.unwrap_or_default(),
        organization: raw.organization.unwrap_or(false),
        role_name: raw.role_name,
        accounts: raw.accounts.unwrap_or_default(),
        exclude_accounts: raw.exclude_accounts.unwrap_or_default(),
        max_accounts_in_flight: raw.max_accounts_in_flight,
        details: raw.details.unwrap_or(false),
        pricing: raw.pricing.unwrap_or(false),
        pricing_url: raw.pricing_url,
        ..ScanFields::default()
    };
    let request = fields
        .into_request()
        .map_err(|e| ApiError::bad_field(e.field, e.message))?;
    Ok((None, request))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<(Option<String>, ScanRequest), ApiError> {
        let mut targets = BTreeMap::new();
        targets.insert(
            "prod".to_string(),
            ScanRequest::from(
                tollgate_scan::DiscoveryRequest::default()
                    .validate()
                    .unwrap(),
            ),
        );
        parse_submission(body.as_bytes(), &targets).map(|s| (s.target, s.request))
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
        assert_eq!(
            request.details,
            tollgate_collectors::cloudcontrol::Details::Listed
        );
        let (_, request) = parse(r#"{"types":["AWS::IAM::Role"],"details":true}"#).unwrap();
        assert_eq!(
            request.details,
            tollgate_collectors::cloudcontrol::Details::Read
        );
        let refused = parse(r#"{"details":"yes"}"#).unwrap_err();
        assert!(format!("{refused:?}").contains("details"), "{refused:?}");
    }

    #[test]
    fn pricing_is_off_unless_asked_and_a_pricing_url_implies_it() {
        let (_, plain) = parse(r#"{"regions":["us-east-1"]}"#).unwrap();
        assert_eq!(plain.pricing, None);
        let (_, priced) = parse(r#"{"regions":["us-east-1"],"pricing":true}"#).unwrap();
        assert_eq!(
            priced.pricing.as_deref(),
            Some(tollgate_scan::request::DEFAULT_PRICING_URL)
        );
        let (_, local) = parse(r#"{"pricing_url":"http://127.0.0.1:9"}"#).unwrap();
        assert_eq!(local.pricing.as_deref(), Some("http://127.0.0.1:9"));
        let refused = parse(r#"{"pricing_url":"ftp://x"}"#).unwrap_err();
        let text = format!("{refused:?}");
        assert!(
            text.contains("pricing_url") && text.contains("http://"),
            "{text}"
        );
    }

    #[test]
    fn force_is_a_boolean_beside_a_target_or_fields() {
        let mut targets = BTreeMap::new();
        targets.insert(
            "prod".to_string(),
            ScanRequest::from(
                tollgate_scan::DiscoveryRequest::default()
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
            let err = parse(body).unwrap_err().to_string();
            assert!(err.starts_with(field), "{body}: {err}");
        }
    }

    #[test]
    fn a_wrong_nested_type_names_the_field_path() {
        let err = parse(r#"{"regions":["us-east-1",7]}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err, "regions[1]: invalid type: integer `7`, expected a string",
            "{err}"
        );
        let err = parse(r#"{"regions":null}"#).unwrap_err().to_string();
        assert!(err.starts_with("regions:"), "null is no value: {err}");
        let err = parse(r#"{"color":"red"}"#).unwrap_err().to_string();
        assert!(err.starts_with("color: unknown field `color`"), "{err}");
    }
}
