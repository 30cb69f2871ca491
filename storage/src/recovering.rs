//! [`RecoveringStore`]: a store that refuses its first writes and then takes them, as a
//! full disk does while someone frees space. For fault-injection tests: the
//! storage-recovery tests of the actors' persister and of a whole key (issue 24, item 5)
//! share this one copy. Not behind a feature: a feature only tests enable would make
//! `cargo test` rebuild this crate and everything above it that `cargo build` built
//! (docs/contributing.md, "One build for the demo and the tests").

use std::sync::atomic::{AtomicU32, Ordering};

use crate::{MemoryStore, QuotaStore, StorageError, StorageErrorKind};

/// Refuses its first `failures` writes (each `save` or `save_batch` call is one), then
/// stores them in memory. Reads always work.
#[derive(Debug)]
pub struct RecoveringStore {
    inner: MemoryStore,
    failures: AtomicU32,
    blocks: bool,
}

impl RecoveringStore {
    /// A store refusing `failures` writes; `blocks` is what [`QuotaStore::writes_block`]
    /// answers (a blocking store is written on the persister's thread).
    pub fn new(failures: u32, blocks: bool) -> RecoveringStore {
        RecoveringStore {
            inner: MemoryStore::new(),
            failures: AtomicU32::new(failures),
            blocks,
        }
    }

    /// Refuse the next `n` writes (a disk filling up later).
    pub fn refuse_next(&self, n: u32) {
        self.failures.store(n, Ordering::Release);
    }

    /// Writes still to be refused.
    pub fn failures_left(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    fn refuse(&self) -> Result<(), StorageError> {
        let refused = self
            .failures
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        match refused {
            true => Err(StorageError::new(
                StorageErrorKind::Io,
                None,
                "disk full (simulated); free space and retry",
            )),
            false => Ok(()),
        }
    }
}

impl QuotaStore for RecoveringStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.load(key)
    }
    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.refuse()?;
        self.inner.save(key, value)
    }
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        self.refuse()?;
        self.inner.save_batch(entries)
    }
    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.inner.remove(key)
    }
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.inner.entries()
    }
    fn flush(&self) -> Result<(), StorageError> {
        Ok(())
    }
    fn describe(&self) -> String {
        "recovering test store".into()
    }
    fn writes_block(&self) -> bool {
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_writes_are_refused_then_stored() {
        let store = RecoveringStore::new(2, false);
        assert!(store.save("a", b"1").is_err());
        assert!(store.save_batch(&[("a".into(), b"2".to_vec())]).is_err());
        assert_eq!(store.failures_left(), 0);
        store.save("a", b"3").unwrap();
        assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"3"[..]));
    }
}
