//! Fleet settings from the environment (and, for `tollgate serve`, the service
//! configuration's `[fleet]` section), validated once at the edge.
//!
//! | variable                      | meaning                                         | default        |
//! |-------------------------------|-------------------------------------------------|----------------|
//! | `TOLLGATE_FLEET_TABLE`        | the table; unset = no fleet mode                | —              |
//! | `TOLLGATE_FLEET_REGION`       | its region                                      | the SDK chain  |
//! | `TOLLGATE_FLEET_ENDPOINT_URL` | another endpoint (dynalite in tests)            | AWS            |
//! | `TOLLGATE_FLEET_SKEW_MS`      | bound on clock skew between hosts, ms           | 1000           |
//! | `TOLLGATE_FLEET_ON_ERROR`     | `local-share` or `stop`                         | `local-share`  |
//!
//! Credentials come from the usual chain (environment, profile, instance role).
//!
//! Where both give a value, the environment wins, value by value ([`FleetValues::or`]):
//! every other tollgate command on the host reads only the environment, so a variable
//! means the same to all of them, and an operator can override one value (say
//! `TOLLGATE_FLEET_ON_ERROR=stop` during an incident) without editing a shared file.

use std::time::Duration;

use tollgate_quota::fleet::{FleetConfig, OnError, UnknownOnError, BLOCK_REFRESH};

pub const TABLE_ENV: &str = "TOLLGATE_FLEET_TABLE";
pub const REGION_ENV: &str = "TOLLGATE_FLEET_REGION";
pub const ENDPOINT_ENV: &str = "TOLLGATE_FLEET_ENDPOINT_URL";
pub const SKEW_ENV: &str = "TOLLGATE_FLEET_SKEW_MS";
pub const ON_ERROR_ENV: &str = "TOLLGATE_FLEET_ON_ERROR";

/// The longest skew bound accepted: a block must stay spendable for a while after it.
pub const MAX_SKEW: Duration = Duration::from_secs(60);

/// Where the table is and how hosts use it.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetSettings {
    pub table: String,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    pub config: FleetConfig,
}

/// A setting that cannot be used: which variable, why, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct SettingsError {
    pub variable: &'static str,
    pub problem: SettingProblem,
}

/// What is wrong with one fleet value, whichever source gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingProblem {
    #[error("{0:?} is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)")]
    TableName(String),
    #[error(
        "{0:?} is not a whole number of milliseconds from 0 to {max}",
        max = MAX_SKEW.as_millis()
    )]
    SkewMs(String),
    #[error("{0:?} is not an endpoint URL (http://HOST[:PORT] or https://...)")]
    EndpointUrl(String),
    #[error(transparent)]
    OnError(#[from] UnknownOnError),
}

/// Fleet settings as one source gives them (the environment, or the service's `[fleet]`
/// section): each value present is checked, none is required yet. Sources are combined
/// with [`FleetValues::or`], then [`FleetValues::settings`] says whether fleet mode is on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetValues {
    pub table: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    pub skew: Option<Duration>,
    pub on_error: Option<OnError>,
}

impl FleetValues {
    /// The `TOLLGATE_FLEET_*` variables that are set (empty counts as unset), checked.
    pub fn from_env() -> Result<FleetValues, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`FleetValues::from_env`], reading variables through `get` (tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<FleetValues, SettingsError> {
        let non_empty = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let fail = |variable: &'static str| move |problem| SettingsError { variable, problem };
        let table = non_empty(TABLE_ENV);
        if let Some(t) = &table {
            check_table(t).map_err(fail(TABLE_ENV))?;
        }
        let skew = match non_empty(SKEW_ENV) {
            None => None,
            Some(v) => Some(
                v.parse::<i64>()
                    .map_err(|_| SettingProblem::SkewMs(v.clone()))
                    .and_then(check_skew_ms)
                    .map_err(fail(SKEW_ENV))?,
            ),
        };
        let on_error = match non_empty(ON_ERROR_ENV) {
            None => None,
            Some(v) => Some(
                v.parse()
                    .map_err(SettingProblem::OnError)
                    .map_err(fail(ON_ERROR_ENV))?,
            ),
        };
        let endpoint_url = non_empty(ENDPOINT_ENV);
        if let Some(url) = &endpoint_url {
            check_endpoint_url(url).map_err(fail(ENDPOINT_ENV))?;
        }
        Ok(FleetValues {
            table,
            region: non_empty(REGION_ENV),
            endpoint_url,
            skew,
            on_error,
        })
    }

    /// Each of `self`'s values, and `fallback`'s where `self` has none.
    pub fn or(self, fallback: FleetValues) -> FleetValues {
        FleetValues {
            table: self.table.or(fallback.table),
            region: self.region.or(fallback.region),
            endpoint_url: self.endpoint_url.or(fallback.endpoint_url),
            skew: self.skew.or(fallback.skew),
            on_error: self.on_error.or(fallback.on_error),
        }
    }

    /// The settings with defaults filled in; `None` without a table (no fleet mode).
    pub fn settings(self) -> Option<FleetSettings> {
        Some(FleetSettings {
            table: self.table?,
            region: self.region,
            endpoint_url: self.endpoint_url,
            config: FleetConfig {
                skew: self.skew.unwrap_or(tollgate_quota::fleet::DEFAULT_SKEW),
                refresh: BLOCK_REFRESH,
                on_error: self.on_error.unwrap_or_default(),
            },
        })
    }
}

/// A DynamoDB table name: 3 to 255 of `a-z A-Z 0-9 _ - .`.
pub fn check_table(table: &str) -> Result<(), SettingProblem> {
    let valid = (3..=255).contains(&table.len())
        && table
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if valid {
        Ok(())
    } else {
        Err(SettingProblem::TableName(table.to_string()))
    }
}

/// A skew bound in milliseconds, from 0 to [`MAX_SKEW`].
pub fn check_skew_ms(ms: i64) -> Result<Duration, SettingProblem> {
    match u64::try_from(ms) {
        Ok(ms) if Duration::from_millis(ms) <= MAX_SKEW => Ok(Duration::from_millis(ms)),
        _ => Err(SettingProblem::SkewMs(ms.to_string())),
    }
}

/// An endpoint URL: `http://` or `https://` and a host.
pub fn check_endpoint_url(url: &str) -> Result<(), SettingProblem> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(()),
        _ => Err(SettingProblem::EndpointUrl(url.to_string())),
    }
}

impl FleetSettings {
    /// The settings in the environment; `None` when `TOLLGATE_FLEET_TABLE` is unset or
    /// empty (then no other `TOLLGATE_FLEET_*` variable is read: nothing changes).
    pub fn from_env() -> Result<Option<FleetSettings>, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`FleetSettings::from_env`], reading variables through `get` (tests).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<FleetSettings>, SettingsError> {
        if get(TABLE_ENV).is_none_or(|t| t.trim().is_empty()) {
            return Ok(None);
        }
        Ok(FleetValues::from_lookup(get)?.settings())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn no_table_means_no_fleet_mode() {
        assert_eq!(FleetSettings::from_lookup(lookup(&[])), Ok(None));
        assert_eq!(
            FleetSettings::from_lookup(lookup(&[(TABLE_ENV, " ")])),
            Ok(None)
        );
    }

    #[test]
    fn settings_are_read_with_defaults() {
        let s = FleetSettings::from_lookup(lookup(&[
            (TABLE_ENV, "tollgate-fleet"),
            (ENDPOINT_ENV, "http://127.0.0.1:4567"),
            (SKEW_ENV, "250"),
            (ON_ERROR_ENV, "stop"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(s.table, "tollgate-fleet");
        assert_eq!(s.endpoint_url.as_deref(), Some("http://127.0.0.1:4567"));
        assert_eq!(s.config.skew, Duration::from_millis(250));
        assert_eq!(s.config.on_error, OnError::Stop);
        assert_eq!(s.region, None);
    }

    #[test]
    fn other_variables_are_not_read_without_a_table() {
        assert_eq!(
            FleetSettings::from_lookup(lookup(&[(SKEW_ENV, "soon")])),
            Ok(None)
        );
    }

    #[test]
    fn each_value_of_the_first_source_wins_and_the_rest_fall_back() {
        let env = FleetValues {
            on_error: Some(OnError::Stop),
            ..FleetValues::default()
        };
        let file = FleetValues {
            table: Some("from-file".into()),
            on_error: Some(OnError::LocalShare),
            skew: Some(Duration::from_millis(300)),
            ..FleetValues::default()
        };
        let s = env.or(file).settings().unwrap();
        assert_eq!(s.table, "from-file");
        assert_eq!(s.config.on_error, OnError::Stop);
        assert_eq!(s.config.skew, Duration::from_millis(300));
        assert_eq!(
            FleetValues::default().settings(),
            None,
            "no table, no fleet"
        );
    }

    #[test]
    fn checks_say_what_is_wrong() {
        assert!(check_table("ok-table").is_ok());
        assert!(check_table("x")
            .unwrap_err()
            .to_string()
            .contains("table name"));
        assert_eq!(check_skew_ms(60_000), Ok(MAX_SKEW));
        assert!(check_skew_ms(60_001).is_err());
        assert!(check_skew_ms(-1).is_err());
        assert!(check_endpoint_url("http://127.0.0.1:4567").is_ok());
        assert!(check_endpoint_url("https://dynamodb.eu-west-1.amazonaws.com").is_ok());
        assert!(check_endpoint_url("127.0.0.1:4567").is_err());
        assert!(check_endpoint_url("http://").is_err());
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (pairs, var) in [
            (vec![(TABLE_ENV, "a b")], TABLE_ENV),
            (vec![(TABLE_ENV, "ok-table"), (SKEW_ENV, "-1")], SKEW_ENV),
            (
                vec![(TABLE_ENV, "ok-table"), (SKEW_ENV, "999999")],
                SKEW_ENV,
            ),
            (
                vec![(TABLE_ENV, "ok-table"), (ON_ERROR_ENV, "full")],
                ON_ERROR_ENV,
            ),
            (
                vec![(TABLE_ENV, "ok-table"), (ENDPOINT_ENV, "localhost:4567")],
                ENDPOINT_ENV,
            ),
        ] {
            let e = FleetSettings::from_lookup(lookup(&pairs)).unwrap_err();
            assert_eq!(e.variable, var);
        }
    }
}
