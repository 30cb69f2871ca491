//! Stage one of the configuration: the file's shape, as serde reads it. Unknown keys are
//! refused here; every value that needs checking keeps its span so stage two
//! ([`super::validate`]) can name its line.

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[service]`.
    #[serde(default)]
    pub service: RawService,
    /// `[[target]]`.
    #[serde(default)]
    pub target: Vec<RawTarget>,
    /// `[[schedule]]`.
    #[serde(default)]
    pub schedule: Vec<RawSchedule>,
    /// `[fleet]`.
    pub fleet: Option<RawFleet>,
}

/// `[service]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawService {
    pub max_concurrent_scans: Option<Spanned<i64>>,
    pub max_scans_per_account: Option<Spanned<i64>>,
    pub cooldown: Option<Spanned<String>>,
    pub retention: Option<RawRetention>,
    pub catch_up: Option<bool>,
    /// The inventory store: `sqlite:PATH`, `postgres://...`, or `off`.
    pub store: Option<Spanned<String>>,
}

/// `[service.retention]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    pub reports_per_target: Option<Spanned<i64>>,
    pub days: Option<Spanned<i64>>,
}

/// One `[[target]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    pub name: Spanned<String>,
    pub regions: Option<Spanned<Vec<String>>>,
    pub datasets: Option<Spanned<Vec<String>>>,
    pub types: Option<Spanned<Vec<String>>>,
    pub profile: Option<String>,
    pub endpoint_url: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub role_arn: Option<Spanned<String>>,
    pub external_id: Option<Spanned<String>>,
    pub session_name: Option<Spanned<String>>,
    /// Read the items' CloudWatch activity (GetMetricData, paid); default false.
    #[serde(default)]
    pub metrics: bool,
    /// Read Cloud Control items listed with their identifier only in full (GetResource
    /// per item); default false.
    #[serde(default)]
    pub details: bool,
    /// Price transit gateway attachments and gateways from the public price list;
    /// default false.
    #[serde(default)]
    pub pricing: bool,
    /// The price list's base URL (implies `pricing`).
    pub pricing_url: Option<Spanned<String>>,
    pub regions_fallback: Option<Spanned<Vec<String>>>,
    pub organization: Option<Spanned<bool>>,
    pub role_name: Option<Spanned<String>>,
    pub accounts: Option<Spanned<Vec<String>>>,
    pub exclude_accounts: Option<Spanned<Vec<String>>>,
    pub max_accounts_in_flight: Option<Spanned<i64>>,
}

/// One `[[schedule]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSchedule {
    pub target: Spanned<String>,
    pub cron: Spanned<String>,
    pub timezone: Spanned<String>,
}

/// `[fleet]`: fleet mode's table and settings (`TOLLGATE_FLEET_*` in the environment).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFleet {
    pub table: Spanned<String>,
    pub region: Option<Spanned<String>>,
    pub endpoint_url: Option<Spanned<String>>,
    pub skew_ms: Option<Spanned<i64>>,
    pub on_error: Option<Spanned<String>>,
}
