//! A small tmpfs of its own for the full-disk tests (root only: it is mounted with
//! `mount -t tmpfs`), and filling it until the kernel answers ENOSPC.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of a given size mounted on a fresh temporary directory; unmounted on drop.
pub struct Tmpfs {
    path: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// Mount a tmpfs of `size` (as `mount -o size=` takes it, e.g. `4m`), mode 0700.
    /// Panics with what to do when it cannot (not root, no `mount`).
    pub fn mount(size: &str) -> Tmpfs {
        let parent = tempfile::tempdir().expect("creating a temporary directory");
        let path = parent.path().join("fs");
        std::fs::create_dir(&path).expect("creating the mount point");
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&path)
            .status()
            .expect("running mount (util-linux)");
        assert!(
            status.success(),
            "mounting a tmpfs failed ({status}): this test needs root"
        );
        Tmpfs {
            path,
            _parent: parent,
        }
    }

    /// The mounted filesystem's root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write zeros to `name` in it until the filesystem is full (ENOSPC); the file's path.
    pub fn fill(&self, name: &str) -> PathBuf {
        let path = self.path.join(name);
        let mut f = std::fs::File::create(&path).expect("creating the filler");
        let chunk = vec![0u8; 64 * 1024];
        loop {
            if let Err(e) = f.write_all(&chunk).and_then(|()| f.sync_all()) {
                assert_eq!(e.raw_os_error(), Some(28), "expected ENOSPC: {e}");
                return path;
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}
