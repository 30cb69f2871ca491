//! Memory bounded by the keys in use (issue 21, item 6), in paused time: an
//! organization's worth of keys (accounts × regions × operations) is used once, goes
//! idle, and every per-key and per-scope structure of the coordinator shrinks back,
//! measured twice: as counts ([`Footprint`]) and as heap bytes through a counting
//! allocator. The test prints what one key costs while it is live; docs/architecture.md
//! ("Memory per key") quotes it.
//!
//! One test in this binary, and a binary of its own (not a module of
//! tests/integration/): the allocator counts the whole process, so any other test running
//! beside it would blur the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionHandle, Footprint, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::breaker::FAILURE_THRESHOLD;
use tollgate_quota::{Outcome, Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::forgetful::ForgetfulStore;

/// Heap bytes allocated and not yet freed, by the whole process.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting: the only way to see what a structure really costs
/// (its maps' spare capacity, the actors' mailboxes and contexts) without guessing.
struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; the counter is only
// arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

const ACCOUNTS: u64 = 50;
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
const OPERATIONS: [&str; 3] = [
    "kms:ListKeys",
    "lambda:ListFunctions",
    "dynamodb:ListTables",
];

/// The keys of an organization: accounts `first..first + ACCOUNTS`, every region, every
/// operation.
fn keys(first: u64) -> Vec<QuotaKey> {
    let mut out = Vec::new();
    for account in first..first + ACCOUNTS {
        for region in REGIONS {
            for op in OPERATIONS {
                let text = format!("aws/{:012}/{region}/{op}", 100_000_000_000 + account);
                out.push(text.parse().unwrap());
            }
        }
    }
    out
}

/// Use every key once (one call each, and one service per account-region failing hard
/// enough to open its breaker); answer the footprint and heap bytes per key then.
async fn use_once(
    handle: &AdmissionHandle,
    keys: &[QuotaKey],
    baseline: isize,
) -> (Footprint, isize) {
    let policy = Policy::new(10.0, 10.0, 10, 20).unwrap();
    for key in keys {
        let slot = handle
            .reserve(key, policy, WaitOptions::default())
            .await
            .unwrap();
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        slot.feedback(Outcome::Success, &grant);
        drop(slot);
    }
    for key in keys.iter().step_by(OPERATIONS.len()) {
        for _ in 0..FAILURE_THRESHOLD {
            handle.breaker_report(key, Some(Outcome::Transient), None);
        }
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    let busy = handle.footprint().await.unwrap().unwrap();
    (busy, (live_bytes() - baseline) / keys.len() as isize)
}

/// Let everything go idle, then use one key: answer the footprint and the heap bytes
/// above `baseline`.
async fn go_idle(handle: &AdmissionHandle, baseline: isize) -> (Footprint, isize) {
    let idle = EVICT_AFTER * 2 + tollgate_actors::breaker_board::FORGET_IDLE;
    tokio::time::sleep(idle).await;
    let policy = Policy::new(10.0, 10.0, 10, 20).unwrap();
    let one: QuotaKey = "aws/999999999999/us-east-1/kms:ListKeys".parse().unwrap();
    drop(
        handle
            .reserve(&one, policy, WaitOptions::default())
            .await
            .unwrap(),
    );
    let after = handle.footprint().await.unwrap().unwrap();
    (after, live_bytes() - baseline)
}

const EVICT_AFTER: Duration = Duration::from_secs(300);

#[test]
fn an_organization_of_keys_used_once_shrinks_back_to_nothing_once_idle() {
    paused_system().block_on(async {
        let config = RuntimeConfig {
            store: Arc::new(ForgetfulStore),
            owner: Owner {
                pid: std::process::id(),
                generation: 1,
            },
            pid_alive: Arc::new(|_| true),
            evict_after: EVICT_AFTER,
            schedules: tollgate_actors::Schedules::none(),
            fleet: None,
            breakers: None,
            fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
        };
        let clock = Arc::new(TokioClock::starting_at(Timestamp::from_millis(1_000_000)));
        let handle = start_in_current_system(config, clock);
        let policy = Policy::new(10.0, 10.0, 10, 20).unwrap();
        // Warm up one key (first-use allocations of the actor system, the maps' first
        // buckets) so the baseline is the runtime, not its first message.
        let warm: QuotaKey = "aws/999999999999/us-east-1/kms:ListKeys".parse().unwrap();
        drop(
            handle
                .reserve(&warm, policy, WaitOptions::default())
                .await
                .unwrap(),
        );
        tokio::time::sleep(EVICT_AFTER * 3).await;
        let (first, second) = (keys(0), keys(ACCOUNTS));
        let baseline = live_bytes();
        // Live actors, cached addresses, breaker scopes (the peak and the count of actors
        // started only grow).
        let held = |f: Footprint| (f.live_actors, f.cached_addresses, f.breaker_scopes);
        let only_one_left = (1, 1, 0);

        let (busy, per_key) = use_once(&handle, &first, baseline).await;
        println!(
            "{} keys live: {busy:?}, {per_key} bytes of heap per key (actor, registry \
             entry, cached address, and a third of a breaker scope)",
            first.len()
        );
        assert_eq!(busy.live_actors, first.len(), "every key has its actor");
        // Issue 35: 5,081 bytes before the fleet block was boxed, the actors shared their
        // dependencies and emptied queues gave their room back; 2,062 after.
        assert!(
            per_key < 2_600,
            "a live key costs under 2,600 bytes of heap: {per_key}"
        );
        assert!(busy.peak_live_actors >= first.len());
        assert_eq!(busy.breaker_scopes, first.len() / OPERATIONS.len());
        assert!(busy.cached_addresses >= first.len());
        let (after, left) = go_idle(&handle, baseline).await;
        println!("idle: {after:?}, {left} bytes of heap above the baseline");
        assert_eq!(held(after), only_one_left, "only the key in use is left");
        assert!(
            left < (first.len() * 128) as isize,
            "what stays is the runtime's room for the peak, under 128 bytes per key: {left}"
        );

        // Another organization's keys: what the first left is reused, nothing adds up.
        let (busy, per_key) = use_once(&handle, &second, baseline).await;
        println!(
            "{} other keys live: {busy:?}, {per_key} bytes per key",
            second.len()
        );
        let (again, left_again) = go_idle(&handle, baseline).await;
        println!("idle again: {again:?}, {left_again} bytes of heap above the baseline");
        assert_eq!(held(again), only_one_left);
        assert!(
            left_again <= left + (second.len() * 16) as isize,
            "a second organization leaves no more than the first: {left_again} after {left}"
        );
        handle.shutdown().await.unwrap();
    });
}
