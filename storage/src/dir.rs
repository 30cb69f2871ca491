//! Which directory holds the admission state, and the names inside it.
//!
//! Processes share quotas only if they agree on one directory (DESIGN §5), so
//! the choice must be deterministic and must never drift silently: an explicit
//! directory or existing state with a problem is an error, not a reason to look
//! elsewhere. The environment is read once into a [`DirEnv`] so resolution is a
//! function of plain values and can be tested without touching process state.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{StorageError, StorageErrorKind};
use crate::private_dir::{self, Presence, Symlinks};
use crate::process::current_uid;

/// Environment variable naming the admission directory explicitly.
pub const ADMISSION_DIR_ENV: &str = "TOLLGATE_ADMISSION_DIR";

/// Last path component of the admission directory; bump on layout changes.
const ADMISSION_LEAF: &str = "admission-v1";
/// Application directory under the cache root.
const APP_DIR: &str = "tollgate";
/// Names inside the admission directory.
const LOCK_FILE: &str = "coordinator.lock";
const STATE_DIR: &str = "state-v1.sled";
const SOCKET_FILE: &str = "coordinator.sock";
/// Fleet mode's host id (written by `tollgate_actors::fleet::host_id`, which names the
/// same file): a second process joining a fleet-mode coordinator's directory must not
/// take it for a foreign file.
const FLEET_HOST_ID_FILE: &str = "fleet-host-id";

/// The inputs of directory resolution, read from the process once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEnv {
    /// `TOLLGATE_ADMISSION_DIR` (or a CLI `--dir`).
    pub explicit: Option<PathBuf>,
    /// `XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// The system temporary directory (honours `TMPDIR`).
    pub temp_dir: PathBuf,
    /// The real uid whose state this is.
    pub uid: u32,
}

impl DirEnv {
    /// Reads the environment of this process; empty values count as unset.
    pub fn from_process_env() -> DirEnv {
        DirEnv::from_lookup(
            |name| std::env::var_os(name),
            std::env::temp_dir(),
            current_uid(),
        )
    }

    /// Builds a `DirEnv` from a variable lookup, so the rules are testable.
    fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
        temp_dir: PathBuf,
        uid: u32,
    ) -> DirEnv {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        DirEnv {
            explicit: var(ADMISSION_DIR_ENV),
            xdg_cache_home: var("XDG_CACHE_HOME"),
            home: var("HOME"),
            temp_dir,
            uid,
        }
    }
}

/// How the admission directory was chosen, for status output and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DirSource {
    /// `TOLLGATE_ADMISSION_DIR` or `--dir`.
    Explicit,
    /// `$XDG_CACHE_HOME/tollgate/admission-v1`.
    XdgCache,
    /// `$HOME/.cache/tollgate/admission-v1`.
    HomeCache,
    /// `<temp>/tollgate-<uid>/admission-v1`, used when the cache is unusable.
    TempFallback,
}

impl fmt::Display for DirSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DirSource::Explicit => "explicit",
            DirSource::XdgCache => "XDG cache",
            DirSource::HomeCache => "home cache",
            DirSource::TempFallback => "temporary fallback",
        })
    }
}

/// A resolved, private (0700, owned by us), writable admission directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionDir {
    path: PathBuf,
    source: DirSource,
}

impl AdmissionDir {
    /// Chooses and prepares the admission directory for `env`.
    pub fn resolve(env: &DirEnv) -> Result<AdmissionDir, StorageError> {
        if let Some(explicit) = &env.explicit {
            return prepare_explicit(explicit, env.uid);
        }
        let fallback_parent = env.temp_dir.join(format!("{APP_DIR}-{}", env.uid));
        let fallback = fallback_parent.join(ADMISSION_LEAF);
        let fallback_presence = own_fallback_presence(&fallback_parent, &fallback, env.uid)?;
        let Some((primary, source, root)) = primary_candidate(env) else {
            return prepare_fallback(&env.temp_dir, &fallback_parent, &fallback, env.uid);
        };
        match (private_dir::inspect(&primary)?, fallback_presence) {
            (Presence::Present, Presence::Present) => Err(ambiguous(&primary, &fallback)),
            (Presence::Present, Presence::Absent) => {
                adopt(primary, source, env.uid, Symlinks::Follow)
            }
            (Presence::Absent, Presence::Present) => {
                prepare_fallback(&env.temp_dir, &fallback_parent, &fallback, env.uid)
            }
            (Presence::Absent, Presence::Absent) => match create_primary(&primary, source, &root) {
                Ok(()) => adopt(primary, source, env.uid, Symlinks::Follow),
                Err(PrimaryFailure::Fallback) => {
                    prepare_fallback(&env.temp_dir, &fallback_parent, &fallback, env.uid)
                }
                Err(PrimaryFailure::Fatal(err)) => Err(err),
            },
        }
    }

    /// Uses `path` as an explicit directory, as `TOLLGATE_ADMISSION_DIR` would.
    pub fn at(path: impl AsRef<Path>) -> Result<AdmissionDir, StorageError> {
        prepare_explicit(path.as_ref(), current_uid())
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How it was chosen.
    pub fn source(&self) -> DirSource {
        self.source
    }

    /// The coordinator's lock file.
    pub fn lock_path(&self) -> PathBuf {
        self.path.join(LOCK_FILE)
    }

    /// The sled database directory.
    pub fn state_path(&self) -> PathBuf {
        self.path.join(STATE_DIR)
    }

    /// The coordinator's Unix socket.
    ///
    /// Unix socket paths are limited to about 100 bytes (108 on Linux,
    /// including the terminator); whoever binds it must report a too-long
    /// path with advice to choose a shorter `TOLLGATE_ADMISSION_DIR`.
    pub fn socket_path(&self) -> PathBuf {
        self.path.join(SOCKET_FILE)
    }
}

/// The default directory, its source, and the root that must already be usable.
fn primary_candidate(env: &DirEnv) -> Option<(PathBuf, DirSource, PathBuf)> {
    // The XDG spec says relative values are invalid and must be ignored.
    if let Some(xdg) = env.xdg_cache_home.as_ref().filter(|p| p.is_absolute()) {
        let path = xdg.join(APP_DIR).join(ADMISSION_LEAF);
        return Some((path, DirSource::XdgCache, xdg.clone()));
    }
    let home = env.home.as_ref().filter(|p| p.is_absolute())?;
    let path = home.join(".cache").join(APP_DIR).join(ADMISSION_LEAF);
    Some((path, DirSource::HomeCache, home.clone()))
}

/// Why the default directory could not be created.
enum PrimaryFailure {
    /// Permissions, a read-only filesystem, or an unusable home: use the fallback.
    Fallback,
    /// Anything else (disk full, I/O error) is reported, not worked around.
    Fatal(StorageError),
}

fn create_primary(primary: &Path, source: DirSource, root: &Path) -> Result<(), PrimaryFailure> {
    use rustix::io::Errno;
    // Never create a missing home directory: an absent or non-directory HOME
    // is "unusable". A missing XDG_CACHE_HOME is created like any parent.
    if source == DirSource::HomeCache && !root.is_dir() {
        return Err(PrimaryFailure::Fallback);
    }
    match private_dir::create(primary, true) {
        Ok(()) => Ok(()),
        Err(err) => match Errno::from_io_error(&err) {
            Some(Errno::ACCESS | Errno::PERM | Errno::ROFS | Errno::NOTDIR | Errno::NOENT) => {
                Err(PrimaryFailure::Fallback)
            }
            _ => Err(PrimaryFailure::Fatal(StorageError::io(
                "create admission directory",
                primary,
                err,
                "free disk space or fix the filesystem, or set TOLLGATE_ADMISSION_DIR to a \
                 writable local directory",
            ))),
        },
    }
}

/// Whether the fallback holds *our* state. A `tollgate-<uid>` parent that is
/// not a directory owned by us cannot hold our state, so it does not make the
/// default ambiguous; it is refused only if we actually need the fallback.
fn own_fallback_presence(
    parent: &Path,
    fallback: &Path,
    uid: u32,
) -> Result<Presence, StorageError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(parent) {
        Ok(meta) if meta.is_dir() && meta.uid() == uid => private_dir::inspect(fallback),
        Ok(_) => Ok(Presence::Absent),
        Err(err) if private_dir::is_absent_error(&err) => Ok(Presence::Absent),
        Err(err) => Err(StorageError::io(
            "inspect",
            parent,
            err,
            "check the permissions of the temporary directory, or set TOLLGATE_ADMISSION_DIR \
             to a local directory you own",
        )),
    }
}

fn prepare_explicit(path: &Path, uid: u32) -> Result<AdmissionDir, StorageError> {
    let path = std::path::absolute(path).map_err(|err| {
        StorageError::io(
            "resolve",
            path,
            err,
            "set TOLLGATE_ADMISSION_DIR to an absolute path",
        )
    })?;
    if private_dir::inspect(&path)? == Presence::Absent {
        private_dir::create(&path, true).map_err(|err| {
            StorageError::io(
                "create admission directory",
                &path,
                err,
                "create it yourself with mode 0700, or point TOLLGATE_ADMISSION_DIR at a \
                 writable local directory you own",
            )
        })?;
    } else {
        refuse_foreign_contents(&path)?;
    }
    adopt(path, DirSource::Explicit, uid, Symlinks::Follow)
}

/// What tollgate itself keeps in an admission directory (the write probe is removed at
/// once, but a crash may leave one).
fn is_admission_entry(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    [LOCK_FILE, STATE_DIR, SOCKET_FILE, FLEET_HOST_ID_FILE].contains(&name.as_ref())
        || name.starts_with(private_dir::PROBE_PREFIX)
}

/// An explicit directory that already exists must be empty or hold only tollgate's own
/// entries. Pointing `TOLLGATE_ADMISSION_DIR` at `$HOME` or a project folder by mistake
/// would otherwise have its mode tightened to 0700 and a sled database written into it.
fn refuse_foreign_contents(path: &Path) -> Result<(), StorageError> {
    let Ok(entries) = std::fs::read_dir(path) else {
        // Not a readable directory: `adopt` reports what is wrong with it.
        return Ok(());
    };
    let mut foreign: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|name| !is_admission_entry(name))
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort_unstable();
    let shown: Vec<&str> = foreign.iter().map(String::as_str).take(3).collect();
    let more = if foreign.len() > 3 { ", ..." } else { "" };
    Err(StorageError::new(
        StorageErrorKind::Unusable,
        Some(path),
        format!(
            "{} is not an admission directory: it holds {} entries tollgate did not make \
             ({}{more}); nothing was changed in it. Point {ADMISSION_DIR_ENV} (or --dir) at \
             a new or empty directory, e.g. {}",
            path.display(),
            foreign.len(),
            shown.join(", "),
            path.join("tollgate-admission").display()
        ),
    ))
}

fn prepare_fallback(
    temp: &Path,
    parent: &Path,
    fallback: &Path,
    uid: u32,
) -> Result<AdmissionDir, StorageError> {
    for (dir, what) in [
        (parent, "private temporary directory"),
        (fallback, "admission directory"),
    ] {
        if private_dir::inspect(dir)? == Presence::Absent {
            private_dir::create(dir, false).map_err(|err| {
                StorageError::io(
                    &format!("create {what}"),
                    dir,
                    err,
                    &format!(
                        "the default cache directory is unusable too; check that {} is \
                         writable, or set TOLLGATE_ADMISSION_DIR to a writable local directory",
                        temp.display()
                    ),
                )
            })?;
        }
        private_dir::ensure_private(dir, uid, Symlinks::Refuse)?;
    }
    adopt(
        fallback.to_path_buf(),
        DirSource::TempFallback,
        uid,
        Symlinks::Refuse,
    )
}

fn adopt(
    path: PathBuf,
    source: DirSource,
    uid: u32,
    symlinks: Symlinks,
) -> Result<AdmissionDir, StorageError> {
    private_dir::ensure_private(&path, uid, symlinks)?;
    private_dir::probe_writable(&path)?;
    Ok(AdmissionDir { path, source })
}

fn ambiguous(primary: &Path, fallback: &Path) -> StorageError {
    StorageError::new(
        StorageErrorKind::Ambiguous,
        Some(primary),
        format!(
            "admission state exists both in {} and in the temporary fallback {}; stop all \
             tollgate processes, then set {ADMISSION_DIR_ENV} to the one to keep (or remove \
             the other) so every process shares one directory",
            primary.display(),
            fallback.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A sandbox with a home, an XDG root (unset by default) and a temp dir.
    struct Sandbox {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    impl Sandbox {
        fn new() -> Sandbox {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().to_path_buf();
            fs::create_dir(root.join("home")).unwrap();
            fs::create_dir(root.join("tmp")).unwrap();
            Sandbox { _tmp: tmp, root }
        }

        fn env(&self) -> DirEnv {
            DirEnv {
                explicit: None,
                xdg_cache_home: None,
                home: Some(self.root.join("home")),
                temp_dir: self.root.join("tmp"),
                uid: current_uid(),
            }
        }

        fn home_primary(&self) -> PathBuf {
            self.root.join("home/.cache/tollgate/admission-v1")
        }

        fn fallback(&self) -> PathBuf {
            self.root
                .join(format!("tmp/tollgate-{}/admission-v1", current_uid()))
        }
    }

    fn mode_of(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn names_inside_the_directory() {
        let sandbox = Sandbox::new();
        let dir = AdmissionDir::at(sandbox.root.join("adm")).unwrap();
        assert_eq!(dir.lock_path(), sandbox.root.join("adm/coordinator.lock"));
        assert_eq!(dir.state_path(), sandbox.root.join("adm/state-v1.sled"));
        assert_eq!(dir.socket_path(), sandbox.root.join("adm/coordinator.sock"));
    }

    #[test]
    fn home_cache_is_the_default_and_is_created_private() {
        let sandbox = Sandbox::new();
        let dir = AdmissionDir::resolve(&sandbox.env()).unwrap();
        assert_eq!(dir.source(), DirSource::HomeCache);
        assert_eq!(dir.path(), sandbox.home_primary());
        assert_eq!(mode_of(dir.path()), 0o700);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "probe removed"
        );
    }

    #[test]
    fn xdg_cache_wins_over_home_and_relative_xdg_is_ignored() {
        let sandbox = Sandbox::new();
        let mut env = sandbox.env();
        env.xdg_cache_home = Some(sandbox.root.join("xdg"));
        let dir = AdmissionDir::resolve(&env).unwrap();
        assert_eq!(dir.source(), DirSource::XdgCache);
        assert_eq!(dir.path(), sandbox.root.join("xdg/tollgate/admission-v1"));

        env.xdg_cache_home = Some(PathBuf::from("relative/xdg"));
        assert_eq!(
            AdmissionDir::resolve(&env).unwrap().source(),
            DirSource::HomeCache
        );
    }

    #[test]
    fn explicit_dir_is_created_with_parents() {
        let sandbox = Sandbox::new();
        let mut env = sandbox.env();
        env.explicit = Some(sandbox.root.join("a/b/adm"));
        let dir = AdmissionDir::resolve(&env).unwrap();
        assert_eq!(dir.source(), DirSource::Explicit);
        assert_eq!(mode_of(dir.path()), 0o700);
        assert!(!sandbox.home_primary().exists());
    }

    #[test]
    fn explicit_dir_that_cannot_be_created_fails_without_fallback() {
        let sandbox = Sandbox::new();
        let file = sandbox.root.join("file");
        fs::write(&file, b"").unwrap();
        let mut env = sandbox.env();
        env.explicit = Some(file.join("adm"));
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert!(err.to_string().contains("TOLLGATE_ADMISSION_DIR"), "{err}");
        assert_eq!(err.path(), Some(file.join("adm").as_path()));
        assert!(!sandbox.fallback().exists());
        assert!(!sandbox.home_primary().exists());
    }

    #[test]
    fn explicit_file_is_unusable() {
        let sandbox = Sandbox::new();
        let file = sandbox.root.join("file");
        fs::write(&file, b"").unwrap();
        let err = AdmissionDir::at(&file).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
    }

    #[test]
    fn unusable_or_absent_home_uses_the_private_fallback() {
        let sandbox = Sandbox::new();
        let home_file = sandbox.root.join("home-file");
        fs::write(&home_file, b"").unwrap();
        for home in [
            Some(home_file),
            Some(sandbox.root.join("no-such-home")),
            None,
        ] {
            let mut env = sandbox.env();
            env.home = home.clone();
            let dir = AdmissionDir::resolve(&env).unwrap();
            assert_eq!(dir.source(), DirSource::TempFallback, "{home:?}");
            assert_eq!(dir.path(), sandbox.fallback());
            assert_eq!(mode_of(dir.path()), 0o700);
            assert_eq!(mode_of(dir.path().parent().unwrap()), 0o700);
        }
        assert!(
            !sandbox.root.join("no-such-home").exists(),
            "home never created"
        );
    }

    #[test]
    fn existing_fallback_is_reused_while_primary_is_absent() {
        let sandbox = Sandbox::new();
        let mut env = sandbox.env();
        env.home = None;
        AdmissionDir::resolve(&env).unwrap();
        // Home is usable again, but the fallback holds the live state.
        let dir = AdmissionDir::resolve(&sandbox.env()).unwrap();
        assert_eq!(dir.source(), DirSource::TempFallback);
        assert!(!sandbox.home_primary().exists());
    }

    #[test]
    fn both_locations_existing_is_ambiguous() {
        let sandbox = Sandbox::new();
        fs::create_dir_all(sandbox.home_primary()).unwrap();
        fs::create_dir_all(sandbox.fallback()).unwrap();
        let err = AdmissionDir::resolve(&sandbox.env()).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Ambiguous);
        assert!(err.to_string().contains(ADMISSION_DIR_ENV), "{err}");
        // An explicit choice settles it.
        let mut env = sandbox.env();
        env.explicit = Some(sandbox.fallback());
        assert_eq!(
            AdmissionDir::resolve(&env).unwrap().path(),
            sandbox.fallback()
        );
    }

    #[test]
    fn existing_primary_with_errors_never_selects_the_fallback() {
        let sandbox = Sandbox::new();
        fs::create_dir_all(sandbox.home_primary().parent().unwrap()).unwrap();
        fs::write(sandbox.home_primary(), b"not a dir").unwrap();
        let err = AdmissionDir::resolve(&sandbox.env()).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
        assert!(!sandbox.fallback().exists());
    }

    #[test]
    fn dir_owned_by_another_uid_is_refused() {
        let sandbox = Sandbox::new();
        fs::create_dir_all(sandbox.home_primary()).unwrap();
        let mut env = sandbox.env();
        env.uid = current_uid().wrapping_add(1);
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::NotOwned);
        assert!(
            err.to_string()
                .contains(&format!("owned by uid {}", current_uid())),
            "{err}"
        );
    }

    #[test]
    fn foreign_fallback_parent_is_refused_and_does_not_block_the_primary() {
        let sandbox = Sandbox::new();
        let other = current_uid().wrapping_add(1);
        // Pre-created by "someone else": from `other`'s point of view it is ours,
        // so resolve as `other`, whose fallback parent we own.
        let parent = sandbox.root.join(format!("tmp/tollgate-{other}"));
        fs::create_dir(&parent).unwrap();
        fs::create_dir(parent.join("admission-v1")).unwrap();
        let mut env = sandbox.env();
        env.uid = other;
        env.home = None;
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::NotOwned);
        assert_eq!(err.path(), Some(parent.as_path()));
        // With a usable home the foreign parent is not "our" state: no ambiguity.
        // (The primary is then created owned by us, not `other`, so it is refused
        // for ownership instead; what matters is the kind is not Ambiguous.)
        env.home = Some(sandbox.root.join("home"));
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::NotOwned);
        assert_eq!(err.path(), Some(sandbox.home_primary().as_path()));
    }

    #[test]
    fn symlinked_fallback_parent_is_refused() {
        let sandbox = Sandbox::new();
        let elsewhere = sandbox.root.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let parent = sandbox.root.join(format!("tmp/tollgate-{}", current_uid()));
        std::os::unix::fs::symlink(&elsewhere, &parent).unwrap();
        let mut env = sandbox.env();
        env.home = None;
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn explicit_dir_holding_other_files_is_refused_and_left_untouched() {
        let sandbox = Sandbox::new();
        let home = sandbox.root.join("home");
        fs::write(home.join(".bashrc"), "x").unwrap();
        fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
        let mut env = sandbox.env();
        env.explicit = Some(home.clone());
        let err = AdmissionDir::resolve(&env).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Unusable);
        assert!(
            err.to_string().contains("not an admission directory"),
            "{err}"
        );
        assert!(err.to_string().contains(".bashrc"), "{err}");
        assert_eq!(mode_of(&home), 0o755, "the mode was changed");
        let names: Vec<_> = fs::read_dir(&home)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(".bashrc")]);
    }

    #[test]
    fn explicit_dir_that_is_empty_or_holds_only_admission_state_is_adopted() {
        let sandbox = Sandbox::new();
        let dir = sandbox.root.join("adm");
        fs::create_dir(&dir).unwrap();
        AdmissionDir::at(&dir).unwrap();
        for name in [LOCK_FILE, SOCKET_FILE, ".write-probe-42"] {
            fs::write(dir.join(name), "").unwrap();
        }
        fs::create_dir(dir.join(STATE_DIR)).unwrap();
        AdmissionDir::at(&dir).unwrap();
    }

    #[test]
    fn loose_existing_dirs_are_tightened() {
        let sandbox = Sandbox::new();
        let mut env = sandbox.env();
        env.home = None;
        let parent = sandbox.fallback().parent().unwrap().to_path_buf();
        fs::create_dir_all(sandbox.fallback()).unwrap();
        for dir in [&parent, &sandbox.fallback()] {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        }
        AdmissionDir::resolve(&env).unwrap();
        assert_eq!(mode_of(&parent), 0o700);
        assert_eq!(mode_of(&sandbox.fallback()), 0o700);
    }

    #[test]
    fn empty_variables_count_as_unset() {
        let lookup = |name: &str| match name {
            ADMISSION_DIR_ENV => Some(OsString::new()),
            "XDG_CACHE_HOME" => Some(OsString::new()),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        let env = DirEnv::from_lookup(lookup, PathBuf::from("/tmp"), 7);
        assert_eq!(env.explicit, None);
        assert_eq!(env.xdg_cache_home, None);
        assert_eq!(env.home, Some(PathBuf::from("/home/u")));
        assert_eq!((env.temp_dir, env.uid), (PathBuf::from("/tmp"), 7));
        assert_eq!(DirEnv::from_process_env().uid, current_uid());
    }
}
