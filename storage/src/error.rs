//! The one error type of this crate.
//!
//! Storage failures stop admission (DESIGN §5: fail closed), so the person who
//! sees one must be able to act on it. Every [`StorageError`] therefore carries
//! a [`StorageErrorKind`] for programs, the path involved for people, and a
//! message that ends in what to do next. Messages never contain stored bytes.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong, for callers that branch on it.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// The path exists but cannot serve as admission state: not a directory,
    /// a symlink where none is allowed, not writable, or cannot be created.
    Unusable,
    /// The operating system refused access (EACCES or EPERM).
    PermissionDenied,
    /// The path is owned by another user, so sharing it would let that user
    /// tamper with our quotas.
    NotOwned,
    /// Both the default and the temporary fallback directory hold state, and
    /// choosing one silently could split processes into two coordinators.
    Ambiguous,
    /// Stored state cannot be decoded.
    Corrupted,
    /// The coordinator lock was not acquired within the allowed time.
    LockTimeout,
    /// A value could not be encoded for storage.
    Encode,
    /// Any other input/output failure.
    Io,
}

/// A storage failure: a kind, the path involved, and an actionable message.
///
/// `Display` prints the message only; the underlying cause, if any, is
/// available through [`Error::source`].
#[derive(Debug)]
pub struct StorageError {
    kind: StorageErrorKind,
    path: Option<PathBuf>,
    message: String,
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
}

impl StorageError {
    /// Creates an error without an underlying cause.
    pub fn new(kind: StorageErrorKind, path: Option<&Path>, message: impl Into<String>) -> Self {
        StorageError {
            kind,
            path: path.map(Path::to_path_buf),
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Builds an error from an I/O failure while doing `action` on `path`.
    ///
    /// The kind is [`StorageErrorKind::PermissionDenied`] for EACCES/EPERM and
    /// [`StorageErrorKind::Io`] otherwise; `next_step` is appended to the message.
    pub(crate) fn io(action: &str, path: &Path, err: io::Error, next_step: &str) -> Self {
        let kind = if is_permission_error(&err) {
            StorageErrorKind::PermissionDenied
        } else {
            StorageErrorKind::Io
        };
        let message = format!("cannot {action} {}: {err}; {next_step}", path.display());
        StorageError::new(kind, Some(path), message).with_source(err)
    }

    /// What went wrong.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// The file or directory involved, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The actionable message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for StorageError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn Error + 'static))
    }
}

/// True for EACCES and EPERM, which both mean "the OS said no".
pub(crate) fn is_permission_error(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied
        || rustix::io::Errno::from_io_error(err) == Some(rustix::io::Errno::PERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_source_is_kept() {
        let err = StorageError::io(
            "open",
            Path::new("/x/y"),
            io::Error::from(io::ErrorKind::PermissionDenied),
            "check the permissions of /x",
        );
        assert_eq!(err.kind(), StorageErrorKind::PermissionDenied);
        assert_eq!(err.path(), Some(Path::new("/x/y")));
        let text = err.to_string();
        assert!(text.starts_with("cannot open /x/y: "), "{text}");
        assert!(text.ends_with("check the permissions of /x"), "{text}");
        assert!(err.source().is_some());
    }

    #[test]
    fn eperm_counts_as_permission_denied() {
        let err = StorageError::io(
            "chmod",
            Path::new("/x"),
            rustix::io::Errno::PERM.into(),
            "retry",
        );
        assert_eq!(err.kind(), StorageErrorKind::PermissionDenied);
        let other = StorageError::io("read", Path::new("/x"), io::Error::other("boom"), "retry");
        assert_eq!(other.kind(), StorageErrorKind::Io);
    }
}
