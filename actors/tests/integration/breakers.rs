//! Circuit breakers and the key-wide Retry-After pause through the actors, in paused
//! time: several "processes" are handles on one coordinator's actors (`for_owner`), as the
//! socket server serves each client process.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionError, AdmissionHandle, LastBreakerReport,
    LastFeedback, ReservationGuard, RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::{BreakerState, Clock, Outcome, Owner, Passage, Policy, QuotaKey, Timestamp};
use tollgate_storage::MemoryStore;

const START: Timestamp = Timestamp::from_millis(1_000_000);
const LONG: Duration = Duration::from_secs(3_600);
const SCOPE: &str = "aws/123456789012/eu-west-1/ec2";

fn config(pid: u32) -> RuntimeConfig {
    RuntimeConfig {
        store: Arc::new(MemoryStore::new()),
        owner: Owner { pid, generation: 1 },
        pid_alive: Arc::new(|_| true),
        evict_after: Duration::from_secs(3_600),
        schedules: tollgate_actors::Schedules::none(),
        fleet: None,
        breakers: None,
        fresh_keys: tollgate_actors::FreshKeys::write_ahead(),
    }
}

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/ec2:describe".parse().unwrap()
}

fn other_group() -> QuotaKey {
    "aws/123456789012/eu-west-1/ec2:mutating".parse().unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Five transient answers on the scope, as five calls that passed the breaker.
async fn fail_five(handle: &AdmissionHandle) {
    for _ in 0..5 {
        assert_eq!(
            handle.breaker_pass(&key(), LONG).await.unwrap(),
            Passage::Go
        );
        handle.breaker_report(&key(), Some(Outcome::Transient), None);
    }
    tokio::task::yield_now().await;
}

fn start() -> (AdmissionHandle, Arc<TokioClock>) {
    let clock = Arc::new(TokioClock::starting_at(START));
    (start_in_current_system(config(1), clock.clone()), clock)
}

#[test]
fn five_transient_answers_open_the_scope_and_a_short_deadline_fails_at_once_naming_it() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        fail_five(&handle).await;
        let before = clock.now();
        // Another operation group of the same service meets the same breaker.
        let err = handle
            .breaker_pass(&other_group(), secs(3))
            .await
            .unwrap_err();
        assert_eq!(clock.now(), before, "it failed at once, without waiting");
        match err {
            AdmissionError::BreakerOpen { scope, reopens_at } => {
                assert_eq!(scope, SCOPE);
                assert_eq!(reopens_at, before + tollgate_quota::BASE_OPEN);
            }
            other => panic!("expected breaker_open, got {other:?}"),
        }
        let status = handle.coordination().await.unwrap();
        assert_eq!(status.breakers.len(), 1);
        assert_eq!(status.breakers[0].scope, SCOPE);
        assert!(matches!(
            status.breakers[0].state,
            BreakerState::Open { .. }
        ));
        assert_eq!(
            status.breakers[0].reopens_at,
            Some(before + tollgate_quota::BASE_OPEN)
        );
    });
}

#[test]
fn fatal_answers_never_open_the_scope() {
    paused_system().block_on(async {
        let (handle, _) = start();
        for _ in 0..50 {
            assert_eq!(
                handle.breaker_pass(&key(), LONG).await.unwrap(),
                Passage::Go
            );
            handle.breaker_report(&key(), Some(Outcome::Fatal), None);
        }
        tokio::task::yield_now().await;
        assert_eq!(
            handle.breaker_pass(&key(), Duration::ZERO).await.unwrap(),
            Passage::Go,
            "and a closed breaker lets even a caller with no time to wait through"
        );
    });
}

#[test]
fn callers_whose_deadline_allows_wait_for_the_one_probe_and_go_when_it_succeeds() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        fail_five(&handle).await;
        let opened = clock.now();
        let callers: Vec<_> = (0..6u32)
            .map(|i| {
                let h = handle
                    .for_owner(Owner {
                        pid: 100 + i,
                        generation: 1,
                    })
                    .unwrap();
                actix::spawn(async move {
                    let pass = h.breaker_pass(&key(), LONG).await.unwrap();
                    if let Passage::Probe(lease) = pass {
                        // The probe's call takes 2 s and succeeds.
                        tokio::time::sleep(secs(2)).await;
                        h.breaker_report(&key(), Some(Outcome::Success), Some(lease.id));
                    }
                    (pass, h.now())
                })
            })
            .collect();
        let mut probes = 0;
        for c in callers {
            let (pass, at) = c.await.unwrap();
            match pass {
                Passage::Probe(_) => {
                    probes += 1;
                    assert_eq!(at, opened + secs(7));
                }
                Passage::Go => assert_eq!(at, opened + secs(7), "released by the probe's answer"),
                Passage::Wait { .. } => panic!("a pass never answers wait"),
            }
        }
        assert_eq!(probes, 1, "exactly one probe for the scope");
    });
}

#[test]
fn each_failed_probe_reopens_for_a_tenth_of_the_failures_age_up_to_six_hundred_seconds() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        fail_five(&handle).await;
        let mut openings = Vec::new();
        let mut opened = clock.now();
        for _ in 0..80 {
            let Passage::Probe(lease) = handle.breaker_pass(&key(), secs(700)).await.unwrap()
            else {
                panic!("the first caller after the opening probes");
            };
            openings.push((clock.now() - opened).as_millis() as u64);
            opened = clock.now();
            handle.breaker_report(&key(), Some(Outcome::Transient), Some(lease.id));
        }
        // the first opening 5 s, re-openings 10 s until the failure is 100 s old
        // (issue 24: MIN_REOPEN), then a tenth of its age, up to 600 s
        assert_eq!(openings[0], 5_000, "{openings:?}");
        assert_eq!(openings[1..11], [10_000; 10], "{openings:?}");
        assert_eq!(openings[11], 10_500, "{openings:?}");
        assert!(openings.windows(2).all(|w| w[0] <= w[1]), "{openings:?}");
        assert_eq!(*openings.last().unwrap(), 600_000, "{openings:?}");
    });
}

#[test]
fn a_retry_after_pause_holds_back_another_process_waiter_until_it_ends() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        let other = handle
            .for_owner(Owner {
                pid: 2,
                generation: 1,
            })
            .unwrap();
        let policy = Policy::new(100.0, 100.0, 10, 10).unwrap();
        let wait = WaitOptions {
            timeout: LONG,
            scope: None,
        };
        let mine = handle.reserve(&key(), policy, wait).await.unwrap();
        let theirs = other.reserve(&key(), policy, wait).await.unwrap();
        mine.admit(1, false, wait).await.unwrap();
        let paused_at = clock.now();
        // The server answered 503 with Retry-After: 30 (and a bogus 1-day hint is capped).
        mine.pause(secs(30));
        let grant = theirs.admit(1, false, wait).await.unwrap();
        assert_eq!(grant.admitted_at, paused_at + secs(30));
        mine.pause(secs(86_400));
        let t = clock.now();
        let grant = theirs.admit(1, false, wait).await.unwrap();
        assert_eq!(grant.admitted_at, t + secs(300));
    });
}

/// Release `guard` carrying what a call whose last attempt (admitted by `grant`) got a
/// transient answer reports: that outcome to the key and to its scope's breaker.
pub(crate) fn release_after_a_transient_answer(
    guard: ReservationGuard,
    grant: &tollgate_quota::Grant,
) -> tollgate_actors::Cleanup {
    guard.release_with(
        Some(LastFeedback {
            outcome: Outcome::Transient,
            admitted_at: grant.admitted_at,
            refund_retry: false,
        }),
        Some(LastBreakerReport {
            outcome: Some(Outcome::Transient),
            probe: None,
        }),
    )
}

fn one_slot() -> Policy {
    Policy::new(100.0, 10.0, 1, 10).unwrap()
}

fn wait(timeout: Duration) -> WaitOptions {
    WaitOptions {
        timeout,
        scope: None,
    }
}

#[test]
fn a_reservation_that_asks_an_open_breaker_gives_its_slot_back_and_names_the_scope() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        fail_five(&handle).await;
        let before = clock.now();
        let err = handle
            .reserve_and_pass(&key(), one_slot(), wait(secs(3)), None)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, AdmissionError::BreakerOpen { scope, .. } if scope == SCOPE),
            "{err:?}"
        );
        assert_eq!(
            clock.now(),
            before,
            "refused at once: the opening outlasts 3 s"
        );
        // The key's one slot went back before the refusal was answered.
        let again = handle
            .reserve(&key(), one_slot(), wait(secs(1)))
            .await
            .expect("the slot is free");
        assert_eq!(clock.now(), before, "at once");
        let status = handle.status().await.unwrap();
        assert_eq!(status[0].state.reservations, 1, "only the new reservation");
        drop(again);
    });
}

#[test]
fn a_reservation_that_asks_a_closed_breaker_holds_its_slot_and_goes() {
    paused_system().block_on(async {
        let (handle, _) = start();
        let (guard, passage, _) = handle
            .reserve_and_pass(&key(), one_slot(), wait(secs(3)), None)
            .await
            .unwrap();
        assert_eq!(passage, Passage::Go);
        let err = handle
            .reserve(&key(), one_slot(), wait(secs(1)))
            .await
            .unwrap_err();
        assert!(
            matches!(err, AdmissionError::DeadlineExceeded { .. }),
            "{err:?}"
        );
        drop(guard);
        tokio::task::yield_now().await;
        handle
            .reserve(&key(), one_slot(), wait(secs(1)))
            .await
            .expect("free again once the guard is dropped");
    });
}

#[test]
fn a_release_carrying_the_last_reports_tells_the_key_and_the_breaker_then_frees_the_slot() {
    paused_system().block_on(async {
        let (handle, _) = start();
        for _ in 0..5 {
            let (guard, passage, _) = handle
                .reserve_and_pass(&key(), one_slot(), wait(LONG), None)
                .await
                .expect("one slot, freed by each release before the next call");
            assert_eq!(passage, Passage::Go);
            let grant = guard.admit(1, false, wait(LONG)).await.unwrap();
            let _ = release_after_a_transient_answer(guard, &grant);
            tokio::task::yield_now().await;
        }
        let status = handle.status().await.unwrap();
        assert!(
            status[0].state.penalty_steps > 0,
            "the feedback deepened the penalty"
        );
        assert_eq!(status[0].state.reservations, 0, "every slot went back");
        let err = handle.breaker_pass(&key(), secs(3)).await.unwrap_err();
        assert!(
            matches!(err, AdmissionError::BreakerOpen { .. }),
            "five transient reports opened the breaker: {err:?}"
        );
    });
}

#[test]
fn a_release_without_reports_tells_nobody() {
    paused_system().block_on(async {
        let (handle, _) = start();
        for _ in 0..5 {
            let (guard, _, _) = handle
                .reserve_and_pass(&key(), one_slot(), wait(LONG), None)
                .await
                .unwrap();
            let _grant = guard.admit(1, false, wait(LONG)).await.unwrap();
            let _ = guard.release_with(None, None);
            tokio::task::yield_now().await;
        }
        let status = handle.status().await.unwrap();
        assert_eq!(status[0].state.penalty_steps, 0);
        assert_eq!(status[0].state.reservations, 0);
        assert_eq!(
            handle.breaker_pass(&key(), Duration::ZERO).await.unwrap(),
            Passage::Go
        );
    });
}

#[test]
fn a_reservation_that_tries_the_first_admission_is_granted_only_what_the_key_has_at_once() {
    paused_system().block_on(async {
        let (handle, clock) = start();
        let one_a_second = Policy::new(1.0, 1.0, 2, 10).unwrap();
        let (first, _, grant) = handle
            .reserve_and_pass(&key(), one_a_second, wait(LONG), Some(1))
            .await
            .unwrap();
        let grant = grant.expect("the bucket's one token, granted with the slot");
        assert_eq!(grant.admitted_at, clock.now());
        assert!(!grant.retry_spent);
        // No token left: the try neither waits nor fails the reservation.
        let before = clock.now();
        let (second, passage, none) = handle
            .reserve_and_pass(&key(), one_a_second, wait(LONG), Some(1))
            .await
            .unwrap();
        assert_eq!((passage, none), (Passage::Go, None));
        // The try waits no longer than its microsecond (paused time rounds it to 1 ms).
        assert!(
            clock.now() <= before + Duration::from_millis(1),
            "the try did not wait"
        );
        // The attempt asks at dispatch, and waits for the refill there.
        let later = second.admit(1, false, wait(LONG)).await.unwrap();
        assert_eq!(
            later.admitted_at,
            grant.admitted_at + secs(1),
            "one token a second"
        );
        drop((first, second));
    });
}
