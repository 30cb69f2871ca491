//! The coordinator lock: which process owns the admission state right now.
//!
//! sled admits one process per database, so exactly one process at a time is
//! the coordinator (DESIGN §5). It holds an exclusive `flock` on
//! `coordinator.lock`; the kernel releases it when the holder exits or dies, so
//! a crash never leaves a stale lock. The file also records the holder's pid and
//! a generation that grows with every acquisition, so reservations can name the
//! coordinator epoch they belong to and clients can report who holds the lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::dir::AdmissionDir;
use crate::error::{StorageError, StorageErrorKind};
use crate::private_dir::{restrict_mode, PRIVATE_FILE_MODE};
use crate::process::{current_pid, pid_alive};

/// How often [`CoordinatorLock::acquire_within`] retries.
const LOCK_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Who holds (or last held) the coordinator lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// Process id of the holder.
    pub pid: u32,
    /// Grows by one with every acquisition; 0 for the first.
    pub generation: u64,
}

/// An exclusive hold on a directory's coordinator lock; dropping releases it.
#[derive(Debug)]
pub struct CoordinatorLock {
    // Closing this file (on drop) releases the flock.
    _file: File,
    dir: PathBuf,
    holder: LockHolder,
}

impl CoordinatorLock {
    /// Takes the lock if it is free; `Ok(None)` if another holder has it.
    ///
    /// Locks belong to an open file description, so a second attempt in the
    /// same process also sees the lock as taken.
    pub fn try_acquire(dir: &AdmissionDir) -> Result<Option<CoordinatorLock>, StorageError> {
        let path = dir.lock_path();
        let mut file = open_lock_file(&path)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Ok(None),
            Err(errno) => {
                return Err(StorageError::io(
                    "lock",
                    &path,
                    errno.into(),
                    "check that the admission directory is on a local filesystem \
                     (network filesystems are unsupported)",
                ))
            }
        }
        let previous = read_from(&mut file, &path)?;
        let holder = LockHolder {
            pid: current_pid(),
            generation: previous.map_or(0, |p| p.generation.saturating_add(1)),
        };
        write_holder(&mut file, &path, holder)?;
        Ok(Some(CoordinatorLock {
            _file: file,
            dir: dir.path().to_path_buf(),
            holder,
        }))
    }

    /// Takes the lock, waiting up to `timeout` for the current holder.
    ///
    /// Fails with [`StorageErrorKind::LockTimeout`], naming the directory and
    /// the holder, if the lock is still taken when the time is up.
    // clock: storage's one annotated read (it depends on no tollgate crate that has a
    // clock): lock polling only; admission decisions never see these instants.
    #[allow(clippy::disallowed_methods)]
    pub fn acquire_within(
        dir: &AdmissionDir,
        timeout: Duration,
    ) -> Result<CoordinatorLock, StorageError> {
        let start = Instant::now();
        loop {
            if let Some(lock) = Self::try_acquire(dir)? {
                return Ok(lock);
            }
            let elapsed = start.elapsed();
            if elapsed >= timeout {
                return Err(timeout_error(dir, timeout));
            }
            std::thread::sleep(LOCK_POLL_INTERVAL.min(timeout - elapsed));
        }
    }

    /// The generation this acquisition wrote.
    pub fn generation(&self) -> u64 {
        self.holder.generation
    }

    /// What this acquisition wrote: our pid and generation.
    pub fn holder(&self) -> LockHolder {
        self.holder
    }

    /// The admission directory this lock guards.
    pub fn dir_path(&self) -> &Path {
        &self.dir
    }
}

/// Reads the last recorded holder without locking, for status and clients.
///
/// The holder may have exited since; check [`pid_alive`] or try the lock.
/// Returns `None` if the file is missing, empty or unparseable (for instance
/// while a new holder is rewriting it).
pub fn read_holder(dir: &AdmissionDir) -> Result<Option<LockHolder>, StorageError> {
    let path = dir.lock_path();
    match File::open(&path) {
        Ok(mut file) => read_from(&mut file, &path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(StorageError::io(
            "open",
            &path,
            err,
            "check the permissions of the admission directory",
        )),
    }
}

fn open_lock_file(path: &Path) -> Result<File, StorageError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE_MODE)
        .open(path)
        .map_err(|err| {
            StorageError::io(
                "open the coordinator lock file",
                path,
                err,
                "check the permissions of the admission directory and free disk space",
            )
        })?;
    let meta = file
        .metadata()
        .and_then(|meta| restrict_mode(path, &meta, PRIVATE_FILE_MODE));
    meta.map_err(|err| {
        StorageError::io(
            "restrict to mode 0600",
            path,
            err,
            "run `chmod 600` on it, then retry",
        )
    })?;
    Ok(file)
}

fn read_from(file: &mut File, path: &Path) -> Result<Option<LockHolder>, StorageError> {
    let mut text = String::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text));
    match read {
        Ok(_) => {}
        // Garbage that is not UTF-8 is as good as no record.
        Err(err) if err.kind() == std::io::ErrorKind::InvalidData => return Ok(None),
        Err(err) => {
            return Err(StorageError::io(
                "read",
                path,
                err,
                "check the permissions of the admission directory",
            ))
        }
    }
    let first_line = text.lines().next().unwrap_or("");
    Ok(serde_json::from_str(first_line).ok())
}

fn write_holder(file: &mut File, path: &Path, holder: LockHolder) -> Result<(), StorageError> {
    let mut line = serde_json::to_vec(&holder).map_err(|err| {
        StorageError::new(
            StorageErrorKind::Encode,
            Some(path),
            "cannot encode the lock holder",
        )
        .with_source(err)
    })?;
    line.push(b'\n');
    let written = file
        .set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| file.write_all(&line))
        .and_then(|()| file.sync_data());
    written.map_err(|err| {
        StorageError::io(
            "record the lock holder in",
            path,
            err,
            "free disk space and check the permissions of the admission directory",
        )
    })
}

fn timeout_error(dir: &AdmissionDir, timeout: Duration) -> StorageError {
    let holder = match read_holder(dir) {
        Ok(Some(h)) if pid_alive(h.pid) => format!("it is held by pid {} (running)", h.pid),
        Ok(Some(h)) => format!(
            "the last recorded holder, pid {}, is not running, so another process holds it",
            h.pid
        ),
        _ => "its holder is unknown".to_owned(),
    };
    StorageError::new(
        StorageErrorKind::LockTimeout,
        Some(&dir.lock_path()),
        format!(
            "timed out after {timeout:?} waiting for the coordinator lock of admission \
             directory {}; {holder}. Check that the holder is a tollgate process making \
             progress (stop it if it is stuck), and that the directory is on a local \
             filesystem; then retry",
            dir.path().display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> (tempfile::TempDir, AdmissionDir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
        (tmp, dir)
    }

    #[test]
    fn second_open_file_description_in_one_process_is_refused() {
        let (_tmp, dir) = temp_dir();
        let first = CoordinatorLock::try_acquire(&dir)
            .unwrap()
            .expect("free lock");
        assert!(CoordinatorLock::try_acquire(&dir).unwrap().is_none());
        drop(first);
        assert!(CoordinatorLock::try_acquire(&dir).unwrap().is_some());
    }

    #[test]
    fn generation_increments_per_acquisition_and_is_recorded() {
        let (_tmp, dir) = temp_dir();
        assert_eq!(read_holder(&dir).unwrap(), None);
        for expected in 0..3 {
            let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
            assert_eq!(lock.generation(), expected);
            assert_eq!(lock.holder().pid, current_pid());
            assert_eq!(read_holder(&dir).unwrap(), Some(lock.holder()));
        }
    }

    #[test]
    fn garbage_in_the_lock_file_restarts_generations_at_zero() {
        let (_tmp, dir) = temp_dir();
        std::fs::write(dir.lock_path(), [0xff, 0xfe, b'{']).unwrap();
        assert_eq!(read_holder(&dir).unwrap(), None);
        let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        assert_eq!(lock.generation(), 0);
        let text = std::fs::read_to_string(dir.lock_path()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
    }

    #[test]
    fn lock_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_tmp, dir) = temp_dir();
        std::fs::write(dir.lock_path(), b"").unwrap();
        std::fs::set_permissions(dir.lock_path(), std::fs::Permissions::from_mode(0o666)).unwrap();
        let _lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let mode = std::fs::metadata(dir.lock_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn acquire_within_times_out_naming_dir_and_holder() {
        let (_tmp, dir) = temp_dir();
        let _held = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let err = CoordinatorLock::acquire_within(&dir, Duration::from_millis(30)).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::LockTimeout);
        let text = err.to_string();
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(text.contains(&format!("pid {}", current_pid())), "{text}");
    }

    #[test]
    fn acquire_within_waits_for_a_release() {
        let (_tmp, dir) = temp_dir();
        let held = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(held);
        });
        let lock = CoordinatorLock::acquire_within(&dir, Duration::from_secs(10)).unwrap();
        assert_eq!(lock.generation(), 1);
        releaser.join().unwrap();
    }
}
