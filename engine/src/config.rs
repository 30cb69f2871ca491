//! Engine configuration, parsed in two stages: raw values from the environment (or the
//! caller), then one validated [`EngineConfig`] passed everywhere.
//!
//! Invalid quota overrides fail here, before any AWS request, with an error that names
//! the variable and the offending key but never echoes its JSON.

use std::path::PathBuf;

use tollgate_quota::overrides::{OverrideError, PolicyTable, OVERRIDES_ENV};
use tollgate_storage::{DirEnv, ADMISSION_DIR_ENV};

/// Validated engine configuration.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Where the admission directory is looked for.
    pub dir_env: DirEnv,
    /// Default policies merged with overrides.
    pub policies: PolicyTable,
}

/// A configuration value was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `TOLLGATE_QUOTA_OVERRIDES` (or another override source) is invalid.
    #[error(transparent)]
    Overrides(#[from] OverrideError),
}

impl EngineConfig {
    /// Read `TOLLGATE_ADMISSION_DIR`, `XDG_CACHE_HOME`, `HOME`, `TMPDIR` and
    /// `TOLLGATE_QUOTA_OVERRIDES` from the process environment.
    pub fn from_env() -> Result<EngineConfig, ConfigError> {
        let overrides = std::env::var(OVERRIDES_ENV).ok();
        Ok(EngineConfig {
            dir_env: DirEnv::from_process_env(),
            policies: PolicyTable::from_env(overrides.as_deref())?,
        })
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
pub const ENV_VARS: &[&str] = &[ADMISSION_DIR_ENV, OVERRIDES_ENV];
