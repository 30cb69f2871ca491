//! Scheduled policies and calendar allowances in the quota actor, in paused time: a
//! boundary takes effect at the first admission after it, waiters are re-checked at the
//! valid-until stamp (a raised rate lets them start sooner, a lowered one never earlier
//! than it allows), and an allowance is spent, waited for or refused, and restored after a
//! crash without exceeding its period's amount.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionError, AdmissionHandle, RuntimeConfig,
    Schedules, TokioClock, WaitOptions,
};
use tollgate_quota::{Owner, Policy, PolicyTable, QuotaKey, Refusal, Timestamp, WallClock};
use tollgate_storage::{MemoryStore, QuotaStore};

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:ListKeys".parse().unwrap()
}

fn wall(text: &str) -> WallClock {
    WallClock::parse_rfc3339(text).unwrap()
}

/// A runtime over `store` whose simulated time 0 is `start_at`, with `overrides` in force.
fn start(store: Arc<dyn QuotaStore>, overrides: &str, start_at: &str) -> AdmissionHandle {
    let table = PolicyTable::with_overrides(overrides, "test overrides").unwrap();
    let config = RuntimeConfig {
        store,
        schedules: Schedules::new(Arc::new(table), wall(start_at)),
        ..RuntimeConfig::simulated(Owner {
            pid: 1,
            generation: 1,
        })
    };
    start_in_current_system(config, Arc::new(TokioClock::starting_at(Timestamp::ZERO)))
}

fn policy(handle_table: &str) -> Policy {
    PolicyTable::with_overrides(handle_table, "test overrides")
        .unwrap()
        .policy_for_key(&key())
}

/// Admit `n` attempts one after another under one slot; the instants they started (ms).
async fn starts(handle: &AdmissionHandle, policy: Policy, n: usize) -> Vec<u64> {
    let slot = handle
        .reserve(&key(), policy, WaitOptions::default())
        .await
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        out.push(grant.admitted_at.as_micros() / 1_000);
    }
    slot.release();
    out
}

#[test]
fn a_raised_rate_at_0900_berlin_lets_the_waiter_start_at_the_new_rate() {
    // Base: one start per 10 s. From 09:00 in Berlin (08:00Z in winter): 10 per second.
    let overrides = r#"{"kms:ListKeys": {"ratePerSecond": 0.1, "burst": 1,
        "schedule": [{"cron": "* 9-16 * * MON-FRI", "timezone": "Europe/Berlin",
                      "ratePerSecond": 10}]}}"#;
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let handle = start(store, overrides, "2026-01-05T07:59:58.030Z");
        // 0: the full bucket; the second waits for 10 s under the base, but is re-checked
        // at the boundary (1970 ms, 0.197 tokens earned) and needs 0.803 more at 10/s:
        // 2050.3 ms (timers tick in whole milliseconds). The boundary is off the 100 ms
        // grid of the periodic save on purpose: only the wake-up at the stamp finds it.
        let got = starts(&handle, policy(overrides), 3).await;
        assert_eq!(got, vec![0, 2_051, 2_151]);
        let status = handle.status().await.unwrap();
        let calendar = status[0]
            .calendar
            .expect("a scheduled key reports its calendar");
        assert_eq!(calendar.entry, Some(0));
        assert_eq!(calendar.valid_until, Some(wall("2026-01-05T16:00:00Z")));
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn a_lowered_rate_mid_wait_never_lets_the_waiter_start_earlier_than_it_allows() {
    // Base: 10 per second. From 17:00 in Berlin (16:00Z) off hours: one per 2 s.
    let overrides = r#"{"kms:ListKeys": {"ratePerSecond": 10, "burst": 1,
        "schedule": [{"cron": "* 17-23 * * *", "timezone": "Europe/Berlin",
                      "ratePerSecond": 0.5}]}}"#;
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let handle = start(store, overrides, "2026-01-05T15:59:59.950Z");
        // 0; the second would go at 100 ms under the base, but is re-checked at the
        // boundary (50 ms) under the new rate, whose rolling window allows one start per
        // 2 s counting the one at 0 (the bucket alone would allow 1050 ms).
        let got = starts(&handle, policy(overrides), 3).await;
        assert_eq!(got, vec![0, 2_000, 4_000]);
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn unscheduled_keys_keep_the_callers_policy() {
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let handle = start(store, "{}", "2026-01-05T00:00:00Z");
        let policy = Policy::new(10.0, 1.0, 10, 20).unwrap();
        assert_eq!(starts(&handle, policy, 3).await, vec![0, 100, 200]);
        let status = handle.status().await.unwrap();
        assert_eq!(status[0].calendar, None);
        handle.shutdown().await.unwrap();
    });
}

const DAILY_3: &str = r#"{"kms:ListKeys": {"ratePerSecond": 100, "burst": 10,
    "allowance": {"amount": 3, "resets": "0 0 * * *", "timezone": "America/New_York"}}}"#;

#[test]
fn an_exhausted_allowance_waits_for_the_reset_before_the_deadline_and_refuses_after_it() {
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        // 23:59:00 in New York; the reset is at 05:00Z, 60 s later.
        let handle = start(store, DAILY_3, "2026-01-06T04:59:00Z");
        let slot = handle
            .reserve(&key(), policy(DAILY_3), WaitOptions::default())
            .await
            .unwrap();
        for _ in 0..3 {
            slot.admit(1, false, WaitOptions::default()).await.unwrap();
        }
        let short = WaitOptions {
            timeout: Duration::from_secs(30),
            ..WaitOptions::default()
        };
        let err = slot.admit(1, false, short).await.unwrap_err();
        match err {
            AdmissionError::Refused {
                refusal: Refusal::AllowanceExhausted { resets_at },
                ..
            } => assert_eq!(resets_at, wall("2026-01-06T05:00:00Z")),
            other => panic!("expected allowance_exhausted, got {other:?}"),
        }
        assert_eq!(
            handle.now(),
            Timestamp::ZERO,
            "refused at once, not at the deadline"
        );
        // A deadline after the reset waits for it; the allowance returns in one lump.
        let mut at = Vec::new();
        for _ in 0..3 {
            let g = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            at.push(g.admitted_at.as_micros() / 1_000);
        }
        assert_eq!(at, vec![60_000, 60_000, 60_000]);
        let status = handle.status().await.unwrap();
        let allowance = status[0].calendar.unwrap().allowance.unwrap();
        assert_eq!((allowance.used, allowance.consumed_total), (3, 6));
        assert_eq!(allowance.resets_at, wall("2026-01-07T05:00:00Z"));
        slot.release();
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn a_crash_mid_period_never_lets_the_period_exceed_its_allowance() {
    let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
    // First coordinator: two of three spent, then a "crash" (no graceful record).
    paused_system().block_on({
        let store = store.clone();
        async move {
            let handle = start(store, DAILY_3, "2026-01-05T15:00:00Z");
            let slot = handle
                .reserve(&key(), policy(DAILY_3), WaitOptions::default())
                .await
                .unwrap();
            for _ in 0..2 {
                slot.admit(1, false, WaitOptions::default()).await.unwrap();
            }
            // The periodic save; the in-memory store is written inline, so the record
            // is stored once paused time has passed it.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let bytes = store.load(&key().to_string()).unwrap().expect("a record");
    let record: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(
        !record["lease"].is_null(),
        "a leased record, not a graceful one"
    );
    assert_eq!(record["allowance"]["consumedTotal"], 2);
    // The successor, later the same day, charges the whole lease as spent: nothing is
    // left in the period, whatever the dead coordinator granted after its record.
    paused_system().block_on(async move {
        let handle = start(store, DAILY_3, "2026-01-05T16:00:00Z");
        let slot = handle
            .reserve(&key(), policy(DAILY_3), WaitOptions::default())
            .await
            .unwrap();
        let short = WaitOptions {
            timeout: Duration::from_secs(60),
            ..WaitOptions::default()
        };
        let err = slot.admit(1, false, short).await.unwrap_err();
        assert!(
            matches!(
                err,
                AdmissionError::Refused {
                    refusal: Refusal::AllowanceExhausted { .. },
                    ..
                }
            ),
            "{err:?}"
        );
        let status = handle.status().await.unwrap();
        let allowance = status[0].calendar.unwrap().allowance.unwrap();
        // 2 recorded + the record's whole lease (burst 10 / 4 = 2.5 cost, rounded up).
        assert_eq!((allowance.used, allowance.consumed_total), (5, 5));
        slot.release();
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn a_datapoint_budgets_schedule_paces_paired_get_metric_data_admissions() {
    // Issue 22: the budget is a key like any other, so its schedule applies to the
    // datapoints a GetMetricData attempt charges beside its request token. Base:
    // 1,000 datapoints/s (burst 1,000); from 09:00 in Berlin (08:00Z in winter) 10,000/s.
    // The arrival-jitter allowance is pinned to 0: this is about the schedule (with the
    // default 100 ms, 10,000/s would leave a burst of 1,000 no room at all).
    let overrides = r#"{"cloudwatch:GetMetricData:older-datapoints": {
        "ratePerSecond": 1000, "burst": 1000, "arrivalJitterMs": 0,
        "schedule": [{"cron": "* 9-16 * * MON-FRI", "timezone": "Europe/Berlin",
                      "ratePerSecond": 10000}]}}"#;
    let table = PolicyTable::with_overrides(overrides, "test overrides").unwrap();
    let request: QuotaKey = "aws/123456789012/eu-west-1/cloudwatch:GetMetricData"
        .parse()
        .unwrap();
    let budget: QuotaKey = "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:older-datapoints"
        .parse()
        .unwrap();
    let (request_policy, budget_policy) = (
        table.policy_for_key(&request),
        table.policy_for_key(&budget),
    );
    paused_system().block_on(async {
        let store: Arc<dyn QuotaStore> = Arc::new(MemoryStore::new());
        let handle = start(store, overrides, "2026-01-05T07:59:58.030Z");
        let slot = handle
            .reserve(&request, request_policy, WaitOptions::default())
            .await
            .unwrap();
        let mut got = Vec::new();
        for _ in 0..4 {
            let grant = slot
                .admit_with_budget(
                    1,
                    false,
                    &budget,
                    budget_policy,
                    1_000,
                    WaitOptions::default(),
                )
                .await
                .unwrap();
            got.push(grant.admitted_at.as_micros() / 1_000);
        }
        slot.release();
        // 0: the full burst; 1,000 ms: a second's refill at the base; at the boundary
        // (1,970 ms) 970 earned, 30 more at 10,000/s; then 1,000 per 100 ms.
        assert_eq!(got, vec![0, 1_000, 1_973, 2_073]);
        let status = handle.status().await.unwrap();
        let calendar = status
            .iter()
            .find(|k| k.key == budget.to_string())
            .and_then(|k| k.calendar)
            .expect("the budget reports its calendar");
        assert_eq!(calendar.entry, Some(0));
    });
}
