//! What a scan asks for, built once from a config target or an API body into the engine's
//! validated [`DiscoveryRequest`], and the [`JoinKey`] that says when two requests are
//! the same scan.

use std::time::Duration;

use tollgate_engine::request::RequestError;
use tollgate_engine::{Dataset, DiscoveryRequest};

/// The unchecked fields of a scan request (config target or API body).
#[derive(Debug, Clone, Default)]
pub struct ScanFields {
    /// Region names.
    pub regions: Vec<String>,
    /// Dataset names.
    pub datasets: Vec<String>,
    /// Emulator endpoint.
    pub endpoint_url: Option<String>,
    /// AWS profile.
    pub profile: Option<String>,
    /// Deadline of the whole scan.
    pub timeout: Option<Duration>,
}

/// A field was refused: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's name (`regions`, `datasets`, ...).
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A refusal of `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }
}

impl ScanFields {
    /// Check every field and build the validated engine request.
    pub fn into_request(self) -> Result<DiscoveryRequest, FieldError> {
        let datasets = self
            .datasets
            .iter()
            .map(|d| d.parse::<Dataset>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| FieldError::new("datasets", e.to_string()))?;
        if let Some(profile) = &self.profile {
            if profile.trim().is_empty() {
                return Err(FieldError::new("profile", "must not be empty"));
            }
        }
        let request = DiscoveryRequest {
            regions: self.regions,
            datasets,
            endpoint_url: self.endpoint_url,
            profile: self.profile,
            timeout: self
                .timeout
                .unwrap_or(tollgate_engine::request::DEFAULT_TIMEOUT),
            credentials: None,
        };
        request.validate().map_err(|e| match e {
            RequestError::BadRegion(_) | RequestError::UnknownRegion(_) => {
                FieldError::new("regions", e.to_string())
            }
            RequestError::ZeroTimeout | RequestError::TimeoutTooLong => {
                FieldError::new("timeout", e.to_string())
            }
            RequestError::BadEndpoint(url) => FieldError::new(
                "endpoint_url",
                format!("{url:?} must start with http:// or https://"),
            ),
            other => FieldError::new("request", other.to_string()),
        })
    }
}

/// Two requests with the same key are one scan: a second submission joins the first
/// while it is queued or running. The account is not known before the scan resolves
/// it, so the key uses what selects the account (profile, endpoint) instead.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JoinKey {
    profile: Option<String>,
    endpoint_url: Option<String>,
    regions: Vec<String>,
    datasets: Vec<Dataset>,
}

impl JoinKey {
    /// The key of a validated request (regions and datasets already sorted).
    pub fn of(request: &DiscoveryRequest) -> JoinKey {
        JoinKey {
            profile: request.profile.clone(),
            endpoint_url: request.endpoint_url.clone(),
            regions: request.regions.clone(),
            datasets: request.datasets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(regions: &[&str], datasets: &[&str]) -> ScanFields {
        ScanFields {
            regions: regions.iter().map(|s| s.to_string()).collect(),
            datasets: datasets.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn order_and_repeats_do_not_make_a_different_scan() {
        let a = fields(&["us-west-2", "us-east-1"], &["kms-keys", "s3-buckets"]);
        let b = fields(
            &["us-east-1", "us-west-2", "us-east-1"],
            &["s3-buckets", "kms-keys"],
        );
        let (a, b) = (a.into_request().unwrap(), b.into_request().unwrap());
        assert_eq!(JoinKey::of(&a), JoinKey::of(&b));
        let c = fields(&["us-east-1"], &["kms-keys", "s3-buckets"])
            .into_request()
            .unwrap();
        assert_ne!(JoinKey::of(&a), JoinKey::of(&c));
    }

    #[test]
    fn bad_fields_are_named() {
        let err = fields(&["Mars"], &[]).into_request().unwrap_err();
        assert_eq!(err.field, "regions");
        let err = fields(&[], &["ec2"]).into_request().unwrap_err();
        assert_eq!(err.field, "datasets");
        let err = ScanFields {
            endpoint_url: Some("ftp://x".into()),
            ..Default::default()
        }
        .into_request()
        .unwrap_err();
        assert_eq!(err.field, "endpoint_url");
    }
}
