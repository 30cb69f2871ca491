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

use tollgate_collectors::output::{Reason, ReasonKind, RegionsSource};
use tollgate_engine::aws::CallError;

/// The region used when neither the request nor the AWS configuration names one.
pub use tollgate_engine::aws::FALLBACK_REGION;

/// Environment variable naming regions to accept beyond [`KNOWN_REGIONS`].
pub const EXTRA_REGIONS_ENV: &str = "TOLLGATE_EXTRA_REGIONS";

/// Where the list comes from, for error messages.
pub const KNOWN_REGIONS_SOURCE: &str =
    "tollgate's table of AWS regions (scan/src/regions.rs, AWS's region list as of 2026-11)";

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

/// Where a scan's regions come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RegionSource {
    /// The request's `regions` (empty: the AWS configuration's region, else
    /// [`FALLBACK_REGION`]).
    #[default]
    Listed,
    /// `--regions all`: the regions enabled for the account, from the Account Management
    /// API's `ListRegions` (`ENABLED` and `ENABLED_BY_DEFAULT`), one gated call per page
    /// under the account's own `account:ListRegions` key. Where it is denied or
    /// unavailable, the report says so once (a reason naming the API and the error) and
    /// the scan covers `fallback` instead (empty: the configured region), never silently
    /// one region.
    Enabled {
        /// Regions scanned when `ListRegions` gives no answer (`--regions-fallback`).
        fallback: Vec<String>,
    },
}

/// The operation `--regions all` calls, as reasons name it.
pub const LIST_REGIONS: &str = "account:ListRegions";

/// The operation `--regions all` calls where `ListRegions` gives no answer.
pub const DESCRIBE_REGIONS: &str = "ec2:DescribeRegions";

/// The regions a scan covers and, when `ListRegions` did not decide them, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenRegions {
    /// Sorted, deduplicated, at least one.
    pub regions: Vec<String>,
    /// Why the fallback regions were scanned instead of the enabled ones.
    pub reason: Option<Reason>,
    /// `--regions all` only: where the regions came from.
    pub source: Option<RegionsSource>,
}

impl ChosenRegions {
    /// Whether `ListRegions` decided the regions.
    pub fn listed(&self) -> bool {
        self.source == Some(RegionsSource::ListRegions)
    }

    /// Where `ListRegions` gave no answer: EC2 `DescribeRegions`' regions when it named
    /// any (no reason: the enabled regions are scanned), otherwise the fallback as
    /// chosen, its reason naming `DescribeRegions`' failure too.
    pub fn or_described(self, described: ListRegionsAnswer) -> ChosenRegions {
        let why = match described {
            Ok(mut regions) if !regions.is_empty() => {
                regions.sort_unstable();
                regions.dedup();
                return ChosenRegions {
                    regions,
                    reason: None,
                    source: Some(RegionsSource::DescribeRegions),
                };
            }
            Ok(_) => "it named no region".to_owned(),
            Err(e) => e.to_string(),
        };
        let reason = self.reason.map(|mut r| {
            r.message = format!("{}; {DESCRIBE_REGIONS} gave none either ({why})", r.message);
            r
        });
        ChosenRegions { reason, ..self }
    }
}

/// What `ListRegions` answered (`Ok`: the enabled regions' names).
pub type ListRegionsAnswer = Result<Vec<String>, CallError>;

/// Decide a scan's regions: the enabled ones when `ListRegions` named any; otherwise
/// `fallback` (or `configured` when that is empty) with one reason naming the API and
/// the error. Pure: the scan's setup makes the call (`account:ListRegions`).
pub fn choose_regions(
    answer: ListRegionsAnswer,
    fallback: &[String],
    configured: &str,
) -> ChosenRegions {
    let fallback_regions = || {
        if fallback.is_empty() {
            vec![configured.to_owned()]
        } else {
            fallback.to_vec()
        }
    };
    let (kind, code, why) = match answer {
        Ok(mut regions) if !regions.is_empty() => {
            regions.sort_unstable();
            regions.dedup();
            return ChosenRegions {
                regions,
                reason: None,
                source: Some(RegionsSource::ListRegions),
            };
        }
        Ok(_) => (
            ReasonKind::Unavailable,
            None,
            "it named no enabled region".to_owned(),
        ),
        Err(e) => {
            let kind = if e.is_access_denied() {
                ReasonKind::Unavailable
            } else {
                tollgate_collectors::report_builder::reason_kind(e.kind())
            };
            (kind, e.code().map(str::to_owned), e.to_string())
        }
    };
    let regions = fallback_regions();
    ChosenRegions {
        source: Some(RegionsSource::Fallback),
        reason: Some(Reason {
            operation: LIST_REGIONS.to_owned(),
            field: None,
            kind,
            code,
            message: format!(
                "{LIST_REGIONS} gave no enabled regions ({why}); scanned the fallback regions {} instead (--regions-fallback)",
                regions.join(", ")
            ),
            count: 1,
        }),
        regions,
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
    fn enabled_regions_are_scanned_when_list_regions_names_some() {
        let chosen = choose_regions(
            Ok(vec![
                "us-west-2".into(),
                "eu-west-1".into(),
                "us-west-2".into(),
            ]),
            &["us-east-1".into()],
            "ap-south-1",
        );
        assert_eq!(chosen.regions, ["eu-west-1", "us-west-2"]);
        assert_eq!(chosen.reason, None);
    }

    #[test]
    fn a_denied_list_regions_falls_back_with_one_reason_naming_the_api_and_the_error() {
        let denied = CallError::in_answer(
            tollgate_engine::aws::CallErrorKind::Fatal,
            "ListRegions",
            Some("AccessDeniedException".into()),
            "not authorized",
        )
        .with_status(403);
        let table: &[(&[&str], &[&str])] = &[
            (&["eu-west-1", "us-east-1"], &["eu-west-1", "us-east-1"]),
            (&[], &["ap-south-1"]),
        ];
        for (fallback, expected) in table {
            let fallback: Vec<String> = fallback.iter().map(|r| r.to_string()).collect();
            let chosen = choose_regions(Err(denied.clone()), &fallback, "ap-south-1");
            assert_eq!(chosen.regions, *expected);
            let reason = chosen.reason.expect("a reason");
            assert_eq!(reason.operation, LIST_REGIONS);
            assert_eq!(reason.kind, ReasonKind::Unavailable);
            assert_eq!(reason.code.as_deref(), Some("AccessDeniedException"));
            assert!(
                reason.message.contains("not authorized"),
                "{}",
                reason.message
            );
            assert!(
                reason.message.contains(&expected.join(", ")),
                "{}",
                reason.message
            );
        }
    }

    #[test]
    fn describe_regions_decides_where_list_regions_gave_nothing_and_its_failure_joins_the_reason() {
        let denied = |code: &str| {
            CallError::in_answer(
                tollgate_engine::aws::CallErrorKind::Fatal,
                "op",
                Some(code.into()),
                "not authorized",
            )
            .with_status(403)
        };
        let fallback = vec!["eu-west-1".to_string()];
        let listed = choose_regions(Ok(vec!["us-east-1".into()]), &fallback, "ap-south-1");
        assert!(listed.listed());
        assert_eq!(listed.source, Some(RegionsSource::ListRegions));

        let refused = choose_regions(
            Err(denied("AccessDeniedException")),
            &fallback,
            "ap-south-1",
        );
        assert!(!refused.listed());
        let described = refused
            .clone()
            .or_described(Ok(vec!["us-west-2".into(), "eu-west-1".into()]));
        assert_eq!(described.regions, ["eu-west-1", "us-west-2"]);
        assert_eq!(described.reason, None);
        assert_eq!(described.source, Some(RegionsSource::DescribeRegions));

        let neither = refused.or_described(Err(denied("UnauthorizedOperation")));
        assert_eq!(neither.regions, ["eu-west-1"]);
        assert_eq!(neither.source, Some(RegionsSource::Fallback));
        let reason = neither.reason.expect("a reason");
        assert_eq!(reason.operation, LIST_REGIONS);
        assert_eq!(reason.code.as_deref(), Some("AccessDeniedException"));
        assert!(
            reason.message.contains(DESCRIBE_REGIONS)
                && reason.message.contains("UnauthorizedOperation"),
            "{}",
            reason.message
        );
    }

    #[test]
    fn an_empty_answer_is_not_silently_one_region() {
        let chosen = choose_regions(Ok(vec![]), &[], "us-east-1");
        assert_eq!(chosen.regions, ["us-east-1"]);
        assert!(chosen
            .reason
            .unwrap()
            .message
            .contains("named no enabled region"));
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
