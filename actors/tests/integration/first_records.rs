//! A new key's first records, in paused time: under provisional first grants
//! (`fresh_keys`, a coordinator's default) its first two admissions go at once and its
//! first record with the periodic save, one record where writing it ahead took three (the
//! write-ahead record, the renewal its grant half used, the periodic save); a burst-1
//! key's second admission waits for a token, not for a record; a third admission before
//! that record lands waits for it, and so does a retry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionHandle, FreshKeys, ReservationGuard, RuntimeConfig,
    TokioClock, WaitOptions,
};
use tollgate_quota::{Clock, Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::{MemoryStore, PreviousShutdown, QuotaStore, StorageError};

const START: Timestamp = Timestamp::from_millis(3_000_000);

/// An in-memory store (written inline) that counts the records written per key.
#[derive(Default)]
struct CountingStore {
    inner: MemoryStore,
    writes: Mutex<HashMap<String, usize>>,
}

impl CountingStore {
    fn writes(&self, key: &QuotaKey) -> usize {
        let writes = self.writes.lock().unwrap();
        writes.get(&key.to_string()).copied().unwrap_or(0)
    }
}

impl QuotaStore for CountingStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.load(key)
    }
    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        *self.writes.lock().unwrap().entry(key.into()).or_default() += 1;
        self.inner.save(key, value)
    }
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        entries.iter().try_for_each(|(k, v)| self.save(k, v))
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
        "counting (test)".into()
    }
    fn writes_block(&self) -> bool {
        false
    }
}

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/iam:ListRoles".parse().unwrap()
}

/// A runtime on `store` whose fresh keys start as `fresh_keys`.
fn config(store: Arc<CountingStore>, fresh_keys: FreshKeys) -> RuntimeConfig {
    RuntimeConfig {
        store,
        fresh_keys,
        ..RuntimeConfig::simulated(Owner {
            pid: 1,
            generation: 1,
        })
    }
}

fn provisional() -> FreshKeys {
    FreshKeys::after_open(PreviousShutdown::Fresh, None, START)
}

/// A reservation on the new key under `rate`/s with `burst`, from a runtime on `config`
/// started at `START` (inside the paused system), with the runtime's clock and handle
/// (kept alive for the test's length, as before).
async fn new_key_slot(
    config: RuntimeConfig,
    rate: f64,
    burst: f64,
) -> (ReservationGuard, Arc<TokioClock>, AdmissionHandle) {
    let clock = Arc::new(TokioClock::starting_at(START));
    let handle = start_in_current_system(config, clock.clone());
    let policy = Policy::new(rate, burst, 10, 20).unwrap();
    let slot = handle.reserve(&key(), policy, WaitOptions::default()).await;
    (slot.unwrap(), clock, handle)
}

/// Two admissions on a new key at `START` (rate 4, burst 2: both fit at once): the
/// records stored by `START + 150 ms`, and whether one was stored when the grants came
/// back.
fn first_admissions(fresh_keys: FreshKeys) -> (usize, bool) {
    let store = Arc::new(CountingStore::default());
    let config = config(store.clone(), fresh_keys);
    paused_system().block_on(async move {
        let (slot, clock, _handle) = new_key_slot(config, 4.0, 2.0).await;
        for _ in 0..2 {
            let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            assert_eq!(grant.admitted_at, START);
        }
        let stored_before_the_grants = store.writes(&key()) > 0;
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(clock.now() >= START + Duration::from_millis(150));
        std::mem::forget(slot);
        (store.writes(&key()), stored_before_the_grants)
    })
}

#[test]
fn a_new_keys_first_two_grants_go_before_its_one_first_record() {
    let (records, stored_first) = first_admissions(provisional());
    assert!(!stored_first, "neither grant waited for a record");
    assert_eq!(records, 1, "the periodic save stores the first record");
    let (records, stored_first) = first_admissions(FreshKeys::write_ahead());
    assert!(stored_first, "written ahead");
    assert!(
        records > 1,
        "{records} records: the write-ahead one, its renewal, ..."
    );
}

#[test]
fn a_burst_1_new_keys_second_admission_waits_for_a_token_not_for_a_record() {
    let store = Arc::new(CountingStore::default());
    let config = config(store.clone(), provisional());
    paused_system().block_on(async move {
        // 20/s, burst 1: a token every 50 ms, before the periodic save (100 ms).
        let (slot, _clock, _handle) = new_key_slot(config, 20.0, 1.0).await;
        let first = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        let second = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        assert_eq!(first.admitted_at, START);
        assert_eq!(
            second.admitted_at,
            START + Duration::from_millis(50),
            "the bucket's next token"
        );
        assert_eq!(store.writes(&key()), 0, "no record was hurried for it");
        std::mem::forget(slot);
    });
}

#[test]
fn a_third_admission_before_the_first_record_waits_for_it() {
    let store = Arc::new(CountingStore::default());
    let config = config(store.clone(), provisional());
    paused_system().block_on(async move {
        let (slot, _clock, _handle) = new_key_slot(config, 20.0, 5.0).await;
        for _ in 0..2 {
            slot.admit(1, false, WaitOptions::default()).await.unwrap();
        }
        assert_eq!(store.writes(&key()), 0, "two grants, no record");
        let third = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        assert_eq!(third.admitted_at, START, "an inline record lands at once");
        // (then the renewal the grant half used, as under any stored lease)
        let records = store.writes(&key());
        assert!(records >= 1, "the third grant waited for a record");
        std::mem::forget(slot);
    });
}

#[test]
fn a_retry_on_a_new_key_waits_for_its_first_record() {
    // (a retry first, and a retry after one plain grant: neither under the provisional
    // lease, which has a start left for the second)
    for plain_first in [false, true] {
        let store = Arc::new(CountingStore::default());
        let config = config(store.clone(), provisional());
        paused_system().block_on(async move {
            let (slot, _clock, _handle) = new_key_slot(config, 20.0, 5.0).await;
            if plain_first {
                slot.admit(1, false, WaitOptions::default()).await.unwrap();
                assert_eq!(store.writes(&key()), 0);
            }
            slot.admit(1, true, WaitOptions::default()).await.unwrap();
            let records = store.writes(&key());
            assert!(records >= 1, "a provisional grant is never a retry");
            std::mem::forget(slot);
        });
    }
}
