//! Checks that make a directory safe to hold one user's admission state.
//!
//! Anyone who can write the admission directory can change another user's
//! quotas or impersonate its coordinator, so the directory must be a real
//! directory, owned by us, mode 0700, and writable. This module owns those
//! checks and the 0700 creation; `dir.rs` decides *which* directory to use.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::error::{is_permission_error, StorageError, StorageErrorKind};
use crate::process::current_pid;

/// Mode for every directory this crate creates or adopts.
pub(crate) const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode for every file this crate creates.
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;

/// Whether something exists at a path (without following a final symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Absent,
    Present,
}

/// Whether a final symlink is acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symlinks {
    /// The user chose this place (explicit or home cache): follow links.
    Follow,
    /// A shared temp directory: a link may be an attack, refuse it.
    Refuse,
}

/// Looks at `path` without following a final symlink.
///
/// A missing path, or one below a non-directory (ENOTDIR: nothing can exist
/// there), is absent. Any other failure means state might exist that we cannot
/// see, so it is an error rather than a reason to look elsewhere.
pub(crate) fn inspect(path: &Path) -> Result<Presence, StorageError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(Presence::Present),
        Err(err) if is_absent_error(&err) => Ok(Presence::Absent),
        Err(err) => Err(StorageError::io(
            "inspect",
            path,
            err,
            "check the permissions of its parent directories, or set \
             TOLLGATE_ADMISSION_DIR to a local directory you own",
        )),
    }
}

/// True when an error says the path does not (and cannot) exist.
pub(crate) fn is_absent_error(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::NotFound
        || rustix::io::Errno::from_io_error(err) == Some(rustix::io::Errno::NOTDIR)
}

/// Creates `path` with mode 0700; with `recursive`, missing parents too.
///
/// Returns the raw I/O error so the caller can decide whether it may fall back.
/// A directory that appears concurrently is not an error.
pub(crate) fn create(path: &Path, recursive: bool) -> io::Result<()> {
    let result = DirBuilder::new()
        .recursive(recursive)
        .mode(PRIVATE_DIR_MODE)
        .create(path);
    match result {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Verifies an existing directory is ours and private, tightening its mode.
///
/// It must be a directory (a final symlink only with [`Symlinks::Follow`]),
/// owned by `uid`. Group or other permission bits are removed, since only we
/// could have set them on a directory we own.
pub(crate) fn ensure_private(
    path: &Path,
    uid: u32,
    symlinks: Symlinks,
) -> Result<(), StorageError> {
    let meta = match symlinks {
        Symlinks::Follow => fs::metadata(path),
        Symlinks::Refuse => fs::symlink_metadata(path),
    }
    .map_err(|err| {
        StorageError::io(
            "inspect",
            path,
            err,
            "check that it exists and that its parent directories are searchable",
        )
    })?;
    if meta.file_type().is_symlink() {
        return Err(StorageError::new(
            StorageErrorKind::Unusable,
            Some(path),
            format!(
                "{} is a symbolic link in a shared temporary directory, which could \
                 redirect tollgate's state; remove it if you did not create it, or set \
                 TOLLGATE_ADMISSION_DIR to a directory you own",
                path.display()
            ),
        ));
    }
    if !meta.is_dir() {
        return Err(StorageError::new(
            StorageErrorKind::Unusable,
            Some(path),
            format!(
                "{} is not a directory; move it aside, or set TOLLGATE_ADMISSION_DIR \
                 to a directory you own",
                path.display()
            ),
        ));
    }
    if meta.uid() != uid {
        return Err(StorageError::new(
            StorageErrorKind::NotOwned,
            Some(path),
            format!(
                "{} is owned by uid {}, not by this user (uid {uid}); tollgate shares \
                 admission state only between processes of one user, so set \
                 TOLLGATE_ADMISSION_DIR to a directory you own, or have uid {} remove it",
                path.display(),
                meta.uid(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o777 != PRIVATE_DIR_MODE {
        let perms = fs::Permissions::from_mode(PRIVATE_DIR_MODE);
        fs::set_permissions(path, perms).map_err(|err| {
            StorageError::io(
                "restrict to mode 0700",
                path,
                err,
                "run `chmod 700` on it yourself, then retry",
            )
        })?;
    }
    Ok(())
}

/// Name prefix of the write probe (`.write-probe-PID`).
pub(crate) const PROBE_PREFIX: &str = ".write-probe-";

/// Proves `dir` is writable by creating and removing a probe file.
///
/// Catches read-only mounts and ACLs that the mode bits do not show, at
/// resolve time rather than halfway through a scan.
pub(crate) fn probe_writable(dir: &Path) -> Result<(), StorageError> {
    let probe = dir.join(format!("{PROBE_PREFIX}{}", current_pid()));
    let unwritable = |err: io::Error| {
        let kind = if is_permission_error(&err) {
            StorageErrorKind::PermissionDenied
        } else {
            StorageErrorKind::Unusable
        };
        StorageError::new(
            kind,
            Some(dir),
            format!(
                "admission directory {} is not writable ({err}); tollgate needs writable \
                 local storage to share quotas: fix its permissions or free disk space, \
                 or set TOLLGATE_ADMISSION_DIR to a writable local directory",
                dir.display()
            ),
        )
        .with_source(err)
    };
    // A probe left by a crashed run with the same pid is harmless: reuse it.
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .map_err(unwritable)?;
    fs::remove_file(&probe).map_err(unwritable)
}

/// Sets `path` to `mode` if it differs; used for files inside the directory.
pub(crate) fn restrict_mode(path: &Path, meta: &fs::Metadata, mode: u32) -> io::Result<()> {
    if meta.mode() & 0o777 == mode {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Creates `path` (and missing parents) with mode 0700 if absent, then applies the
/// admission directory's rules to it: a directory owned by this user, mode 0700,
/// writable. For other per-user state that must be as private (the service's state
/// directory holds its API token).
pub fn secure_private_dir(path: &Path) -> Result<(), StorageError> {
    if inspect(path)? == Presence::Absent {
        create(path, true).map_err(|err| {
            StorageError::io(
                "create",
                path,
                err,
                "create it yourself with mode 0700, or choose another directory",
            )
        })?;
    }
    ensure_private(path, crate::process::current_uid(), Symlinks::Follow)?;
    probe_writable(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::current_uid;

    fn mode_of(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn create_uses_mode_0700_for_every_new_level() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        create(&deep, true).unwrap();
        for level in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode_of(&tmp.path().join(level)), 0o700, "{level}");
        }
        // Existing is fine.
        create(&deep, true).unwrap();
        create(&deep, false).unwrap();
    }

    #[test]
    fn inspect_distinguishes_absent_present_and_below_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(inspect(tmp.path()).unwrap(), Presence::Present);
        assert_eq!(inspect(&tmp.path().join("nope")).unwrap(), Presence::Absent);
        let file = tmp.path().join("file");
        fs::write(&file, b"").unwrap();
        assert_eq!(inspect(&file.join("below")).unwrap(), Presence::Absent);
    }

    #[test]
    fn loose_modes_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private(&dir, current_uid(), Symlinks::Refuse).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
    }

    #[test]
    fn another_owner_is_refused_naming_the_owner() {
        let tmp = tempfile::tempdir().unwrap();
        let other = current_uid().wrapping_add(1);
        let err = ensure_private(tmp.path(), other, Symlinks::Follow).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::NotOwned);
        assert!(
            err.to_string().contains(&format!("uid {}", current_uid())),
            "{err}"
        );
    }

    #[test]
    fn symlinks_are_refused_only_when_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        fs::create_dir(&target).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        ensure_private(&link, current_uid(), Symlinks::Follow).unwrap();
        let err = ensure_private(&link, current_uid(), Symlinks::Refuse).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        fs::write(&file, b"").unwrap();
        let err = ensure_private(&file, current_uid(), Symlinks::Follow).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
    }

    #[test]
    fn probe_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        probe_writable(tmp.path()).unwrap();
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
        let err = probe_writable(&tmp.path().join("missing")).unwrap_err();
        assert!(err.to_string().contains("not writable"), "{err}");
    }
}
