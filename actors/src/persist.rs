//! Persistence off the actor threads.
//!
//! Quota actors hand serialized records to a [`Persister`]; one writer thread writes them
//! to the store and flushes, then acknowledges each record it made durable. Actors never
//! block on I/O: a leased record's acknowledgement ([`Stored`]) is what lets the actor
//! grant under that lease (see `tollgate_quota::lease`). There is no gathering pause:
//! records that arrive while the writer flushes go together in its next batch (group
//! commit), so many busy keys share one flush. A failed write marks the shared
//! [`StoreHealth`] failed, and every actor checks it before granting: storage errors stop
//! dispatch (fail closed) instead of silently bypassing coordination.
//!
//! A store whose writes cannot block (the in-memory store) is written inline, on the
//! caller's thread, and acknowledged at once: nothing to keep off the actor thread, and
//! simulated-time tests need no real thread to run first.
//!
//! Reads go through the pending map first, so a key evicted and recreated moments later
//! sees its latest record even before the writer has stored it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use tokio::sync::oneshot;
use tollgate_storage::{QuotaStore, StorageError};

use crate::error::{StoreFailure, StoreFailureKind};

/// Whether the store still accepts writes.
#[derive(Debug, Default)]
pub struct StoreHealth {
    failed: AtomicBool,
    reason: Mutex<Option<StoreFailure>>,
}

impl StoreHealth {
    /// The failure that stopped dispatch, if any.
    pub fn failure(&self) -> Option<StoreFailure> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.reason.lock().map(|r| r.clone()).unwrap_or(None)
    }

    /// Record a failure; dispatch stops.
    pub fn fail(&self, reason: StoreFailure) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.failed.store(true, Ordering::Release);
    }
}

/// The answer to a [`Persister::save`]: `Ok` once the record (or a later one for the same
/// key) is written and flushed; `Err` with the failure when storing failed.
pub type StoreResult = Result<(), StoreFailure>;

/// When a saved record is durable.
#[derive(Debug)]
pub enum Stored {
    /// Already (inline store).
    Now(StoreResult),
    /// When the writer thread answers.
    Later(oneshot::Receiver<StoreResult>),
}

#[derive(Default)]
struct Pending {
    records: HashMap<String, Vec<u8>>,
    acks: Vec<oneshot::Sender<StoreResult>>,
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
    /// Write on the caller's thread (a store whose writes cannot block).
    inline: bool,
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
    /// Start persisting to `store`: through a writer thread, or inline for a store whose
    /// writes cannot block.
    pub fn start(store: Arc<dyn QuotaStore>) -> Persister {
        let inline = !store.writes_block();
        let shared = Arc::new(Shared {
            store,
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            done: Condvar::new(),
            health: Arc::new(StoreHealth::default()),
        });
        let writer = (!inline).then(|| {
            let for_thread = shared.clone();
            std::thread::Builder::new()
                .name("tollgate-persist".into())
                .spawn(move || write_loop(&for_thread))
                .expect("spawning the persistence thread")
        });
        Persister {
            shared,
            inline,
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    /// The shared health flag.
    pub fn health(&self) -> Arc<StoreHealth> {
        self.shared.health.clone()
    }

    /// Store a record for `key` and flush; a later record for the same key queued before
    /// the write replaces it (and is what the acknowledgement then vouches for).
    pub fn save(&self, key: &str, record: Vec<u8>) -> Stored {
        if self.inline {
            return Stored::Now(self.write_inline(key, &record));
        }
        let (tx, rx) = oneshot::channel();
        match self.shared.pending.lock() {
            Ok(p) if p.stop => {
                return Stored::Now(Err(StoreFailure::new(
                    StoreFailureKind::Closed,
                    "the admission state was closed",
                )));
            }
            Ok(mut p) => {
                p.records.insert(key.to_owned(), record);
                p.acks.push(tx);
            }
            Err(_) => return Stored::Now(Err(poisoned())),
        }
        self.shared.wake.notify_one();
        Stored::Later(rx)
    }

    fn write_inline(&self, key: &str, record: &[u8]) -> StoreResult {
        if let Some(reason) = self.shared.health.failure() {
            return Err(reason);
        }
        let result = self
            .shared
            .store
            .save(key, record)
            .and_then(|()| self.shared.store.flush());
        if let Err(e) = result {
            tracing::error!(error = %e, "quota state could not be stored; admission stops");
            let failure = StoreFailure::write(e);
            self.shared.health.fail(failure.clone());
            return Err(failure);
        }
        Ok(())
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
    pub fn sync(&self) -> StoreResult {
        if self.inline {
            return self.shared.health.failure().map_or(Ok(()), Err);
        }
        let mut p = self.shared.pending.lock().map_err(|_| poisoned())?;
        p.sync_requested += 1;
        let wanted = p.sync_requested;
        self.shared.wake.notify_one();
        while p.synced < wanted && !p.stop {
            p = self.shared.done.wait(p).map_err(|_| poisoned())?;
        }
        match self.shared.health.failure() {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// Write what is pending, flush, and stop the writer. Not for actor threads.
    pub fn stop(&self) -> StoreResult {
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

/// The persistence queue's lock was poisoned by a panic.
fn poisoned() -> StoreFailure {
    StoreFailure::new(
        StoreFailureKind::Poisoned,
        "the persistence queue is poisoned (a thread panicked); restart the process",
    )
}

fn write_loop(shared: &Shared) {
    loop {
        let (batch, acks, sync_to, stop) = {
            let Ok(mut p) = shared.pending.lock() else {
                return;
            };
            while p.records.is_empty() && p.sync_requested == p.synced && !p.stop {
                p = match shared.wake.wait(p) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
            let batch: Vec<(String, Vec<u8>)> = p.records.drain().collect();
            let acks = std::mem::take(&mut p.acks);
            (batch, acks, p.sync_requested, p.stop)
        };
        let mut result = match shared.health.failure() {
            Some(reason) => Err(reason),
            None => Ok(()),
        };
        if result.is_ok() && !batch.is_empty() {
            result = shared.store.save_batch(&batch).map_err(StoreFailure::write);
        }
        if result.is_ok() {
            result = shared.store.flush().map_err(StoreFailure::write);
        }
        if let Err(e) = &result {
            tracing::error!(error = %e, "quota state could not be stored; admission stops");
            shared.health.fail(e.clone());
        }
        for ack in acks {
            let _ = ack.send(result.clone());
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
