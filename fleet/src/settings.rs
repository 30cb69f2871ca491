//! Fleet settings from the environment, validated once at the edge.
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

use std::time::Duration;

use tollgate_quota::fleet::{FleetConfig, OnError, BLOCK_REFRESH};

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
    pub problem: String,
}

impl FleetSettings {
    /// The settings in the environment; `None` when `TOLLGATE_FLEET_TABLE` is unset or empty.
    pub fn from_env() -> Result<Option<FleetSettings>, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`FleetSettings::from_env`], reading variables through `get` (tests).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<FleetSettings>, SettingsError> {
        let non_empty = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let Some(table) = non_empty(TABLE_ENV) else {
            return Ok(None);
        };
        let valid_name = (3..=255).contains(&table.len())
            && table
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid_name {
            return Err(SettingsError {
                variable: TABLE_ENV,
                problem: format!(
                    "{table:?} is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)"
                ),
            });
        }
        let skew = match non_empty(SKEW_ENV) {
            None => tollgate_quota::fleet::DEFAULT_SKEW,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms) if Duration::from_millis(ms) <= MAX_SKEW => Duration::from_millis(ms),
                _ => {
                    return Err(SettingsError {
                        variable: SKEW_ENV,
                        problem: format!(
                            "{v:?} is not a whole number of milliseconds from 0 to {}",
                            MAX_SKEW.as_millis()
                        ),
                    })
                }
            },
        };
        let on_error = match non_empty(ON_ERROR_ENV) {
            None => OnError::default(),
            Some(v) => v.trim().parse().map_err(|problem| SettingsError {
                variable: ON_ERROR_ENV,
                problem,
            })?,
        };
        Ok(Some(FleetSettings {
            table,
            region: non_empty(REGION_ENV),
            endpoint_url: non_empty(ENDPOINT_ENV),
            config: FleetConfig {
                skew,
                refresh: BLOCK_REFRESH,
                on_error,
            },
        }))
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
        ] {
            let e = FleetSettings::from_lookup(lookup(&pairs)).unwrap_err();
            assert_eq!(e.variable, var);
        }
    }
}
