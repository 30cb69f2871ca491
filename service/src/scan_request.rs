//! What a scan asks for, built once from a config target or an API body into the engine's
//! validated [`DiscoveryRequest`], and the [`JoinKey`] that says when two requests are
//! the same scan.

use std::time::Duration;

use tollgate_engine::request::{AssumeRole, RequestError};
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
    /// Another account's role to assume (STS AssumeRole).
    pub role_arn: Option<String>,
    /// The external id the role requires.
    pub external_id: Option<String>,
    /// The role session name.
    pub session_name: Option<String>,
    /// Read the items' CloudWatch activity (`metrics = true`; GetMetricData is paid).
    pub metrics: bool,
}

/// Where a submission comes from, for the guard rails (`crate::manager::guard`): an
/// on-demand scan (`POST /v1/scans`, whose body may say `"force": true` to skip the
/// cooldown) or a scheduled one (exempt from the cooldown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanOrigin {
    /// `POST /v1/scans`; `force` skips the cooldown (never the per-account cap).
    OnDemand {
        /// The body's `"force": true`.
        force: bool,
    },
    /// A `[[schedule]]` entry.
    Scheduled,
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
        let role = match self.role_arn {
            Some(role_arn) => Some(AssumeRole {
                role_arn,
                external_id: self.external_id,
                session_name: self.session_name,
            }),
            None if self.external_id.is_some() => {
                return Err(FieldError::new("external_id", "needs role_arn"))
            }
            None if self.session_name.is_some() => {
                return Err(FieldError::new("session_name", "needs role_arn"))
            }
            None => None,
        };
        let request = DiscoveryRequest {
            regions: self.regions,
            datasets,
            endpoint_url: self.endpoint_url,
            profile: self.profile,
            timeout: self
                .timeout
                .unwrap_or(tollgate_engine::request::DEFAULT_TIMEOUT),
            credentials: None,
            role,
            region_source: Default::default(),
            metrics: self.metrics,
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
            RequestError::BadRole(e) => FieldError::new(e.field(), e.to_string()),
            other => FieldError::new("request", other.to_string()),
        })
    }
}

/// Two requests with the same key are one scan: a second submission joins the first
/// while it is queued or running. The account is not known before the scan resolves
/// it, so the key uses what selects the account (profile, role, endpoint) instead.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JoinKey {
    profile: Option<String>,
    role: Option<AssumeRole>,
    endpoint_url: Option<String>,
    regions: Vec<String>,
    datasets: Vec<Dataset>,
    metrics: bool,
}

impl JoinKey {
    /// The key of a validated request (regions and datasets already sorted).
    pub fn of(request: &DiscoveryRequest) -> JoinKey {
        JoinKey {
            profile: request.profile.clone(),
            role: request.role.clone(),
            endpoint_url: request.endpoint_url.clone(),
            regions: request.regions.clone(),
            datasets: request.datasets.clone(),
            metrics: request.metrics,
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
        let role = |arn: &str, session: Option<&str>| ScanFields {
            role_arn: Some(arn.into()),
            session_name: session.map(str::to_string),
            ..Default::default()
        };
        let err = role("arn:aws:iam::1:role/x", None)
            .into_request()
            .unwrap_err();
        assert_eq!(err.field, "role_arn");
        let err = role("arn:aws:iam::111111111111:role/x", Some("?"))
            .into_request()
            .unwrap_err();
        assert_eq!(err.field, "session_name");
        let err = ScanFields {
            external_id: Some("abc".into()),
            ..Default::default()
        }
        .into_request()
        .unwrap_err();
        assert_eq!(err.field, "external_id");
    }

    #[test]
    fn another_role_is_another_scan() {
        let base = fields(&["us-east-1"], &["kms-keys"]);
        let with_role = ScanFields {
            role_arn: Some("arn:aws:iam::111111111111:role/scanner".into()),
            ..base.clone()
        };
        let (a, b) = (
            base.into_request().unwrap(),
            with_role.into_request().unwrap(),
        );
        assert_ne!(JoinKey::of(&a), JoinKey::of(&b));
    }
}
