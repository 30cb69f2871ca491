//! The service's configuration file (TOML), read in two stages like the rest of
//! tollgate: [`raw`] is the file's shape (unknown keys refused), then [`validate`] turns
//! it into one [`ServiceConfig`] of checked values. Every refusal is a [`ConfigError`]
//! naming the file, line and key; nothing starts on a bad file.
//!
//! ```toml
//! [service]
//! max_concurrent_scans = 2          # default 2
//! max_scans_per_account = 1         # default 1 (docs/service.md, "Guard rails")
//! cooldown = "60s"                  # default 60s; "0" turns it off
//! catch_up = true                   # default true
//! retention = { reports_per_target = 50, days = 30 }
//! store = "postgres://scanner@db/inventory"  # default: inventory.sqlite in the state
//!                                   # directory; "off": no store (docs/inventory.md)
//!
//! [[target]]
//! name = "prod"
//! regions = ["us-east-1", "eu-west-1"]
//! datasets = ["s3-buckets", "kms-keys"]   # default: all
//! profile = "prod"                  # optional
//! endpoint_url = "http://127.0.0.1:5000"  # optional (emulators)
//! timeout = "5m"                    # optional
//! role_arn = "arn:aws:iam::111111111111:role/scanner"  # optional: scan that account
//! external_id = "..."               # optional, with role_arn
//! session_name = "tollgate"         # optional, with role_arn (default tollgate)
//! metrics = true                    # optional: CloudWatch activity (GetMetricData, paid)
//! details = true                    # optional: Cloud Control GetResource per identifiers-only item
//!
//! [[schedule]]
//! target = "prod"
//! cron = "30 2 * * *"               # 5 fields, croner syntax
//! timezone = "Europe/Berlin"        # IANA name
//!
//! [fleet]                           # optional: fleet mode (docs/fleet.md)
//! table = "tollgate-fleet"          # required in the section
//! region = "eu-west-1"              # optional (default: the SDK's region chain)
//! endpoint_url = "http://127.0.0.1:4567"  # optional (dynalite in tests)
//! skew_ms = 1000                    # optional, 0..=60000 (default 1000)
//! on_error = "local-share"          # or "stop" (default local-share)
//! ```
//!
//! `TOLLGATE_FLEET_*` in the environment win over `[fleet]`, value by value.

mod error;
mod fleet;
mod raw;
mod target;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Duration;

pub use error::ConfigError;
use error::Locator;
use tollgate_fleet::FleetValues;

use crate::duration::parse_duration;
use crate::manager::guard::{GuardSettings, DEFAULT_MAX_SCANS_PER_ACCOUNT};
use crate::scan_request::ScanRequest;
use crate::scheduler::{CronNext, ScheduleEntry};
use std::sync::Arc;
use tollgate_quota::schedule::CronSchedule;

/// Default `max_concurrent_scans`.
pub const DEFAULT_MAX_CONCURRENT_SCANS: usize = 2;
/// Default reports kept per target.
pub const DEFAULT_REPORTS_PER_TARGET: usize = 50;
/// Default age after which reports are dropped.
pub const DEFAULT_RETENTION_DAYS: u64 = 30;

/// The validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceConfig {
    /// Scans running at once; more wait `queued`.
    pub max_concurrent_scans: NonZeroUsize,
    /// Per-account cap and on-demand cooldown.
    pub guard: GuardSettings,
    /// What the history keeps.
    pub retention: Retention,
    /// Run a schedule missed while the service was down once at start-up.
    pub catch_up: bool,
    /// Named targets.
    pub targets: BTreeMap<String, ScanRequest>,
    /// `[[schedule]]` entries, each naming a target.
    pub schedules: Vec<ScheduleEntry>,
    /// `[fleet]`, checked; `tollgate serve` lets `TOLLGATE_FLEET_*` win over each value.
    pub fleet: Option<FleetValues>,
    /// Where every finished scan is stored (docs/inventory.md).
    pub store: StoreSetting,
}

/// `service.store`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreSetting {
    /// `inventory.sqlite` in the state directory.
    #[default]
    StateDir,
    /// `"off"`: scans are not stored.
    Off,
    /// A store URL (checked when the file is read; its password never printed).
    Url(String),
}

/// How much history is kept: the newest `reports_per_target` finished scans per target
/// (ad-hoc scans count as one target), none older than `max_age`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Finished scans kept per target.
    pub reports_per_target: NonZeroUsize,
    /// Finished scans older than this are dropped.
    pub max_age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            reports_per_target: NonZeroUsize::new(DEFAULT_REPORTS_PER_TARGET).expect("nonzero"),
            max_age: Duration::from_secs(DEFAULT_RETENTION_DAYS * 86_400),
        }
    }
}

impl Default for ServiceConfig {
    /// On-demand scans only (no `--config`).
    fn default() -> Self {
        ServiceConfig {
            max_concurrent_scans: NonZeroUsize::new(DEFAULT_MAX_CONCURRENT_SCANS).expect("nonzero"),
            guard: GuardSettings::default(),
            retention: Retention::default(),
            catch_up: true,
            targets: BTreeMap::new(),
            schedules: Vec::new(),
            fleet: None,
            store: StoreSetting::StateDir,
        }
    }
}

impl ServiceConfig {
    /// Read and validate `path`.
    pub fn load(path: &Path) -> Result<ServiceConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            key: None,
            message: format!("cannot read it: {e}"),
        })?;
        ServiceConfig::parse(path, &text)
    }

    /// Validate `text`, read from `file` (named in errors).
    pub fn parse(file: &Path, text: &str) -> Result<ServiceConfig, ConfigError> {
        let at = Locator { file, text };
        let raw: raw::RawConfig = toml::from_str(text).map_err(|e| at.parse(&e))?;
        validate(&at, raw)
    }
}

fn positive(
    at: &Locator<'_>,
    key: &str,
    value: Option<toml::Spanned<i64>>,
    default: usize,
) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) if *v.get_ref() >= 1 => {
            usize::try_from(*v.get_ref()).map_err(|_| at.at(Some(v.span()), key, "too large"))
        }
        Some(v) => Err(at.at(
            Some(v.span()),
            key,
            format!("must be at least 1, not {}", v.get_ref()),
        )),
    }
}

/// Stage two: check every value.
fn validate(at: &Locator<'_>, raw: raw::RawConfig) -> Result<ServiceConfig, ConfigError> {
    let service = raw.service;
    let max = positive(
        at,
        "service.max_concurrent_scans",
        service.max_concurrent_scans.clone(),
        DEFAULT_MAX_CONCURRENT_SCANS,
    )?;
    let guard = guard(at, &service)?;
    let retention = retention(at, service.retention.unwrap_or_default())?;
    let targets = target::validate(at, raw.target)?;
    let schedules = schedules(at, raw.schedule, &targets)?;
    let fleet = raw.fleet.map(|f| fleet::validate(at, f)).transpose()?;
    let store = match &service.store {
        None => StoreSetting::StateDir,
        Some(v) if v.get_ref().trim() == "off" => StoreSetting::Off,
        Some(v) => match tollgate_inventory::StoreUrl::parse(v.get_ref()) {
            Ok(_) => StoreSetting::Url(v.get_ref().clone()),
            Err(e) => {
                return Err(at.at(
                    Some(v.span()),
                    "service.store",
                    format!("{e} (or \"off\": no store)"),
                ))
            }
        },
    };
    Ok(ServiceConfig {
        store,
        max_concurrent_scans: NonZeroUsize::new(max).expect("checked positive"),
        guard,
        retention,
        catch_up: service.catch_up.unwrap_or(true),
        targets,
        schedules,
        fleet,
    })
}

/// `service.max_scans_per_account` and `service.cooldown`.
fn guard(at: &Locator<'_>, service: &raw::RawService) -> Result<GuardSettings, ConfigError> {
    let per_account = positive(
        at,
        "service.max_scans_per_account",
        service.max_scans_per_account.clone(),
        DEFAULT_MAX_SCANS_PER_ACCOUNT,
    )?;
    let cooldown = match &service.cooldown {
        None => GuardSettings::default().cooldown,
        Some(text) if text.get_ref().trim() == "0" => Duration::ZERO,
        Some(text) => parse_duration(text.get_ref()).map_err(|e| {
            at.at(
                Some(text.span()),
                "service.cooldown",
                format!("{e}; \"0\" turns the cooldown off"),
            )
        })?,
    };
    Ok(GuardSettings {
        max_scans_per_account: NonZeroUsize::new(per_account).expect("checked positive"),
        cooldown,
    })
}

/// `service.retention`.
fn retention(at: &Locator<'_>, retention: raw::RawRetention) -> Result<Retention, ConfigError> {
    let keep = positive(
        at,
        "service.retention.reports_per_target",
        retention.reports_per_target,
        DEFAULT_REPORTS_PER_TARGET,
    )?;
    let days_span = retention.days.as_ref().map(|d| d.span());
    let days = positive(
        at,
        "service.retention.days",
        retention.days,
        DEFAULT_RETENTION_DAYS as usize,
    )?;
    // Checked: `days * 86_400` overflowed u64 for days past 2.1e14 (a panic in a debug
    // build, a wrapped, far shorter retention in a release one).
    let max_age = (days as u64)
        .checked_mul(86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| {
            at.at(
                days_span,
                "service.retention.days",
                format!("too large: at most {} days", u64::MAX / 86_400),
            )
        })?;
    Ok(Retention {
        reports_per_target: NonZeroUsize::new(keep).expect("checked positive"),
        max_age,
    })
}

/// Every `[[schedule]]`, each naming one of `targets`.
fn schedules(
    at: &Locator<'_>,
    raw: Vec<raw::RawSchedule>,
    targets: &BTreeMap<String, ScanRequest>,
) -> Result<Vec<ScheduleEntry>, ConfigError> {
    let mut schedules = Vec::new();
    for (i, schedule) in raw.into_iter().enumerate() {
        let key = |field: &str| format!("schedule[{i}].{field}");
        let target = schedule.target.get_ref().trim().to_string();
        if !targets.contains_key(&target) {
            return Err(at.at(
                Some(schedule.target.span()),
                key("target"),
                format!("no [[target]] is named {target:?}"),
            ));
        }
        let cron = CronSchedule::parse(schedule.cron.get_ref(), schedule.timezone.get_ref().trim())
            .map_err(|e| {
                let (field, span) = match e.subject() {
                    "timezone" => ("timezone", schedule.timezone.span()),
                    _ => ("cron", schedule.cron.span()),
                };
                at.at(Some(span), key(field), e.to_string())
            })?;
        schedules.push(ScheduleEntry {
            id: format!("{target} {} {}", cron.pattern(), cron.timezone()),
            target,
            next: Arc::new(CronNext(cron)),
        });
    }
    Ok(schedules)
}

#[cfg(test)]
mod tests;
