//! Actor-level simulations of seed 000's fixtures, in paused tokio time inside an actix
//! system: the quota actors' own timers drive the schedule.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::paused_system;
use tollgate_actors::{
    start_in_current_system, AdmissionError, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::key::QuotaKey;
use tollgate_quota::{Clock, Outcome, Owner, Policy, Timestamp};
use tollgate_storage::MemoryStore;

const START: Timestamp = Timestamp::from_millis(1_000_000);

fn config() -> RuntimeConfig {
    RuntimeConfig {
        store: Arc::new(MemoryStore::new()),
        owner: Owner {
            pid: std::process::id(),
            generation: 1,
        },
        pid_alive: Arc::new(|_| true),
        evict_after: Duration::from_secs(300),
        schedules: tollgate_actors::Schedules::none(),
        fleet: None,
        breakers: None,
        fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
    }
}

fn log_streams() -> QuotaKey {
    "aws/123456789012/us-east-1/logs:DescribeLogStreams"
        .parse()
        .unwrap()
}

/// 8 requests at 4/s, burst 2, retry allowance 2, instant responses: the last starts at
/// exactly 1.5 s of simulated time.
#[test]
fn fast_responses_complete_at_one_and_a_half_seconds() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(), clock.clone());
        let policy = Policy::new(4.0, 2.0, 10, 2).unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let handle = handle.clone();
                actix::spawn(async move {
                    let slot = handle
                        .reserve(&log_streams(), policy, WaitOptions::default())
                        .await?;
                    let grant = slot.admit(1, false, WaitOptions::default()).await?;
                    slot.feedback(Outcome::Success, &grant);
                    Ok::<_, AdmissionError>(grant.admitted_at)
                })
            })
            .collect();
        let mut starts = Vec::new();
        for t in tasks {
            starts.push(
                t.await
                    .unwrap()
                    .unwrap()
                    .saturating_since(START)
                    .as_millis(),
            );
        }
        starts.sort_unstable();
        assert_eq!(starts, [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]);
        let done = clock.now().saturating_since(START);
        assert!(
            done >= Duration::from_millis(1_500) && done <= Duration::from_millis(1_505),
            "finished at {done:?}"
        );
        handle.shutdown().await.unwrap();
    });
}

/// 1/s, burst 1, concurrency 1: the first request holds its slot; cancelling the scan
/// stops the 7 queued requests before they start.
#[test]
fn cancellation_stops_queued_requests_before_they_start() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(config(), clock.clone());
        let policy = Policy::new(1.0, 1.0, 1, 20).unwrap();
        const SCAN: u64 = 42;
        let wait = WaitOptions {
            scope: Some(SCAN),
            ..WaitOptions::default()
        };
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (abort_tx, abort_rx) = tokio::sync::watch::channel(false);
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let handle = handle.clone();
                let started = started.clone();
                let mut abort = abort_rx.clone();
                actix::spawn(async move {
                    let slot = handle.reserve(&log_streams(), policy, wait).await?;
                    let _grant = slot.admit(1, false, wait).await?;
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    // "hold": the transport never answers until the scan is aborted
                    let _ = abort.wait_for(|a| *a).await;
                    Err::<(), _>(AdmissionError::Cancelled {
                        key: slot.canonical_key().clone(),
                    })
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
        let removed = handle.cancel_scope(SCAN).await.unwrap();
        assert_eq!(removed, 7);
        abort_tx.send(true).unwrap();
        let mut cancelled = 0;
        for t in tasks {
            if let Err(AdmissionError::Cancelled { .. }) = t.await.unwrap() {
                cancelled += 1;
            }
        }
        assert_eq!(
            cancelled, 8,
            "7 cancelled in the queue and the held one aborted"
        );
        // Nothing queued ever started, even long after.
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
        let status = handle.status().await.unwrap();
        assert_eq!(
            status[0].state.reservations, 0,
            "the aborted request released its slot"
        );
        handle.shutdown().await.unwrap();
    });
}
