//! The AWS regions tollgate knows, so that a misspelt `--regions us-est-1` is a usage
//! error before any call instead of DNS failures, an unresolved caller and a scan on
//! isolated admission.
//!
//! Why a list of our own? The SDK validates nothing: it builds `kms.us-est-1.amazonaws.com`
//! and lets DNS fail. Its endpoint rules carry a region table, but not as public API.
//! The list below is AWS's published region table (commercial, China, GovCloud, the
//! isolated partitions and the European Sovereign Cloud) as of 2026-11. A region AWS
//! opens later is accepted once named in `TOLLGATE_EXTRA_REGIONS` (comma-separated), and
//! any region is accepted with `--endpoint-url`, where the user chose the endpoint
//! (emulators accept any name).
//!
//! The accepted regions are a value, [`KnownRegions`]: the table plus the extras read
//! from the environment when the value is built ([`KnownRegions::from_env`]), not cached
//! in a process-wide static, so a test or an embedder can pass its own.

/// The region used when neither the request nor the AWS configuration names one.
pub const FALLBACK_REGION: &str = "us-east-1";

/// Environment variable naming regions to accept beyond [`KNOWN_REGIONS`].
pub const EXTRA_REGIONS_ENV: &str = "TOLLGATE_EXTRA_REGIONS";

/// Where the list comes from, for error messages.
pub const KNOWN_REGIONS_SOURCE: &str =
    "tollgate's table of AWS regions (engine/src/regions.rs, AWS's region list as of 2026-11)";

/// AWS's regions, as of 2026-11.
pub const KNOWN_REGIONS: &[&str] = &[
    // aws
    "af-south-1",
    "ap-east-1",
    "ap-east-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "mx-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    // aws-cn
    "cn-north-1",
    "cn-northwest-1",
    // aws-us-gov
    "us-gov-east-1",
    "us-gov-west-1",
    // isolated partitions
    "us-iso-east-1",
    "us-iso-west-1",
    "us-isob-east-1",
    "us-isof-east-1",
    "us-isof-south-1",
    "eu-isoe-west-1",
    // aws-eusc
    "eusc-de-east-1",
];

/// The regions a request may name: [`KNOWN_REGIONS`] and the user's extras.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownRegions {
    extra: Vec<String>,
}

impl KnownRegions {
    /// AWS's table only.
    pub fn aws() -> Self {
        KnownRegions::default()
    }

    /// AWS's table and the regions of `list` (comma-separated, as `TOLLGATE_EXTRA_REGIONS`).
    pub fn with_extra(list: &str) -> Self {
        KnownRegions {
            extra: parse_list(list),
        }
    }

    /// AWS's table and `TOLLGATE_EXTRA_REGIONS` as the environment has it now.
    pub fn from_env() -> Self {
        std::env::var(EXTRA_REGIONS_ENV)
            .map(|v| KnownRegions::with_extra(&v))
            .unwrap_or_default()
    }

    /// Whether `region` is a known AWS region or one of the extras.
    pub fn contains(&self, region: &str) -> bool {
        KNOWN_REGIONS.contains(&region) || self.extra.iter().any(|r| r == region)
    }
}

fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for r in KNOWN_REGIONS {
            assert!(seen.insert(r), "{r} twice");
        }
    }

    #[test]
    fn known_regions_are_known_and_misspellings_are_not() {
        let known = KnownRegions::aws();
        assert!(known.contains("us-east-1"));
        assert!(known.contains("eu-west-1"));
        assert!(known.contains("us-gov-west-1"));
        assert!(!known.contains("us-est-1"));
        assert!(!known.contains("us-east-9"));
    }

    #[test]
    fn extras_are_known_only_to_the_value_that_names_them() {
        let extra = KnownRegions::with_extra("xx-new-1");
        assert!(extra.contains("xx-new-1") && extra.contains("us-east-1"));
        assert!(!KnownRegions::aws().contains("xx-new-1"));
    }

    #[test]
    fn the_extra_list_is_comma_separated_and_trimmed() {
        assert_eq!(
            parse_list(" xx-new-1, ,yy-new-2 "),
            ["xx-new-1", "yy-new-2"]
        );
        assert!(parse_list("").is_empty());
    }
}
