//! The on-disk quota store: sled, owned by the coordinator.
//!
//! sled admits one process per database, which is why a [`CoordinatorLock`] is
//! required to open it. Besides quota records (tree `quota-v1`), the store keeps
//! a shutdown marker (tree `meta`) written `running` on open and `clean` on an
//! orderly exit, so the next coordinator knows whether its predecessor crashed
//! and must start conservatively (DESIGN §5). The `meta` tree also keeps the instant
//! until which a crashed coordinator may have granted on keys that have no record yet
//! (the actors' provisional first grants): an opaque number of microseconds here, whose
//! meaning the actors own. Corrupted state is an error that says how to recover; it is
//! never silently replaced by an empty store.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

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
const UNRECORDED_KEY: &str = "unrecorded-grants-until";
/// The file sled keeps its log in, inside the database directory.
const SLED_DATA_FILE: &str = "db";
/// sled's page cache. Quota records are small (~490 bytes) and the ones written often
/// are few: a key is written at its first grant, while it is busy, and once more when its
/// actor retires seconds after its last use, so the pages in use hold the keys of the last
/// seconds (about 7,000 keys, ~4 MB, at `bench org`'s 1,000 accounts). 8 MiB holds them;
/// more only keeps retired keys' pages in memory (16 MiB cost 10–15 MB more resident set
/// over 90,000 records: docs/architecture.md, "Memory per key").
const CACHE_CAPACITY_BYTES: u64 = 8 * 1024 * 1024;

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
///
/// # A full disk, and after
/// sled keeps the first I/O error its flusher meets (a full disk: ENOSPC) and refuses
/// every later operation with it, even once space is free again, so a store that failed
/// once would fail until the process restarts. A write that fails with an I/O error
/// therefore marks the database broken, and the next write reopens it (dropping the
/// broken instance first: sled locks its file). What sled had not flushed before the
/// failure is lost with the broken instance; the key actors hold the authoritative state
/// and write whole records again (the persister retries what failed), so nothing a later
/// crash recovery needs stays lost once a write succeeds. Reads go to whichever instance
/// is open.
#[derive(Debug)]
pub struct SledStore {
    /// `None` only between dropping a broken instance and opening its successor (or
    /// when that reopening failed: the next write tries again).
    trees: RwLock<Option<Trees>>,
    /// A write failed with an I/O error: reopen before the next one.
    broken: AtomicBool,
    path: PathBuf,
}

#[derive(Debug)]
struct Trees {
    db: sled::Db,
    quota: sled::Tree,
    meta: sled::Tree,
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
        let had_data = db_file_has_data(&path)?;
        // sled can panic on some malformed files instead of returning an error;
        // either way the state is unreadable and must not be replaced silently.
        let opened = catch_unwind(AssertUnwindSafe(|| open_trees(&path)))
            .map_err(|_| corrupted(&path, "sled panicked while reading it"))??;
        let store = SledStore {
            trees: RwLock::new(Some(opened)),
            broken: AtomicBool::new(false),
            path,
        };
        let previous_shutdown = store.read_previous_shutdown(had_data)?;
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

    /// The instant (microseconds) stored by [`SledStore::set_unrecorded_grants_until`],
    /// if any.
    pub fn unrecorded_grants_until(&self) -> Result<Option<u64>, StorageError> {
        let value = self.read(|t| t.meta.get(UNRECORDED_KEY), "read")?;
        match value.as_deref().map(<[u8; 8]>::try_from) {
            None => Ok(None),
            Some(Ok(bytes)) => Ok(Some(u64::from_be_bytes(bytes))),
            Some(Err(_)) => Err(corrupted(
                &self.path,
                "its record of unrecorded grants is not 8 bytes",
            )),
        }
    }

    /// Store `micros`, an instant at or after every grant a coordinator of this state may
    /// have made on a key without a record, and flush it.
    pub fn set_unrecorded_grants_until(&self, micros: u64) -> Result<(), StorageError> {
        self.write(
            |t| {
                t.meta
                    .insert(UNRECORDED_KEY, &micros.to_be_bytes()[..])
                    .map(drop)
            },
            "write the unrecorded grants' instant in",
        )?;
        self.flush()
    }

    /// The sled database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the marker; `had_data` says whether sled's data file was
    /// non-empty before this open.
    fn read_previous_shutdown(&self, had_data: bool) -> Result<PreviousShutdown, StorageError> {
        let (marker, no_records) = self.read(
            |t| Ok((t.meta.get(SHUTDOWN_KEY)?, t.quota.is_empty())),
            "read",
        )?;
        Ok(match marker.as_deref() {
            Some(MARK_CLEAN) => PreviousShutdown::Clean,
            Some(_) => PreviousShutdown::Unclean,
            // Records without a marker: the marker was lost but state
            // survived. Be conservative.
            None if !no_records => PreviousShutdown::Unclean,
            // Every open flushes a marker before use, so a non-empty data
            // file that yields nothing at all was discarded by sled's recovery
            // (it treats garbage as a torn write and starts empty). Never hand
            // out that empty store. The only false alarm is a crash during the
            // very first open, and the fix for both is the same.
            None if had_data => {
                return Err(corrupted(
                    &self.path,
                    "its data file exists but sled recovered nothing from it",
                ))
            }
            None => PreviousShutdown::Fresh,
        })
    }

    fn write_marker(&self, value: &[u8]) -> Result<(), StorageError> {
        self.write(
            |t| t.meta.insert(SHUTDOWN_KEY, value).map(drop),
            "write the shutdown marker in",
        )?;
        self.flush()
    }

    /// Runs `op` on the open instance.
    fn read<T>(
        &self,
        op: impl FnOnce(&Trees) -> sled::Result<T>,
        action: &str,
    ) -> Result<T, StorageError> {
        let trees = self.trees.read().unwrap_or_else(|p| p.into_inner());
        let trees = trees.as_ref().ok_or_else(|| self.not_open())?;
        op(trees).map_err(|e| from_sled(e, &self.path, action))
    }

    /// Runs the write `op`, reopening a broken instance first (see the type's docs).
    fn write<T>(
        &self,
        op: impl FnOnce(&Trees) -> sled::Result<T>,
        action: &str,
    ) -> Result<T, StorageError> {
        if self.broken.load(Ordering::Acquire) {
            self.reopen()?;
        }
        let result = self.read(op, action);
        if let Err(e) = &result {
            if e.kind() == StorageErrorKind::Io {
                self.broken.store(true, Ordering::Release);
            }
        }
        result
    }

    /// Drop the broken instance and open the database again.
    fn reopen(&self) -> Result<(), StorageError> {
        let mut trees = self.trees.write().unwrap_or_else(|p| p.into_inner());
        if !self.broken.load(Ordering::Acquire) {
            return Ok(()); // another writer reopened it meanwhile
        }
        drop(trees.take());
        *trees = Some(open_trees(&self.path)?);
        self.broken.store(false, Ordering::Release);
        Ok(())
    }

    fn not_open(&self) -> StorageError {
        StorageError::new(
            StorageErrorKind::Io,
            Some(&self.path),
            format!(
                "{} could not be reopened after a failed write; check disk space, then retry",
                self.path.display()
            ),
        )
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

/// Whether sled's data file exists and is non-empty.
fn db_file_has_data(path: &Path) -> Result<bool, StorageError> {
    let db_file = path.join(SLED_DATA_FILE);
    match fs::metadata(&db_file) {
        Ok(meta) => Ok(meta.len() > 0),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(StorageError::io(
            "inspect",
            &db_file,
            err,
            "check the permissions of the admission directory",
        )),
    }
}

/// How often, and how long apart, opening retries while sled's own file lock is still
/// held. We hold the coordinator lock, so the holder can only be this process's previous
/// sled instance, whose background flusher releases the file moments after the last
/// handle is dropped (seen under load right after a graceful hand-over).
const SLED_LOCK_RETRIES: u32 = 200;
const SLED_LOCK_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

fn open_trees(path: &Path) -> Result<Trees, StorageError> {
    let config = sled::Config::new()
        .path(path)
        .cache_capacity(CACHE_CAPACITY_BYTES);
    let mut retries = 0;
    let db = loop {
        match config.open() {
            Ok(db) => break db,
            Err(sled::Error::Io(e))
                if retries < SLED_LOCK_RETRIES
                    && e.to_string().contains("could not acquire lock") =>
            {
                retries += 1;
                std::thread::sleep(SLED_LOCK_RETRY_PAUSE);
            }
            Err(e) => return Err(from_sled(e, path, "open")),
        }
    };
    let quota = db
        .open_tree(QUOTA_TREE)
        .map_err(|e| from_sled(e, path, "open"))?;
    let meta = db
        .open_tree(META_TREE)
        .map_err(|e| from_sled(e, path, "open"))?;
    Ok(Trees { db, quota, meta })
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
        let value = self.read(|t| t.quota.get(key), "read")?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.write(|t| t.quota.insert(key, value).map(drop), "write")
    }

    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        let mut batch = sled::Batch::default();
        for (key, value) in entries {
            batch.insert(key.as_bytes(), value.as_slice());
        }
        self.write(|t| t.quota.apply_batch(batch), "write")
    }

    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.write(|t| t.quota.remove(key).map(drop), "write")
    }

    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let raw = self.read(|t| t.quota.iter().collect::<sled::Result<Vec<_>>>(), "read")?;
        raw.into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8(key.to_vec())
                    .map_err(|_| corrupted(&self.path, "a quota key is not UTF-8"))?;
                Ok((key, value.to_vec()))
            })
            .collect()
    }

    fn flush(&self) -> Result<(), StorageError> {
        self.write(|t| t.db.flush().map(drop), "flush")
    }

    fn describe(&self) -> String {
        format!("sled at {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{check_store_contract, load_json};
    use std::os::unix::fs::MetadataExt;

    fn fixture() -> (tempfile::TempDir, AdmissionDir, CoordinatorLock) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
        let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        (tmp, dir, lock)
    }

    #[test]
    fn sled_store_honours_the_contract_and_persists() {
        let (_tmp, dir, lock) = fixture();
        let opened = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(opened.previous_shutdown, PreviousShutdown::Fresh);
        check_store_contract(&opened.store);
        assert_eq!(
            opened.store.describe(),
            format!("sled at {}", dir.state_path().display())
        );
        drop(opened);
        let reopened = SledStore::open(&dir, &lock).unwrap().store;
        assert_eq!(reopened.load("a").unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(reopened.entries().unwrap().len(), 2);
    }

    #[test]
    fn shutdown_marker_tells_clean_from_unclean() {
        let (_tmp, dir, lock) = fixture();
        let first = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(first.previous_shutdown, PreviousShutdown::Fresh);
        first.store.mark_clean_shutdown().unwrap();
        drop(first);

        let second = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(second.previous_shutdown, PreviousShutdown::Clean);
        drop(second); // no clean mark: as if the process died

        let third = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(third.previous_shutdown, PreviousShutdown::Unclean);
    }

    #[test]
    fn the_unrecorded_grants_instant_survives_reopening_and_a_clean_shutdown() {
        let (_tmp, dir, lock) = fixture();
        let first = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(first.store.unrecorded_grants_until().unwrap(), None);
        first.store.set_unrecorded_grants_until(1_234_567).unwrap();
        first.store.mark_clean_shutdown().unwrap();
        drop(first);
        let second = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(second.previous_shutdown, PreviousShutdown::Clean);
        assert_eq!(
            second.store.unrecorded_grants_until().unwrap(),
            Some(1_234_567)
        );
        assert!(
            second.store.entries().unwrap().is_empty(),
            "it is no quota record"
        );
    }

    #[test]
    fn records_without_a_marker_count_as_unclean() {
        let (_tmp, dir, lock) = fixture();
        let opened = SledStore::open(&dir, &lock).unwrap();
        opened.store.save("k", b"v").unwrap();
        opened
            .store
            .write(|t| t.meta.remove(SHUTDOWN_KEY).map(drop), "write")
            .unwrap();
        opened.store.flush().unwrap();
        drop(opened);
        let reopened = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(reopened.previous_shutdown, PreviousShutdown::Unclean);
    }

    #[test]
    fn files_are_0600_and_dirs_0700() {
        let (_tmp, dir, lock) = fixture();
        let opened = SledStore::open(&dir, &lock).unwrap();
        opened.store.save("k", b"v").unwrap();
        opened.store.mark_clean_shutdown().unwrap();
        let mut seen = 0;
        let mut stack = vec![dir.state_path()];
        while let Some(path) = stack.pop() {
            let meta = fs::symlink_metadata(&path).unwrap();
            let expected = if meta.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(meta.mode() & 0o777, expected, "{}", path.display());
            if meta.is_dir() {
                stack.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            }
            seen += 1;
        }
        assert!(seen >= 3, "expected sled files, saw {seen}");
    }

    #[test]
    fn a_lock_for_another_directory_is_rejected() {
        let (_tmp, dir, _lock) = fixture();
        let (_tmp2, _other_dir, other_lock) = fixture();
        let err = SledStore::open(&dir, &other_lock).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
    }

    #[test]
    fn undecodable_record_in_sled_is_corrupted() {
        let (_tmp, dir, lock) = fixture();
        let store = SledStore::open(&dir, &lock).unwrap().store;
        store.save("k", b"\xff not json").unwrap();
        let err = load_json::<u64>(&store, "k").unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Corrupted);
        assert!(err.to_string().contains("sled at"), "{err}");
    }

    /// Writes records, then overwrites `file` inside the sled dir with garbage.
    fn garbled(file: &str, garbage: &[u8]) -> (tempfile::TempDir, AdmissionDir, CoordinatorLock) {
        let (tmp, dir, lock) = fixture();
        let opened = SledStore::open(&dir, &lock).unwrap();
        for i in 0..100 {
            opened.store.save(&format!("key-{i}"), &[7; 64]).unwrap();
        }
        opened.store.mark_clean_shutdown().unwrap();
        drop(opened);
        let target = dir.state_path().join(file);
        let len = fs::metadata(&target).unwrap().len() as usize;
        let bytes: Vec<u8> = garbage.iter().copied().cycle().take(len.max(64)).collect();
        fs::write(&target, bytes).unwrap();
        (tmp, dir, lock)
    }

    /// Corrupted files must give an actionable `Corrupted` error, never a
    /// panic and never a store that silently lost its records; and the refusal
    /// must persist, even if sled rewrote files while trying to recover.
    fn assert_corrupted(file: &str, garbage: &[u8]) {
        let (_tmp, dir, lock) = garbled(file, garbage);
        for attempt in 1..=2 {
            let err = match SledStore::open(&dir, &lock) {
                Ok(opened) => panic!(
                    "{file} attempt {attempt}: opened as {:?} with {} records",
                    opened.previous_shutdown,
                    opened.store.entries().map(|e| e.len()).unwrap_or(0)
                ),
                Err(err) => err,
            };
            let text = err.to_string();
            assert_eq!(err.kind(), StorageErrorKind::Corrupted, "{file}: {text}");
            assert!(text.contains("stop all tollgate processes"), "{text}");
            assert!(text.contains("aside, then retry"), "{text}");
            assert_eq!(err.path(), Some(dir.state_path().as_path()));
        }
    }

    #[test]
    fn garbage_db_file_is_corrupted_not_an_empty_store() {
        assert_corrupted("db", b"garbage!");
        assert_corrupted("db", &[0xff]);
        assert_corrupted("db", &[0]);
    }

    #[test]
    fn garbage_conf_file_is_corrupted() {
        assert_corrupted("conf", b"garbage!");
        assert_corrupted("conf", &[0]);
    }

    #[test]
    fn torn_tail_is_never_reported_clean_or_fresh() {
        for keep_percent in [90, 50, 10] {
            let (_tmp, dir, lock) = fixture();
            let opened = SledStore::open(&dir, &lock).unwrap();
            for i in 0..200 {
                opened.store.save(&format!("key-{i}"), &[7; 64]).unwrap();
                opened.store.flush().unwrap();
            }
            opened.store.mark_clean_shutdown().unwrap();
            drop(opened);
            let db = fs::OpenOptions::new()
                .write(true)
                .open(dir.state_path().join(SLED_DATA_FILE))
                .unwrap();
            let len = db.metadata().unwrap().len();
            db.set_len(len * keep_percent / 100).unwrap();
            drop(db);
            match SledStore::open(&dir, &lock) {
                Ok(opened) => assert_eq!(
                    opened.previous_shutdown,
                    PreviousShutdown::Unclean,
                    "kept {keep_percent}%"
                ),
                Err(err) => assert_eq!(err.kind(), StorageErrorKind::Corrupted, "{err}"),
            }
        }
    }
}
