//! `ClosableStore`: a store the coordinator can close while handles still point at it.
//!
//! sled admits one process per database, so a coordinator handing over must really close
//! its database before it releases the lock, even if an embedder still holds an
//! `AdmissionHandle` (and through it the persister and the store). Closing takes the store
//! out; later calls fail with a storage error, which stops dispatch (fail closed).

use std::sync::{Arc, RwLock};

use tollgate_storage::{QuotaStore, StorageError, StorageErrorKind};

/// A [`QuotaStore`] that can be closed once.
pub struct ClosableStore<S: QuotaStore> {
    inner: RwLock<Option<Arc<S>>>,
    describe: String,
}

impl<S: QuotaStore> ClosableStore<S> {
    /// Wrap `store`.
    pub fn new(store: Arc<S>) -> Self {
        let describe = store.describe();
        ClosableStore {
            inner: RwLock::new(Some(store)),
            describe,
        }
    }

    /// Take the store out; every later call fails.
    pub fn close(&self) -> Option<Arc<S>> {
        self.inner.write().ok().and_then(|mut s| s.take())
    }

    fn with<T>(&self, f: impl FnOnce(&S) -> Result<T, StorageError>) -> Result<T, StorageError> {
        let guard = self.inner.read().map_err(|_| closed())?;
        match guard.as_ref() {
            Some(store) => f(store),
            None => Err(closed()),
        }
    }
}

fn closed() -> StorageError {
    StorageError::new(
        StorageErrorKind::Unusable,
        None,
        "this process handed the admission state to another coordinator; start a new engine",
    )
}

impl<S: QuotaStore> QuotaStore for ClosableStore<S> {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.with(|s| s.load(key))
    }
    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.with(|s| s.save(key, value))
    }
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        self.with(|s| s.save_batch(entries))
    }
    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.with(|s| s.remove(key))
    }
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.with(|s| s.entries())
    }
    fn flush(&self) -> Result<(), StorageError> {
        self.with(|s| s.flush())
    }
    fn describe(&self) -> String {
        self.describe.clone()
    }
}
