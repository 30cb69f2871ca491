//! Retiring idle actors within seconds (issue 35, item 4), in paused time: a key whose
//! actor retired and came back behaves exactly as one whose actor never left, a
//! coordinator that dies after a key retired restores it exactly, and a key used while
//! its graceful record is in flight keeps its actor and grants only under a new lease.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionHandle, KeyStatus, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::{Clock, Outcome, Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::{MemoryStore, QuotaStore, StorageError};

const START: Timestamp = Timestamp::from_millis(7_000_000);
const RETIRES_AFTER: Duration = Duration::from_secs(5);
const NEVER_RETIRES: Duration = Duration::from_secs(24 * 3_600);
/// Long enough that paused time never reaches a deadline while a real writer thread works.
const PATIENT: WaitOptions = WaitOptions {
    timeout: Duration::from_secs(10 * 24 * 3_600),
    scope: None,
};

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:GetKeyLastUsage"
        .parse()
        .unwrap()
}

/// 2/s, burst 2: a lease charged on restore would show as missing tokens and later starts.
fn policy() -> Policy {
    Policy::new(2.0, 2.0, 10, 20).unwrap()
}

fn runtime(
    store: Arc<dyn QuotaStore>,
    evict_after: Duration,
    clock: Arc<dyn Clock>,
) -> AdmissionHandle {
    let config = RuntimeConfig {
        store,
        owner: Owner {
            pid: std::process::id(),
            generation: 1,
        },
        pid_alive: Arc::new(|_| true),
        evict_after,
        schedules: tollgate_actors::Schedules::none(),
        fleet: None,
        breakers: None,
        fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
    };
    start_in_current_system(config, clock)
}

/// A retry, throttled, whose answer carried a Retry-After of 20 s: penalty, pause and a
/// spent retry unit, all to be kept.
async fn throttled_retry(handle: &AdmissionHandle) {
    let slot = handle.reserve(&key(), policy(), PATIENT).await.unwrap();
    let grant = slot.admit(1, true, PATIENT).await.unwrap();
    assert!(grant.retry_spent);
    slot.feedback(Outcome::Throttled, &grant);
    slot.pause(Duration::from_secs(20));
}

/// Four calls in a row, each answered with success: their start instants.
async fn four_calls(handle: AdmissionHandle) -> Vec<Timestamp> {
    let mut starts = Vec::new();
    for _ in 0..4 {
        let slot = handle.reserve(&key(), policy(), PATIENT).await.unwrap();
        let grant = slot.admit(1, false, PATIENT).await.unwrap();
        slot.feedback(Outcome::Success, &grant);
        starts.push(grant.admitted_at);
    }
    starts
}

async fn status(handle: &AdmissionHandle) -> KeyStatus {
    let mut keys = handle.status().await.unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys.remove(0)
}

async fn live_actors(handle: &AdmissionHandle) -> (usize, u64) {
    let f = handle.footprint().await.unwrap().unwrap();
    (f.live_actors, f.started_actors)
}

fn stored(store: &dyn QuotaStore) -> serde_json::Value {
    let bytes = store.load(&key().to_string()).unwrap().expect("a record");
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn a_key_used_again_after_its_actor_retired_behaves_as_if_it_had_never_left() {
    paused_system().block_on(async {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::starting_at(START));
        let retiring_store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let retiring = runtime(retiring_store.clone(), RETIRES_AFTER, clock.clone());
        let staying = runtime(Arc::new(MemoryStore::new()), NEVER_RETIRES, clock.clone());
        tokio::join!(throttled_retry(&retiring), throttled_retry(&staying));

        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            live_actors(&retiring).await,
            (0, 1),
            "retired after 5 s idle"
        );
        assert_eq!(live_actors(&staying).await, (1, 1));
        let record = stored(retiring_store.as_ref());
        assert!(record["lease"].is_null(), "a graceful record: {record}");
        let kept = status(&staying).await;
        assert_eq!(kept.state.penalty_steps, 1);
        assert_eq!(kept.state.retry_units, 19);
        assert!(kept.state.paused_until.is_some());
        assert_eq!(
            status(&retiring).await,
            kept,
            "the stored state is the live one"
        );

        // A successor after a crash (the retired runtime is never shut down) restores the
        // graceful record exactly too: a copy of the store, as the crash left it.
        let left = MemoryStore::new();
        for (key, bytes) in retiring_store.entries().unwrap() {
            left.save(&key, &bytes).unwrap();
        }
        let successor = runtime(Arc::new(left), RETIRES_AFTER, clock.clone());
        let slot = successor.reserve(&key(), policy(), PATIENT).await.unwrap();
        let mut restored = status(&successor).await;
        assert_eq!(restored.state.reservations, 1);
        restored.state.reservations = 0;
        assert_eq!(restored.state, kept.state, "the successor charged no lease");
        drop(slot);

        // Used again, during the pause and after it: the same starts, the same state.
        let (again, never_left) =
            tokio::join!(four_calls(retiring.clone()), four_calls(staying.clone()));
        assert_eq!(again, never_left);
        assert!(
            again[0] >= START + Duration::from_secs(20),
            "the pause held: {again:?}"
        );
        assert_eq!(
            live_actors(&retiring).await,
            (1, 2),
            "a new actor, restored"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(status(&retiring).await, status(&staying).await);
        for handle in [retiring, staying, successor] {
            handle.shutdown().await.unwrap();
        }
    });
}

/// A store whose flush holds (on the persister's thread) once it has been handed a
/// graceful record, until released: a graceful record in flight, for as long as a test
/// needs.
#[derive(Default)]
struct HoldsGracefulRecords {
    inner: MemoryStore,
    gate: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    graceful_written: bool,
    holding: bool,
    released: bool,
}

impl HoldsGracefulRecords {
    /// Whether a flush is held, waiting at most `within` of real time for one.
    fn held_within(&self, within: Duration) -> bool {
        let gate = self.gate.lock().unwrap();
        let (gate, _) = self
            .changed
            .wait_timeout_while(gate, within, |g| !g.holding)
            .unwrap();
        gate.holding
    }

    fn release(&self) {
        self.gate.lock().unwrap().released = true;
        self.changed.notify_all();
    }
}

impl QuotaStore for HoldsGracefulRecords {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.load(key)
    }
    fn save(&self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.save_batch(&[(key.to_owned(), value.to_vec())])
    }
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        let graceful = entries.iter().any(|(_, bytes)| {
            serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|r| r["lease"].is_null())
        });
        if graceful {
            self.gate.lock().unwrap().graceful_written = true;
        }
        self.inner.save_batch(entries)
    }
    fn remove(&self, key: &str) -> Result<(), StorageError> {
        self.inner.remove(key)
    }
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.inner.entries()
    }
    fn flush(&self) -> Result<(), StorageError> {
        let mut gate = self.gate.lock().unwrap();
        if gate.graceful_written && !gate.released {
            gate.holding = true;
            self.changed.notify_all();
            gate = self.changed.wait_while(gate, |g| !g.released).unwrap();
            gate.holding = false;
        }
        drop(gate);
        self.inner.flush()
    }
    fn describe(&self) -> String {
        "a store that holds graceful records in flight".into()
    }
    fn writes_block(&self) -> bool {
        true
    }
}

#[test]
fn a_key_used_while_its_graceful_record_is_in_flight_keeps_its_actor_and_waits_for_a_new_lease() {
    paused_system().block_on(async {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::starting_at(START));
        let store = Arc::new(HoldsGracefulRecords::default());
        let handle = runtime(store.clone(), RETIRES_AFTER, clock);
        let slot = handle.reserve(&key(), policy(), PATIENT).await.unwrap();
        slot.admit(1, false, PATIENT).await.unwrap();
        drop(slot);

        // Idle: the actor retires, and its graceful record stays in flight. The writer is a
        // real thread, so wait for it in real time between steps of paused time.
        let mut held = false;
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if store.held_within(Duration::from_millis(5)) {
                held = true;
                break;
            }
        }
        assert!(held, "the actor never retired");
        assert!(
            stored(store.as_ref())["lease"].is_null(),
            "the graceful record"
        );

        // Used meanwhile: the slot is granted (no lease needed), the admission waits for a
        // leased record that can only follow the graceful one.
        let call = {
            let handle = handle.clone();
            actix::spawn(async move {
                let slot = handle.reserve(&key(), policy(), PATIENT).await.unwrap();
                slot.admit(1, false, PATIENT).await.unwrap()
            })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            !call.is_finished(),
            "granted under the leases the graceful record ended"
        );
        store.release();
        call.await.unwrap();
        assert_eq!(
            live_actors(&handle).await,
            (1, 1),
            "the same actor served on: retiring was cancelled"
        );
        assert!(
            !stored(store.as_ref())["lease"].is_null(),
            "the grant's lease is stored after the graceful record"
        );
        handle.shutdown().await.unwrap();
    });
}
