//! A host's id on the fleet items: `<hostname>-<8 random hex digits>`, created once and
//! stored in the admission directory (`fleet-host-id`, mode 0600).
//!
//! Why stored and not derived? Two admission directories on one machine are two hosts
//! (the fleet benchmark runs several on one machine), and a coordinator that restarts
//! (or fails over to another process of the same directory) should keep its id, so the
//! item's hosts map (degraded mode's local share divides by the hosts seen) counts it
//! once. The hostname part makes `tollgate fleet status` readable.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The file in the admission directory.
pub const HOST_ID_FILE: &str = "fleet-host-id";

/// Why the stored host id can be neither read nor created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostIdError {
    /// The file exists and cannot be read.
    #[error("cannot read the fleet host id {}: {source}; fix its permissions or remove it", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A new id cannot be written.
    #[error(
        "cannot store the fleet host id in {}: {source}; check the admission directory's permissions",
        path.display()
    )]
    Store {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The host id stored in `dir`, created if missing.
pub fn host_id(dir: &Path) -> Result<String, HostIdError> {
    let path = dir.join(HOST_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return Ok(id.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(HostIdError::Read { path, source }),
    }
    let id = new_id();
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        f.write_all(id.as_bytes())?;
        f.sync_all()
    };
    if let Err(source) = write() {
        return Err(HostIdError::Store { path, source });
    }
    Ok(id)
}

/// A fresh id: the hostname and a random suffix.
pub fn new_id() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into());
    format!("{name}-{:08x}", random_u32())
}

fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS's randomness; no extra dependency needed.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = host_id(dir.path()).unwrap();
        let b = host_id(dir.path()).unwrap();
        assert_eq!(a, b);
        assert!(a.rsplit_once('-').is_some_and(|(_, hex)| hex.len() == 8));
    }
}
