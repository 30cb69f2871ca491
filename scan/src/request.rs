//! `DiscoveryRequest`: what a scan should collect, where, and for how long; validated
//! once here so the supervisor and collectors only see usable values.

use std::time::Duration;

pub use crate::regions::FALLBACK_REGION;
pub use tollgate_engine::aws::assume_role::{AssumeRole, RoleError};

use crate::regions::KnownRegions;
pub use crate::regions::RegionSource;
use tollgate_collectors::cloudcontrol::{Charges, Details};
use tollgate_collectors::dataset::Dataset;
pub use tollgate_collectors::tagging::TagSweep;

/// Default discovery deadline (seed 000: 5 minutes); reservations expire with it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Longest accepted scan deadline: 7 days. Far beyond any real scan, and far from where
/// `Instant + timeout` overflows (which would panic) or a reservation's expiry stops
/// meaning anything.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// One scan's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryRequest {
    /// Regions to scan; empty means the AWS configuration's region (else `us-east-1`).
    pub regions: Vec<String>,
    /// Datasets to collect; empty means the defaults (`Dataset::defaults`: every native
    /// type, EC2's included).
    pub datasets: Vec<Dataset>,
    /// Send every request to this endpoint (an emulator such as moto); S3 then uses
    /// path-style addressing.
    pub endpoint_url: Option<String>,
    /// AWS profile for the default credential chain.
    pub profile: Option<String>,
    /// The whole scan's deadline.
    pub timeout: Duration,
    /// Static credentials instead of the default credential chain (the fixture
    /// simulator, tests). `None` in real runs. `Debug` redacts the secret.
    pub credentials: Option<aws_credential_types::Credentials>,
    /// Scan another account: assume this role (STS `AssumeRole`) on top of the
    /// credentials above; the account resolved, keying quotas and named by the report, is
    /// then the role's.
    pub role: Option<AssumeRole>,
    /// Where the regions come from: `regions` as listed (the default), or the regions
    /// enabled for the account (`--regions all`: Account Management `ListRegions`).
    pub region_source: RegionSource,
    /// `--metrics`: after the datasets, read every Lambda function's, DynamoDB table's
    /// and S3 bucket's CloudWatch activity (GetMetricData, a paid API: billed per metric
    /// requested) into its item's `activity`. Off by default: no CloudWatch call is made.
    pub metrics: bool,
    /// The tagging sweep (Resource Groups Tagging API `GetResources` per region, beside
    /// the datasets): tags merged into the items, the rest reported `tags-only`. On by
    /// default; `TagSweep::Skip` (`--no-tags`) makes no tagging call.
    pub tags: TagSweep,
    /// What each Cloud Control call is charged: its own key and one token of each
    /// underlying operation of its type's handler (the default), or, for a diagnostic
    /// run (`TOLLGATE_CLOUDCONTROL_CHARGES=own-key`), its own key alone.
    pub cloudcontrol: Charges,
    /// `--details`: the Cloud Control sweep reads every item its listing returned with
    /// its primary identifier only in full (`GetResource` each, charged to
    /// `cloudcontrol:GetResource` and the type's read operations). Off by default.
    pub details: Details,
    /// `--pricing`: the public price list's base URL (`--pricing-url`, else
    /// [`DEFAULT_PRICING_URL`]) to price transit gateway attachments and gateways from;
    /// `None` (the default): no price is read.
    pub pricing: Option<String>,
}

pub use tollgate_collectors::pricing::DEFAULT_URL as DEFAULT_PRICING_URL;

impl Default for DiscoveryRequest {
    fn default() -> Self {
        DiscoveryRequest {
            regions: Vec::new(),
            datasets: Vec::new(),
            endpoint_url: None,
            profile: None,
            timeout: DEFAULT_TIMEOUT,
            credentials: None,
            role: None,
            region_source: RegionSource::Listed,
            metrics: false,
            tags: TagSweep::Sweep,
            cloudcontrol: Charges::Underlying,
            details: Details::Listed,
            pricing: None,
        }
    }
}

/// A request was refused before any AWS call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A region name is not a region.
    #[error("{0:?} is not an AWS region name (expected something like us-east-1)")]
    BadRegion(String),
    /// A region name is well formed but not a region AWS has (a typo such as `us-est-1`).
    #[error(
        "{0:?} is not a known AWS region (known: {source}); check the spelling, or, for a \
         region AWS opened since, add it to {env}",
        source = crate::regions::KNOWN_REGIONS_SOURCE,
        env = crate::regions::EXTRA_REGIONS_ENV
    )]
    UnknownRegion(String),
    /// The timeout is zero.
    #[error("the discovery timeout must be longer than zero")]
    ZeroTimeout,
    /// The timeout is longer than [`MAX_TIMEOUT`].
    #[error("the discovery timeout must be at most 7 days (168h)")]
    TimeoutTooLong,
    /// The endpoint URL is not http(s).
    #[error("--endpoint-url {0:?} must start with http:// or https://")]
    BadEndpoint(String),
    /// The price list URL is not an http(s) URL (the message says how).
    #[error("{0}")]
    BadPricingUrl(String),
    /// The role to assume is malformed (its field: `RoleError::field`).
    #[error(transparent)]
    BadRole(#[from] RoleError),
}

impl DiscoveryRequest {
    /// What the engine's credentials check ([`check_credentials`](tollgate_engine::aws::check_credentials))
    /// needs of this request.
    pub fn credentials_source(&self) -> tollgate_engine::aws::CredentialsSource<'_> {
        tollgate_engine::aws::CredentialsSource {
            first_region: self.regions.first().map(String::as_str),
            static_credentials: self.credentials.is_some(),
            profile: self.profile.as_deref(),
            endpoint_url: self.endpoint_url.as_deref(),
        }
    }

    /// The datasets to collect, deduplicated, in report order.
    pub fn effective_datasets(&self) -> Vec<Dataset> {
        if self.datasets.is_empty() {
            return Dataset::defaults();
        }
        let mut datasets = self.datasets.clone();
        datasets.sort_unstable();
        datasets.dedup();
        datasets
    }

    /// Check the request against AWS's regions and `TOLLGATE_EXTRA_REGIONS` as set now;
    /// regions are deduplicated and sorted.
    pub fn validate(self) -> Result<DiscoveryRequest, RequestError> {
        self.validate_in(&KnownRegions::from_env())
    }

    /// Check the request, accepting the regions of `known`; regions are deduplicated and
    /// sorted.
    pub fn validate_in(mut self, known: &KnownRegions) -> Result<DiscoveryRequest, RequestError> {
        let fallback = match &self.region_source {
            RegionSource::Listed => &[][..],
            RegionSource::Enabled { fallback } => fallback.as_slice(),
        };
        for region in self.regions.iter().chain(fallback) {
            let ok = !region.is_empty()
                && region.len() <= 32
                && region
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && region.contains('-');
            if !ok {
                return Err(RequestError::BadRegion(region.clone()));
            }
            // With --endpoint-url the user chose the endpoint; emulators take any name.
            if self.endpoint_url.is_none() && !known.contains(region) {
                return Err(RequestError::UnknownRegion(region.clone()));
            }
        }
        if self.timeout.is_zero() {
            return Err(RequestError::ZeroTimeout);
        }
        if self.timeout > MAX_TIMEOUT {
            return Err(RequestError::TimeoutTooLong);
        }
        if let Some(url) = &self.endpoint_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(RequestError::BadEndpoint(url.clone()));
            }
        }
        if let Some(url) = &self.pricing {
            tollgate_collectors::pricing::valid_url(url).map_err(RequestError::BadPricingUrl)?;
        }
        if let Some(role) = &self.role {
            role.validate()?;
        }
        self.regions.sort_unstable();
        self.regions.dedup();
        if let RegionSource::Enabled { fallback } = &mut self.region_source {
            fallback.sort_unstable();
            fallback.dedup();
        }
        self.datasets = self.effective_datasets();
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_refuses_bad_values_and_normalises_good_ones() {
        let ok = DiscoveryRequest {
            regions: vec!["us-west-2".into(), "us-east-1".into(), "us-west-2".into()],
            ..Default::default()
        }
        .validate()
        .unwrap();
        assert_eq!(ok.regions, ["us-east-1", "us-west-2"]);
        assert_eq!(ok.datasets, Dataset::defaults());
        for bad in ["", "US-EAST-1", "useast1", "us_east_1"] {
            let req = DiscoveryRequest {
                regions: vec![bad.into()],
                ..Default::default()
            };
            assert!(req.validate().is_err(), "{bad}");
        }
        let zero = DiscoveryRequest {
            timeout: Duration::ZERO,
            ..Default::default()
        };
        assert_eq!(zero.validate(), Err(RequestError::ZeroTimeout));
    }

    #[test]
    fn a_misspelt_region_is_refused_unless_an_endpoint_was_chosen() {
        let typo = DiscoveryRequest {
            regions: vec!["us-est-1".into()],
            ..Default::default()
        };
        let err = typo.clone().validate().unwrap_err();
        assert_eq!(err, RequestError::UnknownRegion("us-est-1".into()));
        assert!(err.to_string().contains("scan/src/regions.rs"), "{err}");
        let emulator = DiscoveryRequest {
            endpoint_url: Some("http://127.0.0.1:5000".into()),
            ..typo
        };
        assert!(emulator.validate().is_ok());
    }

    #[test]
    fn a_region_named_in_the_extras_value_is_accepted_by_that_value_only() {
        let new = DiscoveryRequest {
            regions: vec!["xx-new-1".into()],
            ..Default::default()
        };
        let extras = KnownRegions::with_extra("xx-new-1, yy-new-2");
        assert_eq!(
            new.clone().validate_in(&extras).unwrap().regions,
            ["xx-new-1"]
        );
        assert_eq!(
            new.validate_in(&KnownRegions::aws()),
            Err(RequestError::UnknownRegion("xx-new-1".into()))
        );
    }

    #[test]
    fn fallback_regions_are_checked_like_listed_ones() {
        let all = DiscoveryRequest {
            region_source: RegionSource::Enabled {
                fallback: vec!["eu-west-1".into(), "us-east-1".into(), "eu-west-1".into()],
            },
            ..Default::default()
        };
        assert_eq!(
            all.validate().unwrap().region_source,
            RegionSource::Enabled {
                fallback: vec!["eu-west-1".into(), "us-east-1".into()]
            }
        );
        let typo = DiscoveryRequest {
            region_source: RegionSource::Enabled {
                fallback: vec!["us-est-1".into()],
            },
            ..Default::default()
        };
        assert_eq!(
            typo.validate(),
            Err(RequestError::UnknownRegion("us-est-1".into()))
        );
    }

    #[test]
    fn a_timeout_beyond_seven_days_is_refused_instead_of_overflowing() {
        for timeout in [MAX_TIMEOUT + Duration::from_millis(1), Duration::MAX] {
            let req = DiscoveryRequest {
                timeout,
                ..Default::default()
            };
            assert_eq!(req.validate(), Err(RequestError::TimeoutTooLong));
        }
        let week = DiscoveryRequest {
            timeout: MAX_TIMEOUT,
            ..Default::default()
        };
        assert!(week.validate().is_ok());
    }
}
