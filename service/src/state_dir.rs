//! `StateDir`: where the service keeps what must outlive it — the API token and the scan
//! history — separate from the admission directory (which holds quota state shared by
//! every tollgate process and may be a cache the user clears).
//!
//! Resolution: `TOLLGATE_STATE_DIR`, else `$XDG_STATE_HOME/tollgate`, else
//! `~/.local/state/tollgate`. The directory gets the admission directory's rules
//! (`tollgate_storage::secure_private_dir`): owned by this user, mode 0700, writable.

use std::path::{Path, PathBuf};

use tollgate_storage::StorageError;

/// The variable that names the state directory explicitly.
pub const STATE_DIR_ENV: &str = "TOLLGATE_STATE_DIR";

/// The environment values resolution reads (injected, so tests need no process env).
#[derive(Debug, Clone, Default)]
pub struct StateDirEnv {
    /// `TOLLGATE_STATE_DIR`.
    pub explicit: Option<PathBuf>,
    /// `XDG_STATE_HOME`.
    pub xdg_state_home: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
}

impl StateDirEnv {
    /// Read the three variables from this process's environment (empty values are unset).
    pub fn from_process_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        StateDirEnv {
            explicit: var(STATE_DIR_ENV),
            xdg_state_home: var("XDG_STATE_HOME"),
            home: var("HOME"),
        }
    }
}

/// Why no state directory could be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateDirError {
    /// Nothing names a place for it.
    #[error(
        "no state directory: set {STATE_DIR_ENV} (or XDG_STATE_HOME or HOME) to a directory \
         you own"
    )]
    Unresolved,
    /// The chosen directory is not private or not usable.
    #[error("state directory {}: {source}; or set {STATE_DIR_ENV} to another directory", .path.display())]
    Unusable {
        /// The directory.
        path: PathBuf,
        /// What the storage checks found.
        #[source]
        source: StorageError,
    },
}

/// A resolved, private state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    path: PathBuf,
}

impl StateDir {
    /// Resolve (see the module docs), create if missing, and check it.
    pub fn resolve(env: &StateDirEnv) -> Result<StateDir, StateDirError> {
        let path = if let Some(explicit) = &env.explicit {
            explicit.clone()
        } else if let Some(xdg) = env.xdg_state_home.as_ref().filter(|p| p.is_absolute()) {
            xdg.join("tollgate")
        } else if let Some(home) = &env.home {
            home.join(".local/state/tollgate")
        } else {
            return Err(StateDirError::Unresolved);
        };
        StateDir::open(path)
    }

    /// Use `path` itself (created if missing, then checked).
    pub fn open(path: PathBuf) -> Result<StateDir, StateDirError> {
        tollgate_storage::secure_private_dir(&path).map_err(|source| StateDirError::Unusable {
            path: path.clone(),
            source,
        })?;
        Ok(StateDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The API token file.
    pub fn token_path(&self) -> PathBuf {
        self.path.join("api-token")
    }

    /// The default inventory store (`service.store`), a SQLite file.
    pub fn inventory_path(&self) -> PathBuf {
        self.path.join("inventory.sqlite")
    }

    /// The history database.
    pub fn history_path(&self) -> PathBuf {
        self.path.join("history-v1.sled")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn explicit_wins_then_xdg_then_home() {
        let tmp = tempfile::tempdir().unwrap();
        let env = StateDirEnv {
            explicit: Some(tmp.path().join("explicit")),
            xdg_state_home: Some(tmp.path().join("xdg")),
            home: Some(tmp.path().join("home")),
        };
        assert_eq!(
            StateDir::resolve(&env).unwrap().path(),
            tmp.path().join("explicit")
        );
        let env = StateDirEnv {
            explicit: None,
            ..env
        };
        assert_eq!(
            StateDir::resolve(&env).unwrap().path(),
            tmp.path().join("xdg/tollgate")
        );
        let env = StateDirEnv {
            xdg_state_home: Some("relative".into()),
            ..env
        };
        assert_eq!(
            StateDir::resolve(&env).unwrap().path(),
            tmp.path().join("home/.local/state/tollgate")
        );
        assert!(matches!(
            StateDir::resolve(&StateDirEnv::default()),
            Err(StateDirError::Unresolved)
        ));
    }

    #[test]
    fn a_loose_directory_is_tightened_to_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        StateDir::open(dir.clone()).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_file_in_its_place_is_refused_naming_the_variable() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("state");
        std::fs::write(&file, b"").unwrap();
        let err = StateDir::open(file).unwrap_err().to_string();
        assert!(
            err.contains("not a directory") && err.contains(STATE_DIR_ENV),
            "{err}"
        );
    }
}
