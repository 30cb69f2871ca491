//! What the coordinator's memory costs per key, as the OS sees it (issue 35, item 4): the
//! resident set (`VmRSS` in `/proc/self/status`) before and after.
//!
//! `actors [KEYS]`: KEYS keys (accounts × 17 regions × 5 operations, the shape of `bench
//! org`) each used once (reserve, admit, feedback, release) on a paused clock over a
//! store that keeps nothing, so the figure is the actors' alone: the quota actor, its
//! actix context and mailbox, its registry entry, its cached address and a share of a
//! breaker scope. Then the keys go idle and retire, and as many other keys are used:
//! what retiring gives back to the next keys.
//!
//! `scan [KEYS] [PER_SECOND]`: a scan's shape on a paused clock, with the default
//! `evict_after`: PER_SECOND new keys a simulated second (900: `bench org` at 1,000
//! accounts), each used for three calls 100 ms apart; prints the most actors live at
//! once and the peak resident set (`VmHWM`).
//!
//! `scan [KEYS] [PER_SECOND]`: a scan's shape on a paused clock, with the default
//! `evict_after`: PER_SECOND new keys a simulated second (900: `bench org` at 1,000
//! accounts), each used for three calls 100 ms apart; prints the most actors live at
//! once and the peak resident set (`VmHWM`).
//!
//! `sled [KEYS]`: KEYS typical records (a key's graceful record after one grant) written
//! three times each to a sled store in flushed batches of 1,000, then all read back: what
//! sled's page cache and log buffers add (its `cache_capacity` is 16 MiB).
//!
//! Run each in its own process (the resident set is the process's): `cargo run -p
//! tollgate-actors --example actor_memory -- actors 20000`. A measurement to print, not a
//! test: nothing here passes or fails.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::registry::DEFAULT_EVICT_AFTER;
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionHandle, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::{Handover, Outcome, Owner, Policy, QuotaKey, QuotaState, Timestamp};
use tollgate_storage::forgetful::ForgetfulStore;
use tollgate_storage::{AdmissionDir, CoordinatorLock, QuotaStore, SledStore};

const REGIONS: [&str; 17] = [
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "ap-south-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-southeast-1",
    "ap-southeast-2",
    "sa-east-1",
];
const OPERATIONS: [&str; 5] = [
    "kms:ListKeys",
    "lambda:ListFunctions",
    "dynamodb:ListTables",
    "s3:ListBuckets",
    "ec2:DescribeInstances",
];

/// `n` keys of accounts from `first_account` on.
fn keys(first_account: u64, n: usize) -> Vec<QuotaKey> {
    (first_account..)
        .flat_map(|account| {
            REGIONS.iter().flat_map(move |region| {
                OPERATIONS.iter().map(move |op| {
                    format!("aws/{:012}/{region}/{op}", 100_000_000_000 + account)
                        .parse()
                        .expect("a quota key")
                })
            })
        })
        .take(n)
        .collect()
}

/// A figure of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: i64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("the field in /proc/self/status");
    kb * 1024
}

/// The process's resident set, in bytes.
fn rss() -> i64 {
    status_bytes("VmRSS:")
}

fn policy() -> Policy {
    Policy::new(10.0, 10.0, 10, 20).expect("a valid policy")
}

/// One call on each of `keys`, then `settle` for the periodic saves.
async fn use_once(handle: &AdmissionHandle, keys: &[QuotaKey], settle: Duration) {
    for key in keys {
        let slot = handle
            .reserve(key, policy(), WaitOptions::default())
            .await
            .expect("reserved");
        let grant = slot
            .admit(1, false, WaitOptions::default())
            .await
            .expect("admitted");
        slot.feedback(Outcome::Success, &grant);
    }
    tokio::time::sleep(settle).await;
}

/// Long enough for the periodic saves after a use.
const SETTLE: Duration = Duration::from_secs(1);

fn per_key(bytes: i64, n: usize) -> i64 {
    bytes / n.max(1) as i64
}

/// Actors over a store that keeps nothing, retiring after `evict_after` idle.
fn start(evict_after: Duration) -> AdmissionHandle {
    let config = RuntimeConfig {
        store: Arc::new(ForgetfulStore),
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
    let clock = Arc::new(TokioClock::starting_at(Timestamp::from_millis(1_000_000)));
    start_in_current_system(config, clock)
}

fn measure_scan(n: usize, per_second: usize) {
    paused_system().block_on(async {
        let handle = start(DEFAULT_EVICT_AFTER);
        let all = keys(0, n);
        let tick = Duration::from_millis(10);
        let per_tick = (per_second / 100).max(1);
        let mut calls = Vec::new();
        for batch in all.chunks(per_tick) {
            for key in batch {
                let (handle, key) = (handle.clone(), key.clone());
                calls.push(actix::spawn(async move {
                    for _ in 0..3 {
                        use_once(&handle, std::slice::from_ref(&key), Duration::ZERO).await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }));
            }
            tokio::time::sleep(tick).await;
            calls.retain(|c| !c.is_finished());
        }
        for call in calls {
            call.await.expect("a call");
        }
        let end = handle.footprint().await.expect("local").expect("footprint");
        println!(
            "{n} keys at {per_second}/s, evict_after {DEFAULT_EVICT_AFTER:?}: {end:?}; peak VmRSS (VmHWM) {} KB",
            status_bytes("VmHWM:") / 1024
        );
        handle.shutdown().await.expect("shut down");
    });
}

fn measure_actors(n: usize) {
    paused_system().block_on(async {
        let handle = start(Duration::from_secs(300));
        use_once(&handle, &keys(999_000, 1), SETTLE).await;
        let base = rss();
        let first = keys(0, n);
        use_once(&handle, &first, SETTLE).await;
        let busy = rss();
        let live = handle.footprint().await.expect("local").expect("footprint");
        println!(
            "{n} keys used once: {live:?}; VmRSS {} KB -> {} KB: {} bytes per live key",
            base / 1024,
            busy / 1024,
            per_key(busy - base, live.live_actors)
        );
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        let idle = handle.footprint().await.expect("local").expect("footprint");
        println!(
            "an hour idle: {idle:?}; VmRSS {} KB (freed memory stays with the allocator)",
            rss() / 1024
        );
        let second = keys(n as u64, n);
        use_once(&handle, &second, SETTLE).await;
        let again = handle.footprint().await.expect("local").expect("footprint");
        println!(
            "{n} other keys: {again:?}; VmRSS {} KB: {} bytes per key above the first peak",
            rss() / 1024,
            per_key(rss() - busy, n)
        );
        handle.shutdown().await.expect("shut down");
    });
}

/// A key's graceful record after one grant, as the actors store it.
fn typical_record() -> Vec<u8> {
    let now = Timestamp::from_millis(1_000_000);
    let mut state = QuotaState::new(policy(), now);
    let owner = Owner {
        pid: 1,
        generation: 1,
    };
    let reservation = state
        .reserve(owner, now + Duration::from_secs(60), now)
        .expect("a slot");
    let request = tollgate_quota::AdmitRequest {
        reservation,
        cost: 1,
        retry: false,
    };
    let _ = state.admit(&request, now);
    state.release(reservation, now);
    serde_json::to_vec(&state.to_record(Handover::Graceful, now)).expect("json")
}

fn measure_sled(n: usize) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = AdmissionDir::at(tmp.path().join("admission")).expect("an admission directory");
    let lock = CoordinatorLock::try_acquire(&dir)
        .expect("the lock")
        .expect("the lock is free");
    let record = typical_record();
    let names: Vec<String> = keys(0, n).iter().map(|k| k.to_string()).collect();
    let base = rss();
    let store = SledStore::open(&dir, &lock).expect("sled opens").store;
    let opened = rss();
    // Three records a key, as a key used once writes them: its first lease, the periodic
    // save, its graceful record on retiring.
    for _ in 0..3 {
        for chunk in names.chunks(1_000) {
            let batch: Vec<(String, Vec<u8>)> =
                chunk.iter().map(|k| (k.clone(), record.clone())).collect();
            store.save_batch(&batch).expect("saved");
            store.flush().expect("flushed");
        }
    }
    let written = rss();
    for name in &names {
        store.load(name).expect("read").expect("a record");
    }
    let read = rss();
    println!(
        "sled: open {} KB; {n} records of {} bytes written {} KB ({} bytes per record); all read back {} KB ({} bytes per record above the open store)",
        (opened - base) / 1024,
        record.len(),
        (written - opened) / 1024,
        per_key(written - opened, n),
        (read - opened) / 1024,
        per_key(read - opened, n),
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "actors".into());
    let n: usize = args
        .next()
        .map(|v| v.parse().expect("KEYS is a number"))
        .unwrap_or(20_000);
    match mode.as_str() {
        "actors" => measure_actors(n),
        "sled" => measure_sled(n),
        "scan" => {
            let per_second = args
                .next()
                .map(|v| v.parse().expect("PER_SECOND is a number"))
                .unwrap_or(900);
            measure_scan(n, per_second)
        }
        other => eprintln!(
            "usage: actor_memory actors|sled [KEYS] | scan [KEYS] [PER_SECOND] (not {other:?})"
        ),
    }
}
