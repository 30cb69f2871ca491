//! Quota actors over their lifetime, in paused time: idle eviction and restoration,
//! fail-closed storage, strictest policy across owners, and waiter deadlines.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionError, AdmissionHandle, RuntimeConfig, StoreFailureKind,
    TokioClock, WaitOptions,
};
use tollgate_quota::{Outcome, Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::recovering::RecoveringStore;
use tollgate_storage::{MemoryStore, QuotaStore, StorageError, StorageErrorKind};

const START: Timestamp = Timestamp::from_millis(5_000_000);

fn config(store: Arc<dyn QuotaStore>, pid: u32) -> RuntimeConfig {
    RuntimeConfig {
        store,
        owner: Owner { pid, generation: 1 },
        pid_alive: Arc::new(|_| true),
        evict_after: Duration::from_secs(10),
        schedules: tollgate_actors::Schedules::none(),
        fleet: None,
        breakers: None,
        fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
    }
}

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:GetKeyLastUsage"
        .parse()
        .unwrap()
}

/// The key's stored record, which must satisfy `ready`. The in-memory store is written
/// inline, on the actor's thread (`persist.rs`), so what the actors did before paused
/// time moved on is stored already: nothing to wait for.
fn stored_record(
    store: &dyn QuotaStore,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let bytes = store.load(&key().to_string()).unwrap().expect("a record");
    let record: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(ready(&record), "{record}");
    record
}

async fn one_request(
    handle: &AdmissionHandle,
    policy: Policy,
    outcome: Outcome,
) -> Result<(), AdmissionError> {
    let slot = handle
        .reserve(&key(), policy, WaitOptions::default())
        .await?;
    let grant = slot.admit(1, false, WaitOptions::default()).await?;
    slot.feedback(outcome, &grant);
    Ok(())
}

#[test]
fn idle_key_is_evicted_and_restored_exactly_from_its_graceful_record() {
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(store.clone(), 1), clock.clone());
        let policy = Policy::new(5.0, 1.0, 10, 20).unwrap();
        one_request(&handle, policy, Outcome::Throttled)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let before = handle.status().await.unwrap();
        assert_eq!(before[0].state.penalty_steps, 1);
        // Idle for longer than evict_after: the actor retires with a graceful record
        // (written inline: stored before paused time moves past the eviction).
        tokio::time::sleep(Duration::from_secs(30)).await;
        let stored = store.load(&key().to_string()).unwrap().expect("a record");
        let record: serde_json::Value = serde_json::from_slice(&stored).unwrap();
        assert!(
            !record["live"].is_null() && record["lease"].is_null(),
            "eviction writes a graceful record: live state, no lease"
        );
        // The next request recreates the actor from that record: penalty kept.
        let status = handle.status().await.unwrap();
        assert_eq!(status.len(), 1, "the stored key is still reported");
        assert_eq!(status[0].state.penalty_steps, 1);
        one_request(&handle, policy, Outcome::Success)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let after = handle.status().await.unwrap();
        assert_eq!(
            after[0].state.penalty_steps, 0,
            "a success after the failure recovers one step"
        );
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn a_new_runtime_after_a_crash_charges_the_lease_and_keeps_penalty_and_allowance() {
    let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
    let policy = Policy::new(10.0, 10.0, 10, 20).unwrap();
    paused_system().block_on({
        let store = store.clone();
        async move {
            let handle =
                start_in_current_system(config(store, 1), Arc::new(TokioClock::starting_at(START)));
            let slot = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let grant = slot.admit(1, true, WaitOptions::default()).await.unwrap();
            assert!(grant.retry_spent);
            slot.feedback(Outcome::Transient, &grant);
            // Let the periodic save run, then "crash": no shutdown, no graceful record.
            tokio::time::sleep(Duration::from_millis(500)).await;
            std::mem::forget(slot);
        }
    });
    // The crashed runtime stored a leased record (the in-memory store is written inline).
    let record = stored_record(store.as_ref(), |r| r["durable"]["retry"]["units"] == 19);
    assert!(!record["lease"].is_null(), "{record}");
    assert_eq!(
        record["lease"]["starts"], 1,
        "10/s: a lease of 10/8 -> 1 start"
    );
    assert_eq!(
        record["lease"]["cost"], 2.5,
        "burst 10: a lease of 10/4 cost"
    );
    paused_system().block_on(async move {
        // The crashed process (pid 1) is dead now.
        let mut cfg = config(store, 2);
        cfg.pid_alive = Arc::new(|pid| pid != 1);
        let clock = Arc::new(TokioClock::starting_at(START + Duration::from_secs(60)));
        let handle = start_in_current_system(cfg, clock.clone());
        let status = {
            // Creating the actor restores the record.
            let slot = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let status = handle.status().await.unwrap();
            let admitted = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            assert_eq!(
                admitted.admitted_at,
                START + Duration::from_secs(60),
                "the lease's one start fills 1 of 10 places in the window: no wait"
            );
            status
        };
        let s = &status[0].state;
        assert_eq!(s.penalty_steps, 1, "penalty survives the crash");
        assert_eq!(
            s.retry_units, 18,
            "retry allowance survives the crash, less the lease's one start (it may have been \
             a retry)"
        );
        assert_eq!(
            s.reservations, 1,
            "the dead owner's slot was reaped; only ours is held"
        );
        assert_eq!(
            s.window_starts, 1,
            "the lease's start is charged at the takeover"
        );
        assert!(
            s.tokens <= 10.0 - 2.5 + 1e-9,
            "the lease's cost is charged: {}",
            s.tokens
        );
        handle.shutdown().await.unwrap();
    });
}

/// A store whose writes fail, as a full or read-only disk would.
struct FailingStore;

impl QuotaStore for FailingStore {
    fn load(&self, _: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(None)
    }
    fn save(&self, _: &str, _: &[u8]) -> Result<(), StorageError> {
        Err(StorageError::new(
            StorageErrorKind::Io,
            None,
            "disk full (simulated); free space and retry",
        ))
    }
    fn save_batch(&self, _: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        self.save("", &[])
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
        "failing test store".into()
    }
    // Written inline, so paused time does not run ahead of a writer thread.
    fn writes_block(&self) -> bool {
        false
    }
}

#[test]
fn storage_failure_stops_dispatch() {
    paused_system().block_on(async {
        let handle = start_in_current_system(
            config(Arc::new(FailingStore), 1),
            Arc::new(TokioClock::starting_at(START)),
        );
        let policy = Policy::new(100.0, 100.0, 10, 20).unwrap();
        // No grant without a stored lease: the very first request fails closed.
        match one_request(&handle, policy, Outcome::Success).await {
            Err(AdmissionError::Storage(failure)) => {
                assert!(failure.message().contains("disk full"), "{failure}");
                assert_eq!(failure.kind(), StoreFailureKind::Write);
                assert!(
                    failure.storage_error().is_some(),
                    "the storage error is kept in the process it happened in"
                );
            }
            other => panic!("expected a storage refusal, got {other:?}"),
        }
        // And so does every later one.
        match one_request(&handle, policy, Outcome::Success).await {
            Err(AdmissionError::Storage(_)) => {}
            other => panic!("expected a storage refusal, got {other:?}"),
        }
        assert!(
            handle.shutdown().await.is_err(),
            "shutdown reports the storage failure"
        );
    });
}

#[test]
fn strictest_policy_of_two_owners_governs_the_key() {
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(store, 1), clock.clone());
        let loose = Policy::new(10.0, 10.0, 10, 20).unwrap();
        let strict = Policy::new(2.0, 1.0, 10, 20).unwrap();
        let a = handle
            .reserve(&key(), loose, WaitOptions::default())
            .await
            .unwrap();
        let b = handle
            .reserve(&key(), strict, WaitOptions::default())
            .await
            .unwrap();
        let mut starts = Vec::new();
        for _ in 0..3 {
            starts.push(
                a.admit(1, false, WaitOptions::default())
                    .await
                    .unwrap()
                    .admitted_at,
            );
        }
        drop(b);
        let ms: Vec<u64> = starts
            .iter()
            .map(|t| t.saturating_since(START).as_millis() as u64)
            .collect();
        assert_eq!(
            ms,
            [0, 500, 1_000],
            "the strict 2/s burst 1 applies to the loose caller too"
        );
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn a_waiter_past_its_deadline_is_answered_and_never_starts() {
    paused_system().block_on(async {
        let handle = start_in_current_system(
            config(Arc::new(MemoryStore::new()), 1),
            Arc::new(TokioClock::starting_at(START)),
        );
        let policy = Policy::new(1.0, 1.0, 10, 20).unwrap();
        let slot = handle
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        slot.admit(1, false, WaitOptions::default()).await.unwrap();
        let short = WaitOptions {
            timeout: Duration::from_millis(300),
            scope: None,
        };
        match slot.admit(1, false, short).await {
            Err(AdmissionError::DeadlineExceeded { key }) => {
                assert!(key.as_str().contains("kms:GetKeyLastUsage"))
            }
            other => panic!("expected a deadline error, got {other:?}"),
        }
        // The next admission is still at 1 s: the timed-out waiter charged nothing.
        let next = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        assert_eq!(next.admitted_at, START + Duration::from_secs(1));
        handle.shutdown().await.unwrap();
    });
}

/// Issue 24: one failed write used to stop the key until a restart. The store refuses
/// its first two writes (a full disk being cleaned up), then stores; its writes block, so
/// they go through the persistence thread, as sled's do.
#[test]
fn a_key_whose_store_failed_admits_again_once_the_store_takes_writes() {
    // Real time: the persistence thread's backoff (50 ms, then 100 ms) is real.
    actix::System::new().block_on(async {
        let store = Arc::new(RecoveringStore::new(2, true));
        let handle = start_in_current_system(
            config(store.clone(), 1),
            Arc::new(TokioClock::starting_at(START)),
        );
        let policy = Policy::new(100.0, 100.0, 10, 20).unwrap();
        // The waiter gets its error at once: storage errors still prevent dispatch.
        match one_request(&handle, policy, Outcome::Success).await {
            Err(AdmissionError::Storage(reason)) => {
                assert!(reason.to_string().contains("disk full"), "{reason}")
            }
            other => panic!("expected a storage refusal, got {other:?}"),
        }
        // The writer retries the record until the store takes it; the same key, the same
        // runtime, then admits again (bounded: 100 tries 20 ms apart).
        let mut refusals = 0;
        loop {
            match one_request(&handle, policy, Outcome::Success).await {
                Ok(()) => break,
                Err(AdmissionError::Storage(_)) if refusals < 100 => {
                    refusals += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => panic!("no recovery after {refusals} refusals: {other:?}"),
            }
        }
        one_request(&handle, policy, Outcome::Success)
            .await
            .expect("it keeps admitting");
        let status = handle.status().await.unwrap();
        assert_eq!(status[0].storage_failure, None, "{status:?}");
        assert!(store.load(&key().to_string()).unwrap().is_some());
        handle.shutdown().await.unwrap();
    });
}

/// Seed 000's `cleanupOutcome: "deferred"`: a release made while the store refuses
/// writes is queued (the persister retries its record), not reported as done; once the
/// store takes writes again, releases are handed over at once again.
#[test]
fn a_release_while_the_store_refuses_writes_is_queued_and_the_next_after_recovery_is_not() {
    paused_system().block_on(async {
        // Writes do not block: stored inline, so the failure is known when the actor
        // has handled the feedback.
        let store = Arc::new(RecoveringStore::new(0, false));
        let handle = start_in_current_system(
            config(store.clone(), 1),
            Arc::new(TokioClock::starting_at(START)),
        );
        let policy = Policy::new(100.0, 100.0, 10, 20).unwrap();
        let released = async |outcome| {
            let slot = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            slot.feedback(outcome, &grant);
            // Let the actor handle the feedback (a throttle is stored at once).
            tokio::time::sleep(Duration::from_millis(10)).await;
            slot.release()
        };
        assert_eq!(
            released(Outcome::Success).await,
            tollgate_actors::Cleanup::Released
        );
        store.refuse_next(u32::MAX);
        assert_eq!(
            released(Outcome::Throttled).await,
            tollgate_actors::Cleanup::Queued,
            "the throttle's record could not be stored: the release is queued"
        );
        store.refuse_next(0);
        // The persister's retry (50 ms) stores the queued records and clears the failure.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            released(Outcome::Success).await,
            tollgate_actors::Cleanup::Released
        );
        handle.shutdown().await.unwrap();
    });
}

/// A coordinator that retires while a client's release is lost (the client exited during
/// the handover) does not store that slot as held: it reaps owners already gone before its
/// graceful save, as a successor would on load; a live owner's slot is kept.
#[test]
fn a_retiring_runtime_stores_no_slot_of_an_owner_already_gone() {
    let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::default());
    let policy = Policy::new(10.0, 10.0, 4, 20).unwrap();
    let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
    paused_system().block_on({
        let (store, gone) = (store.clone(), gone.clone());
        async move {
            let mut cfg = config(store, 1);
            let exited = gone.clone();
            cfg.pid_alive = Arc::new(move |pid| {
                !(pid == 2 && exited.load(std::sync::atomic::Ordering::SeqCst))
            });
            let handle = start_in_current_system(cfg, Arc::new(TokioClock::starting_at(START)));
            let client = handle
                .for_owner(Owner {
                    pid: 2,
                    generation: 1,
                })
                .unwrap();
            let kept = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let lost = client
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            assert_eq!(handle.status().await.unwrap()[0].state.reservations, 2);
            // The client exits without its release reaching this runtime.
            std::mem::forget(lost);
            gone.store(true, std::sync::atomic::Ordering::SeqCst);
            std::mem::forget(kept);
            handle.shutdown().await.unwrap();
        }
    });
    let record = stored_record(store.as_ref(), |r| r["lease"].is_null());
    let held = record["durable"]["reservations"]["held"]
        .as_object()
        .unwrap();
    assert_eq!(
        held.len(),
        1,
        "only the live owner's slot is stored: {record}"
    );
    assert!(
        held.values().all(|r| r["owner"]["pid"] == 1),
        "the gone owner's slot was reaped: {record}"
    );
}
