//! Persistence off the actor threads.
//!
//! Quota actors hand serialized records to a [`Persister`]; one writer thread batches them
//! into the store and flushes. Actors never block on I/O. A failed write marks the
//! shared [`StoreHealth`] failed, and every actor checks it before granting: storage errors
//! stop dispatch (fail closed) instead of silently bypassing coordination.
//!
//! Reads go through the pending map first, so a key evicted and recreated moments later
//! sees its latest record even before the writer has stored it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tollgate_storage::{QuotaStore, StorageError};

/// How long the writer gathers records before a batch.
pub const WRITE_BATCH_INTERVAL: Duration = Duration::from_millis(50);

/// Whether the store still accepts writes.
#[derive(Debug, Default)]
pub struct StoreHealth {
    failed: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl StoreHealth {
    /// The failure that stopped dispatch, if any.
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.reason.lock().map(|r| r.clone()).unwrap_or(None)
    }

    /// Record a failure; dispatch stops.
    pub fn fail(&self, reason: String) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.failed.store(true, Ordering::Release);
    }
}

#[derive(Default)]
struct Pending {
    records: HashMap<String, Vec<u8>>,
    stop: bool,
    /// Bumped by `sync` callers; the writer answers with `written`.
    sync_requested: u64,
    synced: u64,
}

struct Shared {
    store: Arc<dyn QuotaStore>,
    pending: Mutex<Pending>,
    wake: Condvar,
    done: Condvar,
    health: Arc<StoreHealth>,
}

/// The handle actors use to persist records; cheap to clone.
#[derive(Clone)]
pub struct Persister {
    shared: Arc<Shared>,
    writer: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for Persister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persister")
            .field("store", &self.shared.store.describe())
            .finish()
    }
}

impl Persister {
    /// Start the writer thread over `store`.
    pub fn start(store: Arc<dyn QuotaStore>) -> Persister {
        let shared = Arc::new(Shared {
            store,
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            done: Condvar::new(),
            health: Arc::new(StoreHealth::default()),
        });
        let for_thread = shared.clone();
        let writer = std::thread::Builder::new()
            .name("tollgate-persist".into())
            .spawn(move || write_loop(&for_thread))
            .expect("spawning the persistence thread");
        Persister {
            shared,
            writer: Arc::new(Mutex::new(Some(writer))),
        }
    }

    /// The shared health flag.
    pub fn health(&self) -> Arc<StoreHealth> {
        self.shared.health.clone()
    }

    /// Queue a record for `key`; a later record for the same key replaces it.
    pub fn save(&self, key: &str, record: Vec<u8>) {
        if let Ok(mut p) = self.shared.pending.lock() {
            p.records.insert(key.to_owned(), record);
        }
        self.shared.wake.notify_one();
    }

    /// The latest record for `key`: pending first, then the store.
    pub fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        if let Ok(p) = self.shared.pending.lock() {
            if let Some(r) = p.records.get(key) {
                return Ok(Some(r.clone()));
            }
        }
        self.shared.store.load(key)
    }

    /// Every stored record, pending ones included.
    pub fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let mut all: HashMap<String, Vec<u8>> = self.shared.store.entries()?.into_iter().collect();
        if let Ok(p) = self.shared.pending.lock() {
            all.extend(p.records.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut out: Vec<_> = all.into_iter().collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Block until everything queued so far is written and flushed. Not for actor threads.
    pub fn sync(&self) -> Result<(), String> {
        let mut p = self.shared.pending.lock().map_err(|e| e.to_string())?;
        p.sync_requested += 1;
        let wanted = p.sync_requested;
        self.shared.wake.notify_one();
        while p.synced < wanted && !p.stop {
            p = self.shared.done.wait(p).map_err(|e| e.to_string())?;
        }
        match self.shared.health.failure() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// Write what is pending, flush, and stop the writer. Not for actor threads.
    pub fn stop(&self) -> Result<(), String> {
        let result = self.sync();
        if let Ok(mut p) = self.shared.pending.lock() {
            p.stop = true;
        }
        self.shared.wake.notify_one();
        if let Some(handle) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = handle.join();
        }
        result
    }
}

fn write_loop(shared: &Shared) {
    loop {
        let (batch, sync_to, need_flush, stop) = {
            let Ok(mut p) = shared.pending.lock() else {
                return;
            };
            while p.records.is_empty() && p.sync_requested == p.synced && !p.stop {
                p = match shared.wake.wait(p) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
            if p.sync_requested == p.synced && !p.stop {
                // Gather more records for one batch.
                drop(p);
                std::thread::sleep(WRITE_BATCH_INTERVAL);
                let Ok(again) = shared.pending.lock() else {
                    return;
                };
                p = again;
            }
            let batch: Vec<(String, Vec<u8>)> = p.records.drain().collect();
            (batch, p.sync_requested, p.sync_requested > p.synced, p.stop)
        };
        let mut result = Ok(());
        if !batch.is_empty() && shared.health.failure().is_none() {
            result = shared.store.save_batch(&batch);
        }
        if result.is_ok() && (need_flush || stop) {
            result = shared.store.flush();
        }
        if let Err(e) = result {
            tracing::error!(error = %e, "quota state could not be stored; admission stops");
            shared.health.fail(e.to_string());
        }
        if let Ok(mut p) = shared.pending.lock() {
            p.synced = sync_to;
            shared.done.notify_all();
            if stop {
                return;
            }
        }
    }
}
