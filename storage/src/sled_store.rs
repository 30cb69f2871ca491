//! The on-disk quota store: sled, owned by the coordinator.
//!
//! sled admits one process per database, which is why a [`CoordinatorLock`] is
//! required to open it. Besides quota records (tree `quota-v1`), the store keeps
//! a shutdown marker (tree `meta`) written `running` on open and `clean` on an
//! orderly exit, so the next coordinator knows whether its predecessor crashed
//! and must start conservatively (DESIGN §5). Corrupted state is an error that
//! says how to recover; it is never silently replaced by an empty store.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use crate::dir::AdmissionDir;
use crate::error::{StorageError, StorageErrorKind};
use crate::lock::CoordinatorLock;
use crate::private_dir::{self, restrict_mode, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE};
use crate::sled_error::{corrupted, from_sled};
use crate::store::QuotaStore;

const QUOTA_TREE: &str = "quota-v1";
const META_TREE: &str = "meta";
const SHUTDOWN_KEY: &str = "shutdown";
const MARK_RUNNING: &[u8] = b"running";
const MARK_CLEAN: &[u8] = b"clean";
/// sled's page cache; quota records are small and few.
const CACHE_CAPACITY_BYTES: u64 = 16 * 1024 * 1024;

/// How the previous coordinator left the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviousShutdown {
    /// No previous coordinator kept any state here.
    Fresh,
    /// The previous coordinator called [`SledStore::mark_clean_shutdown`].
    Clean,
    /// The previous coordinator stopped without marking a clean shutdown
    /// (crash, kill, power loss): treat its state conservatively.
    Unclean,
}

/// A freshly opened store and what it learned about the previous run.
#[derive(Debug)]
pub struct OpenedStore {
    /// The store, now marked `running`.
    pub store: SledStore,
    /// How the previous coordinator stopped.
    pub previous_shutdown: PreviousShutdown,
}

/// Quota records in the sled database under `state-v1.sled`.
#[derive(Debug)]
pub struct SledStore {
    db: sled::Db,
    quota: sled::Tree,
    meta: sled::Tree,
    path: PathBuf,
}

impl SledStore {
    /// Opens (or creates) the state of `dir`; `lock` proves we are coordinator.
    ///
    /// Keep the lock for as long as the store is open.
    pub fn open(dir: &AdmissionDir, lock: &CoordinatorLock) -> Result<OpenedStore, StorageError> {
        let path = dir.state_path();
        if lock.dir_path() != dir.path() {
            return Err(StorageError::new(
                StorageErrorKind::Unusable,
                Some(&path),
                format!(
                    "the coordinator lock is for {}, not {}; this is a bug in tollgate, \
                     please report it",
                    lock.dir_path().display(),
                    dir.path().display()
                ),
            ));
        }
        if private_dir::inspect(&path)? == private_dir::Presence::Absent {
            private_dir::create(&path, false).map_err(|err| {
                StorageError::io(
                    "create",
                    &path,
                    err,
                    "check disk space and the permissions of the admission directory",
                )
            })?;
        }
        // sled can panic on some malformed files instead of returning an error;
        // either way the state is unreadable and must not be replaced silently.
        let opened = catch_unwind(AssertUnwindSafe(|| open_trees(&path)))
            .map_err(|_| corrupted(&path, "sled panicked while reading it"))??;
        let (db, quota, meta) = opened;
        let store = SledStore {
            db,
            quota,
            meta,
            path,
        };
        let previous_shutdown = store.read_previous_shutdown()?;
        store.write_marker(MARK_RUNNING)?;
        store.restrict_permissions()?;
        Ok(OpenedStore {
            store,
            previous_shutdown,
        })
    }

    /// Records an orderly shutdown so the next coordinator may trust the state.
    pub fn mark_clean_shutdown(&self) -> Result<(), StorageError> {
        self.write_marker(MARK_CLEAN)?;
        self.restrict_permissions()
    }

    /// The sled database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_previous_shutdown(&self) -> Result<PreviousShutdown, StorageError> {
        let marker = self
            .meta
            .get(SHUTDOWN_KEY)
            .map_err(|e| from_sled(e, &self.path, "read"))?;
        Ok(match marker.as_deref() {
            Some(MARK_CLEAN) => PreviousShutdown::Clean,
            Some(_) => PreviousShutdown::Unclean,
            None if self.quota.is_empty() => PreviousShutdown::Fresh,
            // Records without a marker: written by something that never
            // finished opening, or the marker was lost. Be conservative.
            None => PreviousShutdown::Unclean,
        })
    }

    fn write_marker(&self, value: &[u8]) -> Result<(), StorageError> {
        self.meta
            .insert(SHUTDOWN_KEY, value)
            .map_err(|e| from_sled(e, &self.path, "write the shutdown marker in"))?;
        self.flush()
    }

    /// Files 0600 and directories 0700, whatever sled's umask gave them.
    fn restrict_permissions(&self) -> Result<(), StorageError> {
        restrict_tree(&self.path).map_err(|err| {
            StorageError::io(
                "restrict permissions under",
                &self.path,
                err,
                "run `chmod -R go-rwx` on it, then retry",
            )
        })
    }
}

fn open_trees(path: &Path) -> Result<(sled::Db, sled::Tree, sled::Tree), StorageError> {
    let db = sled::Config::new()
        .path(path)
        .cache_capacity(CACHE_CAPACITY_BYTES)
        .open()
        .map_err(|e| from_sled(e, path, "open"))?;
    let quota = db
        .open_tree(QUOTA_TREE)
        .map_err(|e| from_sled(e, path, "open"))?;
    let meta = db
        .open_tree(META_TREE)
        .map_err(|e| from_sled(e, path, "open"))?;
    Ok((db, quota, meta))
}

fn restrict_tree(path: &Path) -> std::io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() {
        restrict_mode(path, &meta, PRIVATE_DIR_MODE)?;
        for entry in fs::read_dir(path)? {
            restrict_tree(&entry?.path())?;
        }
    } else if meta.is_file() {
        restrict_mode(path, &meta, PRIVATE_FILE_MODE)?;
    }
    Ok(())
}

impl QuotaStore for SledStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let value = self
            .quota
            .get(key)
            .map_err(|e| from_sled(e, &self.path, "read"))?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.quota
            .insert(key, value)
            .map_err(|e| from_sled(e, &self.path, "write"))?;
        Ok(())
    }

    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        let mut batch = sled::Batch::default();
        for (key, value) in entries {
            batch.insert(key.as_bytes(), value.as_slice());
        }
        self.quota
            .apply_batch(batch)
            .map_err(|e| from_sled(e, &self.path, "write"))
    }

    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.quota
            .remove(key)
            .map_err(|e| from_sled(e, &self.path, "write"))?;
        Ok(())
    }

    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.quota
            .iter()
            .map(|item| {
                let (key, value) = item.map_err(|e| from_sled(e, &self.path, "read"))?;
                let key = String::from_utf8(key.to_vec())
                    .map_err(|_| corrupted(&self.path, "a quota key is not UTF-8"))?;
                Ok((key, value.to_vec()))
            })
            .collect()
    }

    fn flush(&self) -> Result<(), StorageError> {
        self.db
            .flush()
            .map_err(|e| from_sled(e, &self.path, "flush"))?;
        Ok(())
    }

    fn describe(&self) -> String {
        format!("sled at {}", self.path.display())
    }
}
