//! Persistence off the actor threads.
//!
//! Quota actors hand serialized records to a [`Persister`]; one writer thread writes them
//! to the store and flushes, then acknowledges each record it made durable. Actors never
//! block on I/O: a leased record's acknowledgement ([`Stored`]) is what lets the actor
//! grant under that lease (see `tollgate_quota::lease`; a new key's first two grants alone
//! go before its first record is stored, under a provisional lease: `crate::fresh_keys`,
//! so its first record simply joins the next batch). Records that arrive while the writer
//! flushes go together in its next batch (group commit), so many busy keys share one
//! flush.
//!
//! Each record says whether anything waits for it ([`Urgency`]). An urgent one (an
//! admission blocked on its lease, a deeper penalty, a pause) is written at once; when
//! every pending record can wait (periodic renewals, a new key's first record after its
//! provisional grants, graceful records), the writer gathers for up to [`GATHER`] from the
//! first of them before it writes, and an urgent record (or [`Persister::hurry`], or a
//! `sync`) ends the gathering at once. Why: a flush is the coordinator's largest cost
//! (issue 35: in `bench org`, the writer and sled's I/O threads spent about 100 µs of
//! CPU per AWS call flushing back to back, one small batch per flush, against some 70 µs
//! on the actors' thread), and no grant waits for a record that can wait. What it costs:
//! such a record reaches the disk up to [`GATHER`] later, which the lease rule already
//! covers (a grant is charged to the record in flight and to the stored one, so a kill
//! before the write restores from the older, stricter record or the fresh-key charge).
//!
//! A failed write marks the shared
//! [`StoreHealth`] failed, and every actor checks it before granting: storage errors stop
//! dispatch (fail closed) instead of silently bypassing coordination.
//!
//! A failed write is not the end (issue 24): its acknowledgements carry the error at once
//! (so admissions waiting on them, deadlines and all, get their errors), but its records
//! stay queued (unless a newer record for the key replaced them) and the writer tries
//! again after [`RETRY_FIRST`], doubling up to [`RETRY_CAP`], until the store takes them
//! or the persister stops. The first write that succeeds clears the health, and every key
//! admits again without a restart. An actor that reports the failure back from its failed
//! acknowledgement ([`StoreHealth::fail`]) repeats news the writer already had; such an
//! echo arriving after the recovery must not stop dispatch again, so the writer counts
//! the acknowledgements it failed and `fail` swallows that many reports.
//!
//! A store whose writes cannot block (the in-memory store) is written inline, on the
//! caller's thread, and acknowledged at once: nothing to keep off the actor thread, and
//! simulated-time tests need no real thread to run first.
//!
//! Reads go through the pending map first, so a key evicted and recreated moments later
//! sees its latest record even before the writer has stored it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;
use tollgate_storage::{QuotaStore, StorageError};

use crate::error::{StoreFailure, StoreFailureKind};

/// The longest the writer holds records nothing waits for, gathering more before one
/// flush (module docs).
pub const GATHER: Duration = Duration::from_millis(20);

/// Whether anything waits for a record to be durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// An admission waits for its lease, or the record tightens what a successor must
    /// know (a deeper penalty, a pause): written at once.
    Now,
    /// Nothing waits: it may be gathered for up to [`GATHER`] with others into one flush.
    Gather,
}

/// The writer's first retry after a failed write.
pub const RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two retries of a failed write.
pub const RETRY_CAP: Duration = Duration::from_secs(2);

/// Whether the store still accepts writes.
#[derive(Debug, Default)]
pub struct StoreHealth {
    failed: AtomicBool,
    reason: Mutex<Option<StoreFailure>>,
    /// Failed acknowledgements whose report back through [`StoreHealth::fail`] is an echo.
    echoes: AtomicU64,
}

impl StoreHealth {
    /// The failure that stopped dispatch, if any.
    pub fn failure(&self) -> Option<StoreFailure> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.reason.lock().map(|r| r.clone()).unwrap_or(None)
    }

    /// Record a failure; dispatch stops. A report of a failed acknowledgement (the writer
    /// marked the store failed already, and may have recovered since) is an echo and
    /// changes nothing.
    pub fn fail(&self, reason: StoreFailure) {
        let echo = self
            .echoes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if !echo {
            self.mark_failed(reason, 0);
        }
    }

    /// The store refused a write; `acks` failed acknowledgements will be reported back.
    fn mark_failed(&self, reason: StoreFailure, acks: u64) {
        self.echoes.fetch_add(acks, Ordering::AcqRel);
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.failed.store(true, Ordering::Release);
    }

    /// The store took a write again: dispatch resumes.
    fn recover(&self) {
        if !self.failed.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut r) = self.reason.lock() {
            *r = None;
        }
        self.failed.store(false, Ordering::Release);
        tracing::warn!("quota state is stored again; admission resumes");
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
    /// Some pending record is [`Urgency::Now`] (or a caller hurried the writer).
    urgent: bool,
    /// The batch the writer is storing: still the newest record of its keys until the
    /// store has it, so `load` reads it here in the meantime (a key evicted and
    /// recreated while its record is being written must not start fresh).
    writing: Option<Arc<HashMap<String, Vec<u8>>>>,
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
    pub fn save(&self, key: &str, record: Vec<u8>, urgency: Urgency) -> Stored {
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
                let first = p.records.is_empty();
                p.records.insert(key.to_owned(), record);
                p.acks.push(tx);
                let hurry = urgency == Urgency::Now && !p.urgent;
                p.urgent |= urgency == Urgency::Now;
                // The writer wakes for the first record (to start gathering) and when
                // one turns urgent; others join the batch it is gathering.
                if !(first || hurry) {
                    return Stored::Later(rx);
                }
            }
            Err(_) => return Stored::Now(Err(poisoned())),
        }
        self.shared.wake.notify_one();
        Stored::Later(rx)
    }

    /// Write what is pending now: an admission waits for a record that was saved as
    /// [`Urgency::Gather`].
    pub fn hurry(&self) {
        if self.inline {
            return;
        }
        if let Ok(mut p) = self.shared.pending.lock() {
            if p.urgent || p.records.is_empty() {
                return;
            }
            p.urgent = true;
        }
        self.shared.wake.notify_one();
    }

    /// Write on the caller's thread; each save tries the store again, so a store that
    /// takes writes again clears the health on the next save.
    fn write_inline(&self, key: &str, record: &[u8]) -> StoreResult {
        let result = self
            .shared
            .store
            .save(key, record)
            .and_then(|()| self.shared.store.flush());
        if let Err(e) = result {
            tracing::error!(error = %e, "quota state could not be stored; admission stops");
            let failure = StoreFailure::write(e);
            self.shared.health.mark_failed(failure.clone(), 1);
            return Err(failure);
        }
        self.shared.health.recover();
        Ok(())
    }

    /// The latest record for `key`: pending first, then the store.
    pub fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        if let Ok(p) = self.shared.pending.lock() {
            let writing = p.writing.as_deref().and_then(|w| w.get(key));
            if let Some(r) = p.records.get(key).or(writing) {
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

/// The wait before the next retry after `failures` failed writes in a row.
fn retry_delay(failures: u32) -> Duration {
    RETRY_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(RETRY_CAP)
}

fn write_loop(shared: &Shared) {
    let mut failures = 0u32;
    loop {
        let (batch, acks, sync_to, stop) = {
            let Ok(mut p) = shared.pending.lock() else {
                return;
            };
            if failures > 0 && !p.stop {
                // Back off before retrying; only a stop cuts the wait short.
                p = match shared
                    .wake
                    .wait_timeout_while(p, retry_delay(failures), |p| !p.stop)
                {
                    Ok((p, _)) => p,
                    Err(_) => return,
                };
            }
            // After a failure, go round again even with nothing new: the retry is the work.
            while p.records.is_empty() && p.sync_requested == p.synced && !p.stop && failures == 0 {
                p = match shared.wake.wait(p) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
            // Nothing waits for these records: gather more for one flush (module docs).
            let can_wait = |p: &mut Pending| !p.urgent && !p.stop && p.sync_requested == p.synced;
            if failures == 0 && can_wait(&mut p) {
                p = match shared.wake.wait_timeout_while(p, GATHER, can_wait) {
                    Ok((p, _)) => p,
                    Err(_) => return,
                };
            }
            // Taken, not drained: the map's room for a burst (an organization's keys
            // saved at once) goes with the batch instead of staying at its peak.
            let writing = Arc::new(std::mem::take(&mut p.records));
            p.writing = Some(writing.clone());
            p.urgent = false;
            let acks = std::mem::take(&mut p.acks);
            (writing, acks, p.sync_requested, p.stop)
        };
        let mut result = Ok(());
        if !batch.is_empty() {
            let entries: Vec<(String, Vec<u8>)> =
                batch.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            result = shared
                .store
                .save_batch(&entries)
                .map_err(StoreFailure::write);
        }
        if result.is_ok() {
            result = shared.store.flush().map_err(StoreFailure::write);
        }
        match &result {
            Ok(()) => {
                failures = 0;
                shared.health.recover();
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                tracing::error!(error = %e, retry_in = ?retry_delay(failures), "quota state could not be stored; admission stops until the store takes writes again");
                shared.health.mark_failed(e.clone(), acks.len() as u64);
            }
        }
        for ack in acks {
            let _ = ack.send(result.clone());
        }
        if let Ok(mut p) = shared.pending.lock() {
            p.writing = None;
            if result.is_err() {
                // Keep the records for the retry, unless a newer one replaced them.
                for (key, record) in batch.iter() {
                    p.records
                        .entry(key.clone())
                        .or_insert_with(|| record.clone());
                }
            }
            p.synced = sync_to;
            shared.done.notify_all();
            if stop {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tollgate_storage::recovering::RecoveringStore;

    use super::*;

    fn answer(stored: Stored) -> StoreResult {
        match stored {
            Stored::Now(result) => result,
            Stored::Later(rx) => rx.blocking_recv().expect("answered"),
        }
    }

    #[test]
    fn retry_delays_double_from_the_first_to_the_cap() {
        let delays: Vec<_> = (1..=8).map(retry_delay).collect();
        assert_eq!(delays[0], RETRY_FIRST);
        assert_eq!(delays[1], RETRY_FIRST * 2);
        assert_eq!(delays[2], RETRY_FIRST * 4);
        assert_eq!(delays[7], RETRY_CAP);
        assert_eq!(retry_delay(u32::MAX), RETRY_CAP);
    }

    #[test]
    fn a_store_that_fails_three_writes_then_recovers_keeps_the_record_and_clears_the_health() {
        let store = Arc::new(RecoveringStore::new(3, true));
        let persister = Persister::start(store.clone());
        // The waiter gets its error at once; dispatch stops meanwhile.
        let first = answer(persister.save("k", b"v1".to_vec(), Urgency::Now));
        assert!(first.unwrap_err().message().contains("disk full"));
        assert!(persister.health().failure().is_some());
        // The actor reporting its failed acknowledgement back is an echo.
        persister.health().fail(StoreFailure::new(
            StoreFailureKind::Write,
            "k: disk full (simulated)",
        ));
        // The writer retries the record with backoff until the store takes it (sync
        // answers after each attempt; each later one waits its backoff).
        let mut attempts = 0;
        while persister.sync().is_err() {
            attempts += 1;
            assert!(attempts < 10, "no recovery after {attempts} syncs");
        }
        assert!(persister.health().failure().is_none(), "dispatch resumes");
        assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v1"[..]));
        // New records are stored and acknowledged as before.
        assert!(answer(persister.save("k", b"v2".to_vec(), Urgency::Now)).is_ok());
        assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"v2"[..]));
        persister.stop().unwrap();
    }

    #[test]
    fn a_newer_record_replaces_a_failed_one_waiting_for_its_retry() {
        let store = Arc::new(RecoveringStore::new(1, true));
        let persister = Persister::start(store.clone());
        assert!(answer(persister.save("k", b"old".to_vec(), Urgency::Now)).is_err());
        let newer = persister.save("k", b"new".to_vec(), Urgency::Now);
        assert!(answer(newer).is_ok());
        assert_eq!(store.load("k").unwrap().as_deref(), Some(&b"new"[..]));
        persister.stop().unwrap();
    }

    #[test]
    fn an_inline_store_tries_again_on_the_next_save() {
        let store = Arc::new(RecoveringStore::new(2, false));
        let persister = Persister::start(store.clone());
        assert!(answer(persister.save("k", b"a".to_vec(), Urgency::Now)).is_err());
        assert!(answer(persister.save("k", b"b".to_vec(), Urgency::Now)).is_err());
        assert!(persister.health().failure().is_some());
        assert!(answer(persister.save("k", b"c".to_vec(), Urgency::Now)).is_ok());
        assert!(persister.health().failure().is_none());
        // Late echoes of the two failed acknowledgements do not stop dispatch again.
        persister
            .health()
            .fail(StoreFailure::new(StoreFailureKind::Write, "k: disk full"));
        persister
            .health()
            .fail(StoreFailure::new(StoreFailureKind::Write, "k: disk full"));
        assert!(persister.health().failure().is_none());
        // A failure nobody was answered about still stops it.
        persister.health().fail(StoreFailure::new(
            StoreFailureKind::Write,
            "encoding failed",
        ));
        assert_eq!(
            persister
                .health()
                .failure()
                .map(|f| f.message().to_owned())
                .as_deref(),
            Some("encoding failed")
        );
    }

    #[test]
    fn a_store_that_never_recovers_still_stops_when_asked() {
        let store = Arc::new(RecoveringStore::new(u32::MAX, true));
        let persister = Persister::start(store);
        assert!(answer(persister.save("k", b"v".to_vec(), Urgency::Now)).is_err());
        assert!(
            persister.stop().is_err(),
            "stop reports the failure, and returns"
        );
    }
}
