//! A coordinator killed between new keys' first grants and their batched first records,
//! in paused time. Runtime A lets keys without a record grant twice before their first
//! record is stored (`fresh_keys`), over a store whose writes never land: its writer
//! thread holds every batch until A is dead, then drops it. A grants twice on each of
//! three new keys where the key's bucket and window let it at once (a grant that waited
//! for its record would never come; the 1/s key's second waits for a token past A's death)
//! and dies with their first records handed to the writer but not written. Runtime B
//! starts as a coordinator does after an unclean shutdown (`FreshKeys::after_open`), finds
//! no record of the keys, and must neither forget A's grants (each key's window holds
//! them) nor over-admit (the bounds of DESIGN §3 hold over A's and B's grants together).
//!
//! The same with real processes and the sled store: a child coordinator
//! (`tollgate-actors-test-child fresh-keys-coordinator`) grants on new keys and is
//! SIGKILLed at once; `tollgate status` without a coordinator (`read_offline`) then reads
//! the directory and marks it cleanly shut down, and the next coordinator must still
//! charge the keys the child left without a record.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    connect, read_offline, start_in_current_system, AdmissionError, CoordinatorSpec, FreshKeys,
    OfflineStatus, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::{Clock, Owner, Policy, PolicyTable, QuotaKey, Timestamp};
use tollgate_storage::{AdmissionDir, MemoryStore, PreviousShutdown, QuotaStore, StorageError};
use tollgate_testkit::runtime;

use super::takeover::check_bounds;

const START: Timestamp = Timestamp::from_millis(9_000_000);
/// A dies this long after its grants: past the periodic save that batched the records.
const A_DIES_AFTER: Duration = Duration::from_millis(250);
/// Detecting the death, electing and opening the state (simulated).
const TAKEOVER: Duration = Duration::from_millis(40);

/// (key, rate, burst): a busy key, a slow one, and one of a single start per second.
const KEYS: [(&str, f64, f64); 3] = [
    (
        "aws/123456789012/us-east-1/ec2:DescribeInstances",
        20.0,
        5.0,
    ),
    ("aws/123456789012/eu-west-1/iam:ListRoles", 4.0, 2.0),
    ("aws/123456789012/ap-south-1/sqs:ListQueues", 1.0, 1.0),
];

fn keys() -> impl Iterator<Item = (QuotaKey, Policy)> {
    KEYS.iter().map(|(key, rate, burst)| {
        let policy = Policy::new(*rate, *burst, 10, 20).unwrap();
        (key.parse().unwrap(), policy)
    })
}

/// A store whose writes block (so the persister batches them on its writer thread) and
/// never land: each batch is held until [`HeldWrites::die`], then dropped, as a SIGKILL
/// drops what the dead process had not written. Reads go to `disk`.
struct HeldWrites {
    disk: Arc<MemoryStore>,
    /// (records handed to the store, dead)
    held: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl HeldWrites {
    fn hold(&self, records: usize) -> Result<(), StorageError> {
        let mut held = self.held.lock().unwrap();
        held.0 += records;
        self.changed.notify_all();
        let _dead = self.changed.wait_while(held, |h| !h.1).unwrap();
        Ok(())
    }

    /// Wait (in real time: the writer is a thread) until `n` records were handed over.
    fn wait_for(&self, n: usize) {
        let held = self.held.lock().unwrap();
        let (held, timeout) = self
            .changed
            .wait_timeout_while(held, Duration::from_secs(20), |h| h.0 < n)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "{} records reached the writer",
            held.0
        );
    }

    fn die(&self) {
        self.held.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

impl QuotaStore for HeldWrites {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.disk.load(key)
    }
    fn save(&self, _: &str, _: &[u8]) -> Result<(), StorageError> {
        self.hold(1)
    }
    fn save_batch(&self, entries: &[(String, Vec<u8>)]) -> Result<(), StorageError> {
        self.hold(entries.len())
    }
    fn remove(&self, _: &str) -> Result<(), StorageError> {
        self.hold(0)
    }
    fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.disk.entries()
    }
    fn flush(&self) -> Result<(), StorageError> {
        Ok(())
    }
    fn describe(&self) -> String {
        "held writes (test)".into()
    }
}

fn config(store: Arc<dyn QuotaStore>, pid: u32, fresh_keys: FreshKeys) -> RuntimeConfig {
    RuntimeConfig {
        store,
        fresh_keys,
        ..RuntimeConfig::simulated(Owner { pid, generation: 1 })
    }
}

/// A: two admissions on each key at `START` (on the 1/s key, burst 1, the second waits
/// for a token and is given up after 10 ms), a third on the first key that waits for its
/// record (in vain: the writer holds it), then death after the periodic save handed the
/// other keys' first records to the persister too. Each key's grants.
fn a_grants_then_dies(held: Arc<HeldWrites>) -> Vec<Vec<Timestamp>> {
    let fresh = FreshKeys::after_open(PreviousShutdown::Fresh, None, START);
    paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(held.clone(), 1, fresh), clock.clone());
        let mut grants = Vec::new();
        let mut slots = Vec::new();
        let brief = WaitOptions {
            timeout: Duration::from_millis(10),
            scope: None,
        };
        for (key, policy) in keys() {
            let slot = handle.reserve(&key, policy, WaitOptions::default()).await;
            let slot = slot.unwrap();
            let mut of_key = Vec::new();
            for _ in 0..2 {
                if let Ok(grant) = slot.admit(1, false, brief).await {
                    of_key.push(grant.admitted_at);
                }
            }
            grants.push(of_key);
            slots.push(slot);
        }
        let short = WaitOptions {
            timeout: Duration::from_millis(200),
            scope: None,
        };
        let third = slots[0].admit(1, false, short).await;
        assert!(
            matches!(third, Err(AdmissionError::DeadlineExceeded { .. })),
            "only the first lease is provisional: {third:?}"
        );
        let lived = clock.now().saturating_since(START);
        tokio::time::sleep(A_DIES_AFTER.saturating_sub(lived)).await;
        held.wait_for(1);
        // SIGKILL: no shutdown, no graceful record, and nothing the writer held lands.
        std::mem::forget(slots);
        std::mem::forget(handle);
        grants
    })
}

/// B: the window starts each key's status shows once B loaded them all at `start`, and
/// every grant of B saturating the keys together for 3 s.
fn b_takes_over(disk: Arc<MemoryStore>, start: Timestamp) -> Vec<(u64, Vec<Timestamp>)> {
    let fresh = FreshKeys::after_open(PreviousShutdown::Unclean, None, start);
    paused_system().block_on(async move {
        let clock = Arc::new(TokioClock::starting_at(start));
        let handle = start_in_current_system(config(disk, 2, fresh), clock.clone());
        let mut slots = Vec::new();
        for (key, policy) in keys() {
            let slot = handle.reserve(&key, policy, WaitOptions::default()).await;
            slots.push(slot.unwrap());
        }
        let status = handle.status().await.unwrap();
        let starts = keys().map(|(key, _)| {
            let of_key = status.iter().find(|s| s.key == key.to_string());
            of_key.map(|s| s.state.window_starts).unwrap()
        });
        let until = start + Duration::from_secs(3);
        let saturate = slots.iter().map(|slot| {
            let clock = clock.clone();
            async move {
                let mut grants = Vec::new();
                while clock.now() < until {
                    let wait = WaitOptions {
                        timeout: until - clock.now(),
                        scope: None,
                    };
                    match slot.admit(1, false, wait).await {
                        Ok(g) => grants.push(g.admitted_at),
                        Err(AdmissionError::DeadlineExceeded { .. }) => break,
                        Err(e) => panic!("{e}"),
                    }
                }
                grants
            }
        });
        let grants = futures_util::future::join_all(saturate).await;
        starts.zip(grants).collect()
    })
}

#[test]
fn a_coordinator_killed_before_new_keys_first_records_land_is_charged_their_grants() {
    let disk = Arc::new(MemoryStore::new());
    let held = Arc::new(HeldWrites {
        disk: disk.clone(),
        held: Mutex::new((0, false)),
        changed: Condvar::new(),
    });
    let a_grants = a_grants_then_dies(held.clone());
    held.die();
    assert_eq!(
        a_grants,
        vec![vec![START; 2], vec![START; 2], vec![START]],
        "the first grants went at once, as the bucket allowed"
    );
    assert!(disk.entries().unwrap().is_empty(), "no record landed");

    // B's keys restore one after the other; each saturates from its own first use.
    let b_start = START + A_DIES_AFTER + TAKEOVER;
    let b = b_takes_over(disk, b_start);
    for (((key, policy), a_grants), (starts, b_grants)) in keys().zip(a_grants).zip(b) {
        assert_eq!(starts, a_grants.len() as u64, "{key}: B forgot A's grants");
        assert!(!b_grants.is_empty(), "{key}: B resumed");
        let mut all = a_grants;
        all.extend(b_grants);
        check_bounds(policy, &all, 1);
    }
}

#[test]
fn after_a_coordinator_sigkill_and_an_offline_status_new_keys_are_still_charged() {
    // One start per 10 s window: the charge is visible for the whole test, and a second
    // start within it is an over-admission.
    let policy = Policy::new(0.1, 1.0, 10, 20).unwrap();
    let keys: Vec<QuotaKey> = KEYS.iter().map(|(k, _, _)| k.parse().unwrap()).collect();
    let more: Vec<String> = keys[1..].iter().map(|k| k.to_string()).collect();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("adm");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate-actors-test-child"))
        .arg("fresh-keys-coordinator")
        .arg(&path)
        .arg(keys[0].to_string())
        .arg(serde_json::to_string(&policy).unwrap())
        .env("TOLLGATE_TEST_CHILD_MORE_KEYS", more.join(","))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line == "spent" => break,
            Some(Ok(_)) => {}
            other => panic!("the child ended before granting: {other:?}"),
        }
    }
    // SIGKILL at once: the first records go with the periodic save, 100 ms after.
    child.kill().unwrap();
    child.wait().unwrap();

    let dir = AdmissionDir::at(&path).unwrap();
    let now = TokioClock::system().now();
    let OfflineStatus::Stored(stored) = read_offline(&dir, &PolicyTable::defaults(), now).unwrap()
    else {
        panic!("nobody coordinates the directory");
    };
    println!("{} of {} keys have a record", stored.len(), keys.len());

    let admission = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(admission.is_coordinator(), "the dead child's lock is free");
    let rt = runtime();
    rt.block_on(async {
        let handle = admission.handle();
        let short = WaitOptions {
            timeout: Duration::from_millis(300),
            scope: None,
        };
        for key in &keys {
            let slot = handle.reserve(key, policy, WaitOptions::default()).await;
            let slot = slot.unwrap();
            let status = handle.status().await.unwrap();
            let of_key = status.iter().find(|s| s.key == key.to_string()).unwrap();
            assert!(
                of_key.state.window_starts >= 1,
                "{key}: the successor forgot the child's grant"
            );
            let second = slot.admit(1, false, short).await;
            assert!(
                matches!(second, Err(AdmissionError::DeadlineExceeded { .. })),
                "{key}: a second start in the child's window: {second:?}"
            );
        }
    });
    rt.block_on(admission.shutdown()).unwrap();
}
