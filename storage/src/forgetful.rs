//! [`ForgetfulStore`]: a store that keeps nothing, for measuring what the actors
//! themselves hold (`actors/tests/footprint.rs`, `actors/examples/actor_memory.rs`): every
//! write succeeds and is dropped, every read finds nothing. Not behind a feature, for the
//! reason `recovering` gives.

use crate::{QuotaStore, StorageError};

/// Takes every write and keeps none; written inline (its writes never block).
#[derive(Debug, Clone, Copy, Default)]
pub struct ForgetfulStore;

impl QuotaStore for ForgetfulStore {
    fn load(&self, _: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(None)
    }
    fn save(&self, _: &str, _: &[u8]) -> Result<(), StorageError> {
        Ok(())
    }
    fn save_batch(&self, _: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        Ok(())
    }
    fn remove(&self, _: &str) -> Result<(), StorageError> {
        Ok(())
    }
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(Vec::new())
    }
    fn flush(&self) -> Result<(), StorageError> {
        Ok(())
    }
    fn describe(&self) -> String {
        "a store that keeps nothing".into()
    }
    fn writes_block(&self) -> bool {
        false
    }
}
