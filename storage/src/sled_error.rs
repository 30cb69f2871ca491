//! Translating sled's errors into actionable [`StorageError`]s.
//!
//! sled reports corruption, misuse, bugs and I/O failures in one enum whose
//! messages say nothing about what to do. Storage errors stop admission, so
//! each one here says how to get going again, and corruption is always told
//! apart so the user knows moving the state aside is the fix.

use std::io;
use std::path::Path;

use crate::error::{is_permission_error, StorageError, StorageErrorKind};

/// The state at `path` cannot be read; the message explains the recovery.
pub(crate) fn corrupted(path: &Path, what: &str) -> StorageError {
    let dir = path.parent().unwrap_or(path);
    StorageError::new(
        StorageErrorKind::Corrupted,
        Some(path),
        format!(
            "admission state {} is corrupted ({what}); stop all tollgate processes using \
             {}, move {} aside, then retry (quota state starts afresh; check disk space \
             and permissions first)",
            path.display(),
            dir.display(),
            path.display()
        ),
    )
}

/// Maps a sled error raised while doing `action` on the database at `path`.
pub(crate) fn from_sled(err: sled::Error, path: &Path, action: &str) -> StorageError {
    match err {
        sled::Error::Corruption { .. } => corrupted(path, "sled found invalid data"),
        sled::Error::ReportableBug(ref msg) => {
            corrupted(path, &format!("sled found an inconsistency: {msg}")).with_source(err)
        }
        sled::Error::Unsupported(ref msg) => StorageError::new(
            StorageErrorKind::Unusable,
            Some(path),
            format!(
                "sled cannot {action} {}: {msg}; stop all tollgate processes using it, move \
                 it aside, then retry",
                path.display()
            ),
        )
        .with_source(err),
        sled::Error::Io(io_err) => from_io(io_err, path, action),
        other => StorageError::new(
            StorageErrorKind::Io,
            Some(path),
            format!(
                "cannot {action} {}: {other}; retry, and report it if it persists",
                path.display()
            ),
        )
        .with_source(other),
    }
}

fn from_io(err: io::Error, path: &Path, action: &str) -> StorageError {
    match err.kind() {
        // Short or malformed reads mean the files are not what sled wrote.
        io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData => {
            corrupted(path, &format!("{err}")).with_source(err)
        }
        _ if is_permission_error(&err) => StorageError::io(
            action,
            path,
            err,
            "make sure it and its files belong to you (mode 0700 for directories, 0600 for \
             files), then retry",
        ),
        // sled's own file lock: another process opened the database without
        // holding the coordinator lock.
        io::ErrorKind::Other if err.to_string().contains("could not acquire lock") => {
            StorageError::io(
                action,
                path,
                err,
                "another process has it open; stop all tollgate processes using this admission \
             directory, then retry",
            )
        }
        _ => StorageError::io(
            action,
            path,
            err,
            "check disk space and that the directory is on a local filesystem, then retry",
        ),
    }
}
