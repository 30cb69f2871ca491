//! Engine configuration, parsed in two stages: raw values from the environment (or the
//! caller), then one validated [`EngineConfig`] passed everywhere.
//!
//! Invalid quota overrides fail here, before any AWS request, with an error that names
//! the variable and the offending key but never echoes its JSON.
//!
//! Policies come in layers: the defaults, then the policy file named by
//! `TOLLGATE_POLICY_FILE` (TOML or JSON with the overrides' fields, schedules and
//! allowances included), then `TOLLGATE_QUOTA_OVERRIDES` over both. Errors in the file
//! name the file (and, for a TOML syntax error, its line), never its contents.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tollgate_actors::{BreakerUse, CoordinatorSpec, FleetSpec};

use tollgate_quota::overrides::{OverrideError, PolicyTable, OVERRIDES_ENV};
use tollgate_storage::{DirEnv, ADMISSION_DIR_ENV};

/// Validated engine configuration.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where the admission directory is looked for.
    pub dir_env: DirEnv,
    /// Default policies merged with overrides.
    pub policies: PolicyTable,
    /// Fleet mode for a coordinator this engine starts (`None`: this host's quota is its
    /// own). The engine does not read `TOLLGATE_FLEET_*`: a command that coordinates
    /// passes `tollgate_fleet::spec_from_env()` here ([`EngineConfig::with_fleet`]).
    pub fleet: Option<FleetSpec>,
}

/// A configuration value was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `TOLLGATE_QUOTA_OVERRIDES` (or another override source) is invalid.
    #[error(transparent)]
    Overrides(#[from] OverrideError),
    /// `TOLLGATE_BREAKERS` is neither `on` nor `off`.
    #[error("{BREAKERS_ENV}={value}: say `on` (the default) or `off` (breakers neither asked nor told: a diagnostic control)")]
    Breakers { value: String },
    /// The policy file could not be read or is not TOML or JSON.
    #[error("{POLICY_FILE_ENV}: {path}: {problem}")]
    PolicyFile { path: String, problem: String },
}

/// Names a policy file (TOML or JSON, the overrides' fields), applied under
/// `TOLLGATE_QUOTA_OVERRIDES`.
pub const POLICY_FILE_ENV: &str = "TOLLGATE_POLICY_FILE";

/// The defaults with the policy file at `path` over them.
pub fn policy_file_table(path: &Path) -> Result<PolicyTable, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::PolicyFile {
        path: name.clone(),
        problem: format!("cannot read it ({e}); fix the path or unset {POLICY_FILE_ENV}"),
    })?;
    let is_json = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Some(true),
        Some("toml") => Some(false),
        _ => None,
    };
    policy_text_table(&text, &name, is_json)
}

/// The defaults with a policy file's `text` over them; `name` names it in errors.
/// `is_json`: the format if the file's extension says (`None`: JSON when the text starts
/// with `{`, else TOML).
pub fn policy_text_table(
    text: &str,
    name: &str,
    is_json: Option<bool>,
) -> Result<PolicyTable, ConfigError> {
    let fail = |problem: String| ConfigError::PolicyFile {
        path: name.to_owned(),
        problem,
    };
    let is_json = is_json.unwrap_or_else(|| text.trim_start().starts_with('{'));
    let json = if is_json {
        text.to_owned()
    } else {
        let value: serde_json::Value = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            fail(match line {
                Some(line) => format!("not valid TOML (line {line}); fix the file"),
                None => "not valid TOML; fix the file".to_owned(),
            })
        })?;
        value.to_string()
    };
    Ok(PolicyTable::defaults().apply_overrides(&json, name)?)
}

/// Turns the circuit breakers off for this process's calls (`off`; `on` or unset: the
/// default). A diagnostic control: the outage bench's breakers-off runs.
pub const BREAKERS_ENV: &str = "TOLLGATE_BREAKERS";

/// Read [`BREAKERS_ENV`] from the process environment.
pub fn breakers_from_env() -> Result<BreakerUse, ConfigError> {
    breakers_from(std::env::var(BREAKERS_ENV).ok().as_deref())
}

fn breakers_from(value: Option<&str>) -> Result<BreakerUse, ConfigError> {
    match value.map(str::trim) {
        None | Some("") | Some("on") => Ok(BreakerUse::On),
        Some("off") => Ok(BreakerUse::Off),
        Some(other) => Err(ConfigError::Breakers {
            value: other.to_owned(),
        }),
    }
}

impl EngineConfig {
    /// Read `TOLLGATE_ADMISSION_DIR`, `XDG_CACHE_HOME`, `HOME`, `TMPDIR`,
    /// `TOLLGATE_POLICY_FILE` and `TOLLGATE_QUOTA_OVERRIDES` from the process environment.
    pub fn from_env() -> Result<EngineConfig, ConfigError> {
        let overrides = std::env::var(OVERRIDES_ENV).ok();
        let base = match std::env::var_os(POLICY_FILE_ENV) {
            Some(path) if !path.is_empty() => policy_file_table(Path::new(&path))?,
            _ => PolicyTable::defaults(),
        };
        let policies = match overrides.as_deref() {
            Some(json) => base.apply_overrides(json, OVERRIDES_ENV)?,
            None => base,
        };
        Ok(EngineConfig {
            dir_env: DirEnv::from_process_env(),
            policies,
            fleet: None,
        })
    }

    /// Run a coordinator this engine starts in fleet mode on `fleet` (`None`: without).
    pub fn with_fleet(mut self, fleet: Option<FleetSpec>) -> EngineConfig {
        self.fleet = fleet;
        self
    }

    /// What a coordinator this engine starts enforces, now or by failover: the policies'
    /// schedules and allowances on the real clock, and the fleet mode.
    pub fn coordinator_spec(&self) -> CoordinatorSpec {
        CoordinatorSpec::enforcing(Arc::new(self.policies.clone())).with_fleet(self.fleet.clone())
    }

    /// Use `dir` as the admission directory, as if `TOLLGATE_ADMISSION_DIR` named it.
    pub fn with_admission_dir(mut self, dir: Option<PathBuf>) -> EngineConfig {
        if dir.is_some() {
            self.dir_env.explicit = dir;
        }
        self
    }
}

/// The environment variables the engine reads, for help texts.
pub const ENV_VARS: &[&str] = &[ADMISSION_DIR_ENV, POLICY_FILE_ENV, OVERRIDES_ENV];

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::{QuotaKey, ReadTime};

    fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn key(text: &str) -> QuotaKey {
        text.parse().unwrap()
    }

    #[test]
    fn breakers_are_on_unless_the_variable_says_off() {
        assert_eq!(breakers_from(None).unwrap(), BreakerUse::On);
        assert_eq!(breakers_from(Some("")).unwrap(), BreakerUse::On);
        assert_eq!(breakers_from(Some("on")).unwrap(), BreakerUse::On);
        assert_eq!(breakers_from(Some(" off ")).unwrap(), BreakerUse::Off);
        let refused = breakers_from(Some("no")).unwrap_err().to_string();
        assert!(refused.contains("TOLLGATE_BREAKERS=no"), "{refused}");
    }

    #[test]
    fn a_toml_policy_file_carries_schedules_and_allowances() {
        let (_dir, path) = file(
            "policies.toml",
            r#"
["kms:ListKeys"]
ratePerSecond = 50
burst = 10
schedule = [{ cron = "* 9-16 * * MON-FRI", timezone = "Europe/Berlin", ratePerSecond = 1, burst = 1 }]

["ce:GetCostAndUsage".allowance]
amount = 20000
resets = "0 0 * * *"
timezone = "America/New_York"
"#,
        );
        let table = policy_file_table(&path).unwrap();
        let kms = key("aws/123456789012/eu-west-1/kms:ListKeys");
        assert_eq!(table.policy_for_key(&kms).rate_per_second(), 50.0);
        assert!(matches!(
            table.read_time_for_key(&kms),
            Some(ReadTime::Schedule(_))
        ));
        let ce = key("aws/123456789012/us-east-1/ce:GetCostAndUsage");
        assert!(matches!(
            table.read_time_for_key(&ce),
            Some(ReadTime::Allowance(a)) if a.amount() == 20_000
        ));
    }

    #[test]
    fn a_policy_files_arrival_jitter_is_read_and_a_bad_one_refused_by_name() {
        let (_dir, path) = file(
            "jitter.toml",
            "[\"cloudwatch:GetMetricData:older-datapoints\"]\nburst = 8000\nratePerSecond = 8000\narrivalJitterMs = 250\n",
        );
        let table = policy_file_table(&path).unwrap();
        let older = key("aws/123456789012/us-east-1/cloudwatch:GetMetricData:older-datapoints");
        let policy = table.policy_for_key(&older);
        assert_eq!(
            (policy.arrival_jitter_ms(), policy.admission_burst()),
            (250, 6_000.0)
        );
        for bad in ["\"100ms\"", "-5", "0.5", "1e9"] {
            let (_dir, path) = file(
                "bad.toml",
                &format!("[\"kms:ListKeys\"]\narrivalJitterMs = {bad}\n"),
            );
            let msg = policy_file_table(&path).unwrap_err().to_string();
            assert!(
                msg.contains("bad.toml")
                    && msg.contains("arrivalJitterMs")
                    && msg.contains("milliseconds"),
                "{bad}: {msg}"
            );
        }
    }

    #[test]
    fn a_json_policy_file_reads_like_the_overrides() {
        let (_dir, path) = file("p.json", r#"{"kms:ListKeys": {"ratePerSecond": 7}}"#);
        let table = policy_file_table(&path).unwrap();
        let kms = key("aws/123456789012/eu-west-1/kms:ListKeys");
        assert_eq!(table.policy_for_key(&kms).rate_per_second(), 7.0);
    }

    #[test]
    fn policy_file_errors_name_the_file_and_never_echo_it() {
        let (_dir, path) = file("bad.toml", "[\"kms:ListKeys\"]\nratePerSecond = SECRET\n");
        let msg = policy_file_table(&path).unwrap_err().to_string();
        assert!(msg.contains("bad.toml") && msg.contains("line 2"), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
        let (_dir, path) = file(
            "bad.json",
            r#"{"kms:ListKeys": {"schedule": [{"cron": "* * * * *", "timezone": "Mars/SECRET"}]}}"#,
        );
        let msg = policy_file_table(&path).unwrap_err().to_string();
        assert!(
            msg.contains("bad.json") && msg.contains("kms:ListKeys"),
            "{msg}"
        );
        assert!(!msg.contains("SECRET"), "{msg}");
        let msg = policy_file_table(Path::new("/nonexistent/p.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("/nonexistent/p.toml") && msg.contains(POLICY_FILE_ENV),
            "{msg}"
        );
    }
}
