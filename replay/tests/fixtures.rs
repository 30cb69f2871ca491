//! Seed 000's offline performance fixtures (`fixtures/replay/*.json`) replayed through the
//! real gate, retry owner and quota actors in paused time: counts exactly as the seed's
//! table, elapsed within +0.5% of the ideal the policy allows (never below it), and the
//! dispatch instants the admission maths determines.

use tollgate_quota::PolicyTable;
use tollgate_replay::{AttemptResult, ReplayOptions, Report, RequestResult, Script, Totals};

fn fixture_text(name: &str) -> String {
    let path = format!("{}/../fixtures/replay/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn script(text: &str) -> Script {
    Script::parse(text, &PolicyTable::defaults()).unwrap()
}

fn replay_with(script: &Script, seed: u64) -> Report {
    tollgate_replay::run(script, ReplayOptions { seed }).unwrap()
}

fn replay_fixture(name: &str) -> Report {
    replay_with(&script(&fixture_text(name)), tollgate_replay::DEFAULT_SEED)
}

fn dispatches(report: &Report) -> Vec<u64> {
    let mut at: Vec<u64> = report
        .requests
        .iter()
        .flat_map(|r| r.attempts.iter().map(|a| a.dispatched_at_ms))
        .collect();
    at.sort_unstable();
    at
}

/// Elapsed is at least the ideal and at most 0.5% above it.
fn assert_near_ideal(report: &Report, ideal_ms: f64) {
    let elapsed = report.elapsed_ms as f64;
    assert!(
        elapsed >= ideal_ms && elapsed <= ideal_ms * 1.005,
        "elapsed {elapsed} ms against an ideal of {ideal_ms} ms (allowed: +0.5%)"
    );
}

/// The ideal time for `n` first attempts at `rate`/s with `burst`: the burst goes at 0,
/// the rest at the refill rate.
fn ideal_ms(n: u32, rate: f64, burst: f64) -> f64 {
    (f64::from(n) - burst).max(0.0) / rate * 1_000.0
}

// ---------------------------------------------------------------- fast responses

/// Seed 000: 8 requests, 1 process, DescribeLogStreams at 4/s burst 2, retry allowance 2:
/// 8 attempts, 0 retries, 1.5 s (seed baseline 1,520 ms, +1.3%).
///
/// The instants: the bucket alone would allow 0, 0, 250, 500, 750, 1000, 1250, 1500;
/// the rolling window (at most ⌊4⌋ starts in any 1 s) holds the fifth start until the
/// window of the starts at 0 has passed, at 1000, when the bucket has refilled to its
/// burst of 2 (4/s over 500 ms); then 1250 and 1500. This is the same schedule as the
/// actor-level fixture (actors/tests/integration/fixtures.rs), now through the gate, the SDK and the
/// retry owner. The seed's own total queue wait (5,526 ms) is this schedule's 5,500 ms
/// plus its host overhead.
#[test]
fn fast_responses() {
    let report = replay_fixture("fast-responses.json");
    assert_eq!(
        report.totals(),
        Totals {
            processes: 1,
            logical_requests: 8,
            physical_attempts: 8,
            retries: 0,
            exhausted_retry_admissions: 0,
            cancelled_before_dispatch: 0,
            aborted: 0,
            observations: 8,
            total_queue_wait_ms: 5_500.0,
            mean_queue_wait_ms: 687.5,
            elapsed_ms: report.elapsed_ms,
        }
    );
    assert_eq!(
        dispatches(&report),
        [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]
    );
    // FIFO: script order is dispatch order.
    let in_order: Vec<u64> = report
        .requests
        .iter()
        .map(|r| r.attempts[0].dispatched_at_ms)
        .collect();
    assert_eq!(in_order, [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]);
    assert!(report
        .requests
        .iter()
        .all(|r| r.result == RequestResult::Success && r.attempts.len() == 1));
    assert_near_ideal(&report, ideal_ms(8, 4.0, 2.0));
    assert_eq!(report.elapsed_ms, 1_500);
    let key = &report.keys[0];
    assert_eq!(key.state.penalty_steps, 0);
    assert_eq!(key.state.retry_units, 2, "no retry spent");
}

// ---------------------------------------------------------------- sustained throttling

/// Seed 000: 2 requests that keep being throttled, retry allowance 2: 4 attempts of which
/// 2 retries, 6 attempt observations including 2 exhausted retry admissions; elapsed
/// 3,037 ms in the seed (total queue wait 6,018 ms).
///
/// The maths (jitter none, tollgate's throttle backoff base 1 s): both first attempts go
/// at 0 (burst 2) and are throttled; the penalty halves the rate to 2/s with a 500 ms
/// cooldown (the two failures are one event). Each retry waits its 1 s backoff, spends
/// one unit of the shared allowance (2 → 0) and is admitted at 1000 (the bucket refilled
/// 2 tokens at 2/s); both are throttled again (penalty 2 steps). After the 2 s backoff
/// both want a third attempt at 3000 and are refused: the allowance is empty. Ideal
/// elapsed 1 s + 2 s = 3000 ms; queue waits 0 + 0 + 1000 + 1000 + 2000 + 2000 = 6000.
#[test]
fn sustained_throttling() {
    let report = replay_fixture("sustained-throttling.json");
    let totals = report.totals();
    assert_eq!(
        totals,
        Totals {
            processes: 1,
            logical_requests: 2,
            physical_attempts: 4,
            retries: 2,
            exhausted_retry_admissions: 2,
            cancelled_before_dispatch: 0,
            aborted: 0,
            observations: 6,
            total_queue_wait_ms: 6_000.0,
            mean_queue_wait_ms: 1_000.0,
            elapsed_ms: report.elapsed_ms,
        }
    );
    for r in &report.requests {
        assert_eq!(r.result, RequestResult::RetryExhausted, "{}", r.id);
        let at: Vec<_> = r
            .attempts
            .iter()
            .map(|a| (a.dispatched_at_ms, a.outcome))
            .collect();
        assert_eq!(
            at,
            [
                (0, AttemptResult::Throttle),
                (1_000, AttemptResult::Throttle)
            ],
            "{}",
            r.id
        );
        assert!(
            r.error.as_deref().unwrap().contains("ThrottlingException"),
            "the last failure is kept: {:?}",
            r.error
        );
    }
    assert_near_ideal(&report, 3_000.0);
    // The penalty was applied and the allowance is spent.
    let key = &report.keys[0].state;
    assert_eq!(key.penalty_steps, 2);
    assert_eq!(key.effective_rate_per_second, 1.0);
    assert_eq!(key.retry_units, 0);
}

// ---------------------------------------------------------------- concurrent datasets

/// Seed 000: 2 processes sharing one key, requests split between logActivity and
/// logRetention in the same account: 8 requests, 8 attempts, 1.5 s (seed 1,531 ms).
/// Two processes get one schedule, the same as one process's: the key is shared.
#[test]
fn concurrent_datasets() {
    let report = replay_fixture("concurrent-datasets.json");
    let totals = report.totals();
    assert_eq!(
        (
            totals.processes,
            totals.logical_requests,
            totals.physical_attempts,
            totals.retries,
            totals.exhausted_retry_admissions,
            totals.cancelled_before_dispatch,
            totals.aborted,
            totals.total_queue_wait_ms,
        ),
        (2, 8, 8, 0, 0, 0, 0, 5_500.0)
    );
    assert_eq!(
        dispatches(&report),
        [0, 0, 250, 500, 1_000, 1_000, 1_250, 1_500]
    );
    assert_eq!(report.keys.len(), 1, "one shared key");
    assert_near_ideal(&report, ideal_ms(8, 4.0, 2.0));
    for process in [1, 2] {
        let mine: Vec<_> = report
            .requests
            .iter()
            .filter(|r| r.process == process)
            .collect();
        assert_eq!(mine.len(), 4);
        assert!(mine.iter().all(|r| r.result == RequestResult::Success));
    }
}

/// The contrast: the same two processes in different accounts have two keys and
/// progress separately, each at 4/s burst 2: 4 requests each end at 500 ms.
#[test]
fn different_accounts_progress_separately() {
    let text = fixture_text("concurrent-datasets.json");
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    for r in json["requests"].as_array_mut().unwrap() {
        if r["process"] == 2 {
            r["account"] = "210987654321".into();
        }
    }
    let report = replay_with(&script(&json.to_string()), 1);
    assert_eq!(report.keys.len(), 2);
    assert_eq!(dispatches(&report), [0, 0, 0, 0, 250, 250, 500, 500]);
    assert_eq!(report.elapsed_ms, 500);
}

// ---------------------------------------------------------------- cancellation

/// Seed 000: 1/s, burst 1, concurrency 1, 8 requests; the first is held in flight, then
/// the scan is cancelled (at 20 ms, about when the seed's was): 1 attempt, 7 requests
/// stopped before dispatch, the held one aborted.
#[test]
fn cancellation() {
    let report = replay_fixture("cancellation.json");
    let totals = report.totals();
    assert_eq!(
        (
            totals.logical_requests,
            totals.physical_attempts,
            totals.retries,
            totals.exhausted_retry_admissions,
            totals.cancelled_before_dispatch,
            totals.aborted,
            totals.observations,
        ),
        (8, 1, 0, 0, 7, 1, 8)
    );
    assert!(report
        .requests
        .iter()
        .all(|r| r.result == RequestResult::Cancelled));
    let first = &report.requests[0];
    assert_eq!(first.attempts.len(), 1);
    assert_eq!(
        (
            first.attempts[0].dispatched_at_ms,
            first.attempts[0].outcome
        ),
        (0, AttemptResult::Aborted)
    );
    assert!(report.requests[1..].iter().all(|r| r.attempts.is_empty()));
    // Ideal: everything ends at the cancellation instant.
    assert_near_ideal(&report, 20.0);
    let key = &report.keys[0];
    assert_eq!(
        key.state.reservations, 0,
        "the aborted request released its slot"
    );
    assert_eq!(key.waiting_for_reservation, 0, "no queued waiter left");
    assert_eq!(key.state.retry_units, 20, "an abort is no feedback");
}

// ---------------------------------------------------------------- the replay itself

const THROTTLED_FULL_JITTER: &str = r#"{
  "policies": {"logs:DescribeLogStreams": {"ratePerSecond": 4, "burst": 2, "retryCapacity": 20}},
  "retry": {"jitter": "full"},
  "requests": [
    {"id": "a", "service": "logs", "operation": "DescribeLogStreams",
     "responses": [{"outcome": "throttle"}, {"outcome": "throttle"}, {"outcome": "success"}]},
    {"id": "b", "service": "logs", "operation": "DescribeLogStreams",
     "responses": [{"outcome": "transient"}, {"outcome": "throttle"}, {"outcome": "success"}]}
  ]
}"#;

/// Full jitter draws from a seeded generator: the same seed gives the same replay, and
/// the seed does change the backoff.
#[test]
fn a_seeded_replay_is_reproducible() {
    let s = script(THROTTLED_FULL_JITTER);
    let one = replay_with(&s, 7);
    let again = replay_with(&s, 7);
    assert_eq!(one.to_json(), again.to_json());
    assert!(one
        .requests
        .iter()
        .all(|r| r.result == RequestResult::Success && r.attempts.len() == 3));
    let differs = (8..16).any(|seed| replay_with(&s, seed).to_json() != one.to_json());
    assert!(differs, "the seed never changed a backoff");
}

/// A server's retry-after is a floor for the backoff; the last response repeats; a fatal
/// answer is not retried; transport time delays the answer, not the dispatch.
#[test]
fn retry_after_repeats_fatal_and_transport_time() {
    let report = replay_with(
        &script(
            r#"{
  "retry": {"jitter": "none", "initial_delay_ms": 100},
  "requests": [
    {"id": "later", "service": "logs", "operation": "DescribeLogStreams",
     "responses": [{"outcome": "throttle", "retry_after_ms": 7000}, {"outcome": "success", "transport_ms": 40}]},
    {"id": "denied", "at_ms": 5, "service": "s3", "operation": "ListBuckets",
     "responses": [{"outcome": "fatal"}]},
    {"id": "flaky", "service": "kms", "operation": "ListKeys", "process": 2,
     "responses": [{"outcome": "transient"}]}
  ]
}"#,
        ),
        1,
    );
    let later = report.request("later").unwrap();
    assert_eq!(later.result, RequestResult::Success);
    assert_eq!(later.attempts[1].dispatched_at_ms, 7_000);
    assert_eq!(later.ended_at_ms, 7_040, "40 ms of transport");
    let denied = report.request("denied").unwrap();
    assert_eq!(
        (
            denied.result,
            denied.attempts.len(),
            denied.attempts[0].dispatched_at_ms
        ),
        (RequestResult::Failed, 1, 5)
    );
    // transient repeats: 6 attempts (the default), backoff 100, 200, 400, 800, 1600 ms on
    // top of admission; kms:ListKeys falls back to the default table (10/s burst 10).
    let flaky = report.request("flaky").unwrap();
    assert_eq!(flaky.result, RequestResult::GaveUp);
    assert_eq!(flaky.attempts.len(), 6);
    assert!(flaky
        .attempts
        .iter()
        .all(|a| a.outcome == AttemptResult::Transient));
    let gaps: Vec<u64> = flaky
        .attempts
        .windows(2)
        .map(|w| w[1].dispatched_at_ms - w[0].dispatched_at_ms)
        .collect();
    for (gap, backoff) in gaps.iter().zip([100, 200, 400, 800, 1_600]) {
        assert!(*gap >= backoff, "{gaps:?}");
    }
    let last = report.requests.iter().map(|r| r.ended_at_ms).max();
    assert_eq!(
        Some(report.elapsed_ms),
        last,
        "elapsed ends with the last request"
    );
    assert!(report.elapsed_ms >= 100 + 200 + 400 + 800 + 1_600);
}

/// A held request without cancellation runs into the scan deadline: gave up, aborted.
#[test]
fn a_hold_ends_at_the_deadline() {
    let report = replay_with(
        &script(
            r#"{"deadline_ms": 2500, "requests": [
  {"id": "stuck", "service": "logs", "operation": "DescribeLogStreams", "responses": [{"outcome": "hold"}]}]}"#,
        ),
        1,
    );
    let stuck = &report.requests[0];
    assert_eq!(stuck.result, RequestResult::GaveUp);
    assert_eq!(stuck.attempts[0].outcome, AttemptResult::Aborted);
    assert_eq!(report.elapsed_ms, 2_500);
}

// ---------------------------------------------------------------- schedules and allowances

/// Issue 12's calendar fixtures: each script's `start_at` puts a schedule boundary or an
/// allowance reset 2 s into the replay, and the dispatch instants show it taking effect
/// at the first admission at or after it (to the millisecond).
///
/// - Business hours in Berlin: 1/s until 09:00 CET (08:00Z), then 10/s: 0 and 1000 under
///   the base; the waiter held for 2000 is re-checked at the boundary and goes then (a
///   full token by the old rate), the rest 100 ms apart.
/// - Spring forward: the `* 3 * * *` hour starts at 03:00 local, which is the instant of
///   the jump (Berlin 01:00Z, New York 07:00Z), not an hour later: 1/s, then 10/s at 2 s.
/// - Fall back: the repeated hour (`* 2 * * *` in Berlin, `* 1 * * *` in New York) is
///   matched both times, so its 1/s holds until the end of the second one (Berlin
///   02:00Z, New York 07:00Z), then the base's 10/s.
/// - Daily allowance of 3 in New York: three at once, then the two others wait for
///   midnight EST (05:00Z) and go together when the whole amount returns.
#[test]
fn calendar_fixtures_take_effect_at_their_boundaries() {
    let stepped = vec![0, 1_000, 2_000, 2_100, 2_200, 2_300];
    let table = [
        ("schedule-business-hours-berlin.json", stepped.clone()),
        ("schedule-spring-forward-berlin.json", stepped.clone()),
        ("schedule-fall-back-berlin.json", stepped.clone()),
        ("schedule-spring-forward-new-york.json", stepped.clone()),
        ("schedule-fall-back-new-york.json", stepped),
        ("allowance-daily-reset.json", vec![0, 0, 0, 2_000, 2_000]),
    ];
    for (name, want) in table {
        let report = replay_fixture(name);
        assert_eq!(dispatches(&report), want, "{name}");
        assert!(
            report
                .requests
                .iter()
                .all(|r| r.result == RequestResult::Success),
            "{name}: every request succeeds"
        );
    }
}

/// The same allowance with a deadline before the reset: the two left over are refused
/// at once (nothing waits for a reset past the deadline).
#[test]
fn an_allowance_exhausted_before_the_deadline_is_refused_at_once() {
    let text = fixture_text("allowance-daily-reset.json").replacen(
        "\"retry\"",
        "\"deadline_ms\": 1000, \"retry\"",
        1,
    );
    let report = replay_with(&script(&text), tollgate_replay::DEFAULT_SEED);
    assert_eq!(dispatches(&report), vec![0, 0, 0]);
    let failed = report
        .requests
        .iter()
        .filter(|r| r.result == RequestResult::Failed)
        .count();
    assert_eq!(failed, 2);
    assert_eq!(report.elapsed_ms, 0, "refused at once, not at the deadline");
}

// ---------------------------------------------------------------- GetMetricData datapoints

/// Issue 22: `metric-data-datapoints.json`. Two processes page 14 days of hourly series
/// (older than 3 hours: `older-datapoints`, here 10,000/s burst 10,000): 4 pages of 20
/// series (6,720 datapoints) and 4 of 12 (4,032), 43,008 in all, so the datapoints bind
/// (3.3 s beyond the burst) and not the request key (5/s burst 1: 9 requests in 1.6 s).
/// A 2-hour window charges `recent-datapoints` (three 1-minute series and an expression,
/// capped at `max_datapoints` 1,000), and a start exactly 3 hours old is `recent` on its
/// first attempt and `older` on its retry 1 s later.
#[test]
fn metric_data_pages_charge_their_datapoint_budget_on_every_attempt() {
    let report = replay_fixture("metric-data-datapoints.json");
    let charge = |budget: &str, cost: u32| serde_json::json!({"budget": budget, "cost": cost});
    let mut older: Vec<(u64, f64)> = Vec::new();
    let mut requests: Vec<u64> = Vec::new();
    for r in &report.requests {
        assert_eq!(r.result, RequestResult::Success, "{}", r.id);
        let charges: Vec<serde_json::Value> = r
            .attempts
            .iter()
            .map(|a| serde_json::to_value(a).unwrap()["datapoints"].clone())
            .collect();
        let want = if r.id.starts_with("lambda-activity") {
            vec![charge("older-datapoints", 6_720)]
        } else if r.id.starts_with("dynamodb-activity") {
            vec![charge("older-datapoints", 4_032)]
        } else if r.id == "recent-errors" {
            vec![charge("recent-datapoints", 1_000)]
        } else {
            assert_eq!(r.id, "three-hours-old");
            assert_eq!(
                r.attempts[1].dispatched_at_ms, 1_000,
                "the backoff after a throttle"
            );
            vec![
                charge("recent-datapoints", 180),
                charge("older-datapoints", 180),
            ]
        };
        assert_eq!(charges, want, "{}", r.id);
        if r.id != "three-hours-old" {
            requests.push(r.attempts[0].dispatched_at_ms);
        }
        if r.id.contains("-activity-") {
            let cost = want[0]["cost"].as_u64().unwrap() as f64;
            older.push((r.attempts[0].dispatched_at_ms, cost));
        }
    }
    // The older budget's bound in dispatch time: between any two dispatches at most
    // burst + rate × their distance (1 ms of slack for the report's whole milliseconds).
    older.sort_by_key(|o| o.0);
    for i in 0..older.len() {
        let mut charged = 0.0;
        for j in i..older.len() {
            charged += older[j].1;
            let secs = (older[j].0 - older[i].0 + 1) as f64 / 1_000.0;
            assert!(charged <= 10_000.0 + 10_000.0 * secs, "{older:?}");
            // ...and the gate's own bucket: the burst less the default 100 ms of
            // arrival jitter (9,000).
            assert!(charged <= 9_000.0 + 10_000.0 * secs, "{older:?}");
        }
    }
    // The request key's: at most one start per 200 ms (burst 1, 5/s).
    requests.sort_unstable();
    for pair in requests.windows(2) {
        assert!(pair[1] - pair[0] >= 199, "{requests:?}");
    }
    // The datapoints bound the run: (43,008 - 9,000) / 10,000 s (the gate's bucket holds
    // the burst less 100 ms of arrival jitter), within a millisecond.
    let last = older.last().unwrap().0;
    assert!((3_400..=3_402).contains(&last), "{older:?}");
    let key = |suffix: &str| {
        report
            .keys
            .iter()
            .find(|k| k.key.ends_with(suffix))
            .unwrap_or_else(|| panic!("no key {suffix}"))
    };
    let budget = key("us-east-1/cloudwatch:GetMetricData:older-datapoints");
    assert_eq!(budget.state.policy.rate_per_second(), 10_000.0);
    assert_eq!(budget.state.reservations, 0);
    key("us-east-1/cloudwatch:GetMetricData:recent-datapoints");
    key("us-west-2/cloudwatch:GetMetricData:older-datapoints");
}

// ---------------------------------------------------------------- EMR (issue 36)

/// Seed 000's EMR budgets, as the collector spends them (one `DescribeCluster` and one
/// `ListInstances` per cluster): 10 clusters' calls wanted at once, the script naming no
/// policy, so seed 000's defaults apply: `emr:ListInstances` 0.5/s burst 1 (below 1/s, at
/// most one start in 2 s) and `emr:DescribeCluster` 1/s burst 1, separate keys. Each
/// paces to its ideal on its own: instances reads at 0, 2, ..., 18 s, descriptions at 0,
/// 1, ..., 9 s; the run ends at the slower key's ideal, 18 s plus the last answer's 50 ms.
#[test]
fn emr_list_instances_paces_to_seed_000s_half_a_call_a_second() {
    let report = replay_fixture("emr-list-instances.json");
    let at = |prefix: &str| -> Vec<u64> {
        let mut at: Vec<u64> = report
            .requests
            .iter()
            .filter(|r| r.id.starts_with(prefix))
            .flat_map(|r| r.attempts.iter().map(|a| a.dispatched_at_ms))
            .collect();
        at.sort_unstable();
        at
    };
    assert_eq!(
        at("instances-"),
        (0..10).map(|i| i * 2_000).collect::<Vec<u64>>()
    );
    assert_eq!(
        at("describe-"),
        (0..10).map(|i| i * 1_000).collect::<Vec<u64>>()
    );
    assert!(report
        .requests
        .iter()
        .all(|r| r.result == RequestResult::Success));
    assert_near_ideal(&report, ideal_ms(10, 0.5, 1.0) + 50.0);
    let key = |suffix: &str| {
        report
            .keys
            .iter()
            .find(|k| k.key.ends_with(suffix))
            .unwrap_or_else(|| panic!("no key {suffix}"))
    };
    let instances = key("eu-west-1/emr:ListInstances");
    assert_eq!(instances.state.policy.rate_per_second(), 0.5);
    assert_eq!(
        key("eu-west-1/emr:DescribeCluster")
            .state
            .policy
            .rate_per_second(),
        1.0
    );
}
