//! The storage interface the quota actors persist through.
//!
//! Records are opaque bytes keyed by canonical quota key, so this crate never
//! learns the record schema and the actors can swap backends: [`SledStore`]
//! for shared on-disk state, [`MemoryStore`] for isolated in-memory admission
//! (DESIGN §6, unresolved identity) and tests, a DynamoDB store later.
//!
//! [`SledStore`]: crate::SledStore

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{StorageError, StorageErrorKind};

/// Persistent quota records, keyed by canonical quota key.
///
/// Object-safe so the actors can hold a `Box<dyn QuotaStore>`. Every method may
/// block on I/O: call it off the actor threads.
pub trait QuotaStore: Send + Sync + 'static {
    /// The record stored under `key`, if any.
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError>;
    /// Stores `value` under `key`, replacing any previous record.
    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError>;
    /// Stores several records; all or none if the backend can do that.
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError>;
    /// Deletes the record under `key`; absent keys are not an error.
    fn remove(&self, key: &str) -> Result<(), StorageError>;
    /// Every record, ordered by key.
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError>;
    /// Makes every write so far durable.
    fn flush(&self) -> Result<(), StorageError>;
    /// Names the backend and its location for messages, e.g. `sled at /path`.
    fn describe(&self) -> String;
    /// True if writes may block on I/O, so callers must keep them off actor threads.
    fn writes_block(&self) -> bool {
        true
    }
}

/// Loads and decodes the JSON record under `key`.
///
/// A record that does not decode is [`StorageErrorKind::Corrupted`]; the
/// message gives the key and the position of the problem but never the bytes.
pub fn load_json<T: DeserializeOwned>(
    store: &dyn QuotaStore,
    key: &str,
) -> Result<Option<T>, StorageError> {
    let Some(bytes) = store.load(key)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|err| {
        // The serde message may quote stored values, so keep only its category
        // and position, and do not attach it as the source.
        StorageError::new(
            StorageErrorKind::Corrupted,
            None,
            format!(
                "the quota record for {key} in {} cannot be decoded ({:?} error at line {}, \
                 column {}); stop all tollgate processes using this state, move it aside, \
                 then retry (quota state will start afresh)",
                store.describe(),
                err.classify(),
                err.line(),
                err.column()
            ),
        )
    })
}

/// Encodes `value` as JSON and saves it under `key`.
pub fn save_json<T: Serialize + ?Sized>(
    store: &dyn QuotaStore,
    key: &str,
    value: &T,
) -> Result<(), StorageError> {
    let bytes = serde_json::to_vec(value).map_err(|err| {
        StorageError::new(
            StorageErrorKind::Encode,
            None,
            format!(
                "cannot encode the quota record for {key} ({:?} error); this is a bug in \
                 tollgate, please report it",
                err.classify()
            ),
        )
    })?;
    store.save(key, &bytes)
}

/// A store that lives and dies with the process: nothing is shared or kept.
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn records(&self) -> MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        // A panic while holding the lock cannot leave a BTreeMap half-updated
        // through these methods (each does one map operation), so recover.
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl QuotaStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.records().get(key).cloned())
    }

    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.records().insert(key.to_owned(), value.to_vec());
        Ok(())
    }

    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        let mut records = self.records();
        for (key, value) in entries {
            records.insert(key.clone(), value.clone());
        }
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.records().remove(key);
        Ok(())
    }

    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(self
            .records()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn flush(&self) -> Result<(), StorageError> {
        Ok(())
    }

    fn describe(&self) -> String {
        "in-memory store".to_owned()
    }

    fn writes_block(&self) -> bool {
        false
    }
}

/// Behaviour every [`QuotaStore`] must show; the sled tests run it too.
#[cfg(test)]
pub(crate) fn check_store_contract(store: &dyn QuotaStore) {
    assert_eq!(store.load("a").unwrap(), None);
    store.save("b", b"2").unwrap();
    store.save("a", b"1").unwrap();
    store.save("a", b"one").unwrap();
    assert_eq!(store.load("a").unwrap().as_deref(), Some(&b"one"[..]));
    store
        .save_batch(&[
            ("c".to_owned(), b"3".to_vec()),
            ("b".to_owned(), b"two".to_vec()),
        ])
        .unwrap();
    store.remove("missing").unwrap();
    store.remove("c").unwrap();
    store.flush().unwrap();
    let entries = store.entries().unwrap();
    assert_eq!(
        entries,
        vec![
            ("a".to_owned(), b"one".to_vec()),
            ("b".to_owned(), b"two".to_vec())
        ]
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        tokens: u64,
    }

    #[test]
    fn memory_store_honours_the_contract() {
        check_store_contract(&MemoryStore::new());
    }

    #[test]
    fn json_round_trips_through_a_trait_object() {
        let store: Box<dyn QuotaStore> = Box::new(MemoryStore::new());
        assert_eq!(load_json::<Record>(&*store, "k").unwrap(), None);
        save_json(&*store, "k", &Record { tokens: 7 }).unwrap();
        assert_eq!(
            load_json::<Record>(&*store, "k").unwrap(),
            Some(Record { tokens: 7 })
        );
    }

    #[test]
    fn undecodable_record_is_corrupted_without_echoing_it() {
        let store = MemoryStore::new();
        store
            .save("k", br#"{"tokens":"secret-looking-value"}"#)
            .unwrap();
        let err = load_json::<Record>(&store, "k").unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::Corrupted);
        let text = err.to_string();
        assert!(!text.contains("secret-looking-value"), "{text}");
        assert!(text.contains("move it aside"), "{text}");
        assert!(std::error::Error::source(&err).is_none());
    }
}
