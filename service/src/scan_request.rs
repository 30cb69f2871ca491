//! What a scan asks for, built once from a config target or an API body into the engine's
//! validated [`ScanRequest`] (one account's [`DiscoveryRequest`], or an organization's
//! [`OrganizationRequest`]), and the [`JoinKey`] that says when two requests are the
//! same scan.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::time::Duration;

use tollgate_collectors::cloudcontrol::Details;
use tollgate_collectors::Dataset;
use tollgate_scan::organization::{
    AccountFilter, OrganizationRequest, OrganizationRequestError, DEFAULT_ROLE_NAME,
};
use tollgate_scan::request::{AssumeRole, RegionSource, RequestError, TagSweep};
use tollgate_scan::DiscoveryRequest;

/// A validated scan: one account, or every member account of an organization. Derefs to
/// the account part (regions, datasets, endpoint, profile, deadline), which an
/// organization scan applies to every member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanRequest {
    /// One account (the caller's, or `role_arn`'s).
    Account(DiscoveryRequest),
    /// Every member account (`organization = true`).
    Organization(OrganizationRequest),
}

impl ScanRequest {
    /// The organization part, if this is an organization scan.
    pub fn organization(&self) -> Option<&OrganizationRequest> {
        match self {
            ScanRequest::Account(_) => None,
            ScanRequest::Organization(org) => Some(org),
        }
    }
}

impl std::ops::Deref for ScanRequest {
    type Target = DiscoveryRequest;

    fn deref(&self) -> &DiscoveryRequest {
        match self {
            ScanRequest::Account(request) => request,
            ScanRequest::Organization(org) => &org.scan,
        }
    }
}

impl From<DiscoveryRequest> for ScanRequest {
    fn from(request: DiscoveryRequest) -> Self {
        ScanRequest::Account(request)
    }
}

/// The unchecked fields of a scan request (config target or API body).
#[derive(Debug, Clone, Default)]
pub struct ScanFields {
    /// Region names.
    pub regions: Vec<String>,
    /// Dataset names (aliases or type names).
    pub datasets: Vec<String>,
    /// Resource types: type names, `*` globs or dataset aliases (joined with
    /// `datasets`).
    pub types: Vec<String>,
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
    /// Read Cloud Control items listed with their identifier only in full
    /// (`details = true`; one `GetResource` each).
    pub details: bool,
    /// Price transit gateway attachments and gateways from the public price list
    /// (`pricing = true`, or a `pricing_url`; `discover --pricing`).
    pub pricing: bool,
    /// The price list's base URL (implies `pricing`).
    pub pricing_url: Option<String>,
    /// With `regions = ["all"]`: the regions scanned where `ListRegions` gives no answer.
    pub regions_fallback: Vec<String>,
    /// Scan every member account of the caller's organization.
    pub organization: bool,
    /// With `organization`: the role assumed in each member (default
    /// `OrganizationAccountAccessRole`).
    pub role_name: Option<String>,
    /// With `organization`: only these account ids.
    pub accounts: Vec<String>,
    /// With `organization`: never these account ids.
    pub exclude_accounts: Vec<String>,
    /// With `organization`: accounts scanned at once (default 8).
    pub max_accounts_in_flight: Option<i64>,
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
    /// Check every field and build the validated request.
    pub fn into_request(mut self) -> Result<ScanRequest, FieldError> {
        let (regions, region_source) = self.region_source()?;
        self.regions = regions;
        if !self.organization {
            for (field, set) in [
                ("role_name", self.role_name.is_some()),
                ("accounts", !self.accounts.is_empty()),
                ("exclude_accounts", !self.exclude_accounts.is_empty()),
                (
                    "max_accounts_in_flight",
                    self.max_accounts_in_flight.is_some(),
                ),
            ] {
                if set {
                    return Err(FieldError::new(field, "needs organization = true"));
                }
            }
            return Ok(ScanRequest::Account(
                self.into_account_request(region_source)?,
            ));
        }
        if self.role_arn.is_some() {
            return Err(FieldError::new(
                "role_arn",
                "not allowed with organization = true (each member's role is role_name)",
            ));
        }
        let max = match self.max_accounts_in_flight {
            None => None,
            Some(n) => Some(
                usize::try_from(n)
                    .ok()
                    .and_then(NonZeroUsize::new)
                    .ok_or_else(|| {
                        FieldError::new("max_accounts_in_flight", "must be a positive number")
                    })?,
            ),
        };
        let external_id = self.external_id.take();
        let session_name = self.session_name.take();
        let role_name = self.role_name.take();
        let only: BTreeSet<String> = std::mem::take(&mut self.accounts).into_iter().collect();
        let exclude: BTreeSet<String> = std::mem::take(&mut self.exclude_accounts)
            .into_iter()
            .collect();
        let scan = self.into_account_request(region_source)?;
        let mut org = OrganizationRequest::new(scan);
        org.role_name = role_name.unwrap_or_else(|| DEFAULT_ROLE_NAME.to_owned());
        org.external_id = external_id;
        org.session_name = session_name;
        org.accounts = AccountFilter { only, exclude };
        if let Some(max) = max {
            org.max_accounts_in_flight = max;
        }
        let org = org.validate().map_err(|e| match e {
            OrganizationRequestError::BadAccountId(_) => {
                FieldError::new("accounts", e.to_string().replace("--", ""))
            }
            OrganizationRequestError::BadRoleName(_) => {
                FieldError::new("role_name", e.to_string().replace("--", ""))
            }
            OrganizationRequestError::Role(role) => FieldError::new(role.field(), role.to_string()),
            other => FieldError::new("organization", other.to_string()),
        })?;
        Ok(ScanRequest::Organization(org))
    }

    /// `regions = ["all"]` (with `regions_fallback`) or the listed regions.
    fn region_source(&self) -> Result<(Vec<String>, RegionSource), FieldError> {
        if self.regions.iter().any(|r| r == "all") {
            if self.regions.len() > 1 {
                return Err(FieldError::new(
                    "regions",
                    "\"all\" cannot be combined with other regions",
                ));
            }
            return Ok((
                Vec::new(),
                RegionSource::Enabled {
                    fallback: self.regions_fallback.clone(),
                },
            ));
        }
        if !self.regions_fallback.is_empty() {
            return Err(FieldError::new(
                "regions_fallback",
                "needs regions = [\"all\"]",
            ));
        }
        Ok((self.regions.clone(), RegionSource::Listed))
    }

    /// The one-account part (an organization applies it to every member).
    fn into_account_request(
        self,
        region_source: RegionSource,
    ) -> Result<DiscoveryRequest, FieldError> {
        let selected_tags = match self.datasets.is_empty() && self.types.is_empty() {
            true => TagSweep::Sweep,
            false => TagSweep::SelectedTypes,
        };
        let mut datasets = self
            .datasets
            .iter()
            .map(|d| d.parse::<Dataset>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| FieldError::new("datasets", e.to_string()))?;
        if !self.types.is_empty() {
            let types = tollgate_collectors::dataset::select(&self.types)
                .map_err(|e| FieldError::new("types", e.to_string()))?;
            datasets.extend(types);
            datasets.sort_unstable();
            datasets.dedup();
        }
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
                .unwrap_or(tollgate_scan::request::DEFAULT_TIMEOUT),
            credentials: None,
            role,
            region_source,
            metrics: self.metrics,
            // The tagging sweep runs for every service scan; a selection keeps its
            // tags-only items to the selected types.
            tags: selected_tags,
            cloudcontrol: Default::default(),
            details: match self.details {
                true => Details::Read,
                false => Details::Listed,
            },
            pricing: match (self.pricing, self.pricing_url) {
                (_, Some(url)) => Some(url),
                (true, None) => Some(tollgate_scan::request::DEFAULT_PRICING_URL.to_string()),
                (false, None) => None,
            },
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
            RequestError::BadPricingUrl(message) => FieldError::new("pricing_url", message),
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
    /// `regions = ["all"]`'s fallback regions; `None` for listed regions.
    enabled_fallback: Option<Vec<String>>,
    datasets: Vec<Dataset>,
    metrics: bool,
    details: Details,
    /// The price list's URL, when priced.
    pricing: Option<String>,
    /// An organization scan's role and filters (never equal to a one-account scan's).
    organization: Option<OrganizationKey>,
}

/// What makes two organization scans different beyond the account part.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct OrganizationKey {
    role_name: String,
    external_id: Option<String>,
    session_name: Option<String>,
    only: BTreeSet<String>,
    exclude: BTreeSet<String>,
}

impl JoinKey {
    /// The key of a validated request (regions and datasets already sorted).
    pub fn of(request: &ScanRequest) -> JoinKey {
        JoinKey {
            profile: request.profile.clone(),
            role: request.role.clone(),
            endpoint_url: request.endpoint_url.clone(),
            regions: request.regions.clone(),
            enabled_fallback: match &request.region_source {
                RegionSource::Listed => None,
                RegionSource::Enabled { fallback } => Some(fallback.clone()),
            },
            datasets: request.datasets.clone(),
            metrics: request.metrics,
            details: request.details,
            pricing: request.pricing.clone(),
            organization: request.organization().map(|org| OrganizationKey {
                role_name: org.role_name.clone(),
                external_id: org.external_id.clone(),
                session_name: org.session_name.clone(),
                only: org.accounts.only.clone(),
                exclude: org.accounts.exclude.clone(),
            }),
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
    fn details_reach_the_request_and_make_another_scan() {
        let base = fields(&["us-east-1"], &["kms-keys"]);
        let with_details = ScanFields {
            details: true,
            ..base.clone()
        };
        let (a, b) = (
            base.into_request().unwrap(),
            with_details.into_request().unwrap(),
        );
        assert_eq!(a.details, Details::Listed);
        assert_eq!(b.details, Details::Read);
        assert_ne!(JoinKey::of(&a), JoinKey::of(&b));
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
