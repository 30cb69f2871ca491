//! GetMetricData through the gate in paused time (issue 22, item 1): every attempt
//! charges its request token and its datapoints together, and two processes' scans that
//! together want more datapoints than the budget gives are paced by it while the request
//! key's own bound holds too.
//!
//! Two processes are two admission handles with their own owners on one coordinator's
//! actors (`AdmissionHandle::for_owner`, what the socket server does for each client),
//! each with its own gate and transport. The bytes are carried by a real STS client
//! (signed, over the fake transport): admission never reads the request, so what is
//! paced here is exactly what a CloudWatch client would be; the datapoints come from
//! the `MetricDataRequest` handed to `call_metric_data`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_sts::config::retry::RetryConfig;
use aws_sdk_sts::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpClient};
use futures_util::future::join_all;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionHandle, RuntimeConfig, TokioClock,
};
use tollgate_engine::aws::{
    gated_timeouts, AwsGate, CallContext, CallError, CallerIdentity, ClockTimeSource, Jitter,
    MemoryTelemetry, RetrySettings, ScanId, UngatedRefusal,
};
use tollgate_quota::key::AccountId;
use tollgate_quota::{
    MetricDataRequest, MetricQuery, Owner, Partition, PolicyTable, Timestamp, WallClock,
};
use tollgate_sim::transport::{response, FakeTransport};

/// 2027-01-15T08:00:00Z.
const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const REGION: &str = "us-east-1";
const DAY_MS: i64 = 86_400_000;

/// The budgets under test, small enough to bind within seconds: older datapoints 10,000/s
/// (burst 10,000, with the default 100 ms arrival jitter: the gate's bucket holds 9,000),
/// the request key 5/s (burst 1).
const OVERRIDES: &str = r#"{
    "cloudwatch:GetMetricData": {"ratePerSecond": 5, "burst": 1},
    "cloudwatch:GetMetricData:older-datapoints": {"ratePerSecond": 10000, "burst": 10000}
}"#;
const DATAPOINT_RATE: f64 = 10_000.0;
const DATAPOINT_BURST: f64 = 10_000.0;
/// The gate's bucket: the burst less 100 ms of refill (the default arrival jitter).
const DATAPOINT_ADMISSION_BURST: f64 = 9_000.0;
const REQUEST_RATE: f64 = 5.0;
const REQUEST_BURST: f64 = 1.0;

const IDENTITY: &str = r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult>
    <Arn>arn:aws:iam::123456789012:user/alice</Arn>
    <UserId>AIDATEST</UserId>
    <Account>123456789012</Account>
  </GetCallerIdentityResult>
  <ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>
</GetCallerIdentityResponse>"#;

/// What went out: when, and which process sent it.
type Sent = Arc<Mutex<Vec<(Instant, usize)>>>;

fn transport(sent: Sent, process: usize) -> SharedHttpClient {
    FakeTransport::new(move |_request| {
        sent.lock().unwrap().push((monotonic_now(), process));
        HttpConnectorFuture::ready(Ok(response(200, "text/xml", IDENTITY.to_owned())))
    })
    .http_client()
}

fn sts_client(clock: Arc<TokioClock>) -> aws_sdk_sts::Client {
    let config = aws_sdk_sts::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new(
            "AKIDTEST",
            "test-secret",
            None,
            None,
            "test",
        ))
        .http_client(UngatedRefusal)
        .retry_config(RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(tollgate_engine::aws::gated_stalled_stream_protection())
        .time_source(ClockTimeSource(clock))
        .build();
    aws_sdk_sts::Client::from_conf(config)
}

fn identity() -> CallerIdentity {
    CallerIdentity::resolved(
        Partition::aws(),
        AccountId::new("123456789012").unwrap(),
        None,
    )
}

fn owner(pid: u32) -> Owner {
    Owner { pid, generation: 1 }
}

fn gate(handle: AdmissionHandle, http: SharedHttpClient, telemetry: &MemoryTelemetry) -> AwsGate {
    gate_with(OVERRIDES, handle, http, telemetry)
}

fn gate_with(
    overrides: &str,
    handle: AdmissionHandle,
    http: SharedHttpClient,
    telemetry: &MemoryTelemetry,
) -> AwsGate {
    let policies = PolicyTable::with_overrides(overrides, "TOLLGATE_QUOTA_OVERRIDES").unwrap();
    AwsGate::new(handle, policies, &identity(), http)
        .with_retry(RetrySettings {
            jitter: Jitter::None,
            ..RetrySettings::default()
        })
        .with_telemetry(Arc::new(telemetry.clone()))
}

fn context() -> CallContext {
    CallContext {
        scan_id: ScanId(22),
        collector: "cloudwatch-activity",
        datasets: vec!["lambda-functions".into()],
        deadline: monotonic_now() + Duration::from_secs(3_600),
        cancel: CancellationToken::new(),
    }
}

/// `series` daily series over the 14 complete UTC days before START: `series` × 14
/// datapoints, all older than 3 hours.
fn daily_page(series: usize) -> MetricDataRequest {
    let now_ms = WallClock::from_timestamp(START, WallClock::UNIX_EPOCH).unix_millis();
    let end = now_ms - now_ms.rem_euclid(DAY_MS);
    MetricDataRequest {
        start_time_ms: Some(end - 14 * DAY_MS),
        end_time_ms: Some(end),
        max_datapoints: None,
        queries: vec![MetricQuery::metric_stat(86_400); series],
    }
}

async fn page(
    gate: &AwsGate,
    client: &aws_sdk_sts::Client,
    request: &MetricDataRequest,
) -> Result<(), CallError> {
    let client = client.clone();
    gate.call_metric_data(&context(), REGION, request, move |http| {
        client
            .get_caller_identity()
            .customize()
            .config_override(aws_sdk_sts::Config::builder().http_client(http))
            .send()
    })
    .await
    .map(|_| ())
}

/// The largest excess of what was charged in any interval `[t_i, t_j]` between two
/// sends over what a bucket of `burst` refilled at `rate` allows in it (burst + rate ×
/// length); at most 0 when the bound holds.
fn worst_excess(sends: &[(Duration, f64)], rate: f64, burst: f64) -> f64 {
    let mut worst = f64::MIN;
    for i in 0..sends.len() {
        let mut charged = 0.0;
        for j in i..sends.len() {
            charged += sends[j].1;
            let length = (sends[j].0 - sends[i].0).as_secs_f64();
            worst = worst.max(charged - (burst + rate * length));
        }
    }
    worst
}

/// The most charged in any one-second window `[t, t + 1 s)` (windows start at sends).
fn busiest_second(sends: &[(Duration, f64)]) -> f64 {
    sends
        .iter()
        .map(|&(t, _)| {
            sends
                .iter()
                .filter(|&&(u, _)| u >= t && u < t + Duration::from_secs(1))
                .map(|&(_, cost)| cost)
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
}

#[test]
fn two_processes_pages_are_paced_by_the_datapoint_budget_and_the_request_bound_holds() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let coordinator =
            start_in_current_system(RuntimeConfig::simulated(owner(100)), clock.clone());
        let sent: Sent = Arc::default();
        let telemetry = [MemoryTelemetry::new(), MemoryTelemetry::new()];
        let gates = [
            gate(
                coordinator.for_owner(owner(101)).unwrap(),
                transport(sent.clone(), 0),
                &telemetry[0],
            ),
            gate(
                coordinator.for_owner(owner(102)).unwrap(),
                transport(sent.clone(), 1),
                &telemetry[1],
            ),
        ];
        let client = sts_client(clock.clone());
        // Process 0 reads 500 series a page (7,000 datapoints, seed 000's example), process
        // 1 300 (4,200); 8 pages each, all at once: 89,600 datapoints against a budget of
        // 10,000 a second after a burst of 10,000, so about 8 s of pacing.
        let pages = [daily_page(500), daily_page(300)];
        let costs = [7_000.0, 4_200.0];
        let start = monotonic_now();
        let scans = (0..2).flat_map(|p| {
            let (gate, client, request) = (&gates[p], &client, &pages[p]);
            (0..8).map(move |_| page(gate, client, request))
        });
        for result in join_all(scans).await {
            result.unwrap();
        }

        let sends: Vec<(Duration, f64)> = sent
            .lock()
            .unwrap()
            .iter()
            .map(|&(at, p)| (at - start, costs[p]))
            .collect();
        assert_eq!(sends.len(), 16, "one attempt per page");
        let total: f64 = sends.iter().map(|s| s.1).sum();
        assert_eq!(total, 89_600.0);
        // The datapoint budget bound, in send time: no interval between two sends holds
        // more than burst + rate × its length, so no one-second window more than
        // burst + rate.
        let excess = worst_excess(&sends, DATAPOINT_RATE, DATAPOINT_BURST);
        assert!(
            excess <= 1e-6,
            "datapoints over the bound by {excess}: {sends:?}"
        );
        // ...and within the gate's own, smaller bucket (the arrival-jitter allowance).
        let excess = worst_excess(&sends, DATAPOINT_RATE, DATAPOINT_ADMISSION_BURST);
        assert!(
            excess <= 1e-6,
            "datapoints over the admission burst by {excess}: {sends:?}"
        );
        let busiest = busiest_second(&sends);
        assert!(
            busiest <= DATAPOINT_BURST + DATAPOINT_RATE,
            "{busiest} datapoints in one second: {sends:?}"
        );
        // The request key's bound at the same time (cost 1 per send).
        let requests: Vec<(Duration, f64)> = sends.iter().map(|&(t, _)| (t, 1.0)).collect();
        let excess = worst_excess(&requests, REQUEST_RATE, REQUEST_BURST);
        assert!(
            excess <= 1e-6,
            "requests over the bound by {excess}: {sends:?}"
        );
        assert!(busiest_second(&requests) <= REQUEST_RATE, "{sends:?}");
        // It was the datapoint budget that bound: 16 requests alone need 3 s, the
        // datapoints beyond the admission burst (80,600) about 8 s.
        let last = sends.iter().map(|s| s.0).max().unwrap();
        assert!(last >= Duration::from_millis(7_960), "{last:?}: {sends:?}");
        assert!(last < Duration::from_secs(10), "{last:?}: {sends:?}");
        // Every attempt of both processes charged its page's datapoints.
        for p in 0..2 {
            let events = telemetry[p].events();
            assert_eq!(events.len(), 8);
            for e in &events {
                let json: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
                assert_eq!(
                    json["datapoints"],
                    serde_json::json!({"budget": "older-datapoints", "cost": costs[p] as u32}),
                    "{json}"
                );
                assert_eq!(
                    e.quota.as_deref(),
                    Some("aws/123456789012/us-east-1/cloudwatch:GetMetricData")
                );
            }
        }
        // Every slot of both keys was given back.
        let status = coordinator.status().await.unwrap();
        for key in &status {
            assert_eq!(key.state.reservations, 0, "{}", key.key);
        }
        let older = status
            .iter()
            .find(|k| k.key.ends_with("cloudwatch:GetMetricData:older-datapoints"))
            .expect("the budget is a key of its own");
        assert_eq!(older.state.policy.rate_per_second(), DATAPOINT_RATE);
    });
}

/// One process's gate over a fresh coordinator, and what its transport sent.
fn one_process(clock: Arc<TokioClock>) -> (AdmissionHandle, AwsGate, Sent) {
    let handle = start_in_current_system(RuntimeConfig::simulated(owner(100)), clock);
    let sent: Sent = Arc::default();
    let gate = gate(
        handle.clone(),
        transport(sent.clone(), 0),
        &MemoryTelemetry::new(),
    );
    (handle, gate, sent)
}

/// `series` one-minute series over the two hours before START: `recent-datapoints`.
fn recent_page(series: usize) -> MetricDataRequest {
    let now_ms = WallClock::from_timestamp(START, WallClock::UNIX_EPOCH).unix_millis();
    MetricDataRequest {
        start_time_ms: Some(now_ms - 2 * 3_600_000),
        end_time_ms: Some(now_ms),
        max_datapoints: None,
        queries: vec![MetricQuery::metric_stat(60); series],
    }
}

#[test]
fn a_page_waiting_for_datapoints_that_is_cancelled_never_goes_and_leaves_no_slot_held() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let (handle, gate, sent) = one_process(clock.clone());
        let client = sts_client(clock);
        let page7000 = daily_page(500);
        // The first page takes 7,000 of the 9,000 the gate's bucket holds; the second
        // needs 5,000 more.
        page(&gate, &client, &page7000).await.unwrap();
        let mut ctx = context();
        let cancel = ctx.cancel.clone();
        ctx.deadline = monotonic_now() + Duration::from_secs(60);
        let waiting = {
            let client = client.clone();
            let request = page7000.clone();
            let gate = gate.clone();
            tokio::spawn(async move {
                gate.call_metric_data(&ctx, REGION, &request, move |http| {
                    client
                        .get_caller_identity()
                        .customize()
                        .config_override(aws_sdk_sts::Config::builder().http_client(http))
                        .send()
                })
                .await
                .map(|_| ())
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
        let error = waiting.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), tollgate_engine::aws::CallErrorKind::Cancelled);
        assert_eq!(
            sent.lock().unwrap().len(),
            1,
            "the cancelled page never went"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
        for key in handle.status().await.unwrap() {
            assert_eq!(key.state.reservations, 0, "{}", key.key);
            assert_eq!(key.waiting_for_admission, 0, "{}", key.key);
        }
    });
}

#[test]
fn a_page_whose_bound_exceeds_the_budgets_burst_is_refused_unsent() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let (_handle, gate, sent) = one_process(clock.clone());
        let client = sts_client(clock);
        // An expression reserves the whole page cap, 100,800 > the burst of 10,000.
        let mut request = daily_page(1);
        request.queries.push(MetricQuery::Expression);
        let error = page(&gate, &client, &request).await.unwrap_err();
        assert_eq!(error.kind(), tollgate_engine::aws::CallErrorKind::Admission);
        assert!(error.to_string().contains("exceeds the burst"), "{error}");
        assert!(sent.lock().unwrap().is_empty());
    });
}

#[test]
fn recent_pages_are_not_held_back_by_an_exhausted_older_budget() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let (_handle, gate, sent) = one_process(clock.clone());
        let client = sts_client(clock);
        let start = monotonic_now();
        // Older: 7,000 at 0 (of the 9,000 the gate's bucket holds: the burst of 10,000
        // less the default 100 ms of arrival jitter), then the next 7,000 not before
        // 500 ms. Recent (180,000/s): 120 × 3 at once, paced only by the request key
        // (5/s burst 1).
        let (older, recent) = (daily_page(500), recent_page(3));
        let (a, b, c) = tokio::join!(
            page(&gate, &client, &older),
            page(&gate, &client, &older),
            page(&gate, &client, &recent),
        );
        for result in [a, b, c] {
            result.unwrap();
        }
        let at: Vec<Duration> = sent.lock().unwrap().iter().map(|s| s.0 - start).collect();
        assert_eq!(at.len(), 3);
        assert_eq!(at[0], Duration::ZERO, "{at:?}");
        assert_eq!(
            at[1],
            Duration::from_millis(200),
            "the recent page, at the request key's pace: {at:?}"
        );
        assert_eq!(
            at[2],
            Duration::from_millis(500),
            "the second older page, at the datapoints' pace: {at:?}"
        );
    });
}

/// The arrival-jitter allowance set in the overrides: 200 ms of 10,000/s, so the gate's
/// bucket holds 8,000 of the burst's 10,000.
const JITTER_OVERRIDES: &str = r#"{
    "cloudwatch:GetMetricData": {"ratePerSecond": 50, "burst": 50},
    "cloudwatch:GetMetricData:older-datapoints":
        {"ratePerSecond": 10000, "burst": 10000, "arrivalJitterMs": 200}
}"#;

#[test]
fn a_datapoint_keys_charge_in_any_window_stays_within_the_burst_less_the_arrival_jitter() {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let handle = start_in_current_system(RuntimeConfig::simulated(owner(100)), clock.clone());
        let sent: Sent = Arc::default();
        let costs = [7_000.0, 4_200.0, 9_800.0];
        let gates: Vec<AwsGate> = (0..3)
            .map(|p| {
                gate_with(
                    JITTER_OVERRIDES,
                    handle.clone(),
                    transport(sent.clone(), p),
                    &MemoryTelemetry::new(),
                )
            })
            .collect();
        let client = sts_client(clock);
        // 500, 300 and 700 daily series a page (7,000, 4,200 and 9,800 datapoints), 6
        // pages each, all at once. 9,800 is above the gate's 8,000 but within the
        // server's 10,000: admitted on a full bucket, which it leaves in debt.
        let pages = [daily_page(500), daily_page(300), daily_page(700)];
        let start = monotonic_now();
        let scans = (0..3).flat_map(|p| {
            let (gate, client, request) = (&gates[p], &client, &pages[p]);
            (0..6).map(move |_| page(gate, client, request))
        });
        for result in join_all(scans).await {
            result.unwrap();
        }
        let mut sends: Vec<(Duration, f64)> = sent
            .lock()
            .unwrap()
            .iter()
            .map(|&(at, p)| (at - start, costs[p]))
            .collect();
        sends.sort_by_key(|a| a.0);
        assert_eq!(sends.len(), 18);
        // Every interval that ends with a page the gate's bucket can hold charges at
        // most 8,000 + 10,000/s × its length; one that ends with an oversize page at
        // most that page + 10,000/s × its length (arrival_jitter's weaker case).
        let admission_burst = 8_000.0;
        for end in 0..sends.len() {
            let ends_oversize = sends[end].1 > admission_burst;
            let allowed = if ends_oversize {
                sends[end].1
            } else {
                admission_burst
            };
            let excess = worst_excess_ending_at(&sends, end, DATAPOINT_RATE, allowed);
            assert!(
                excess <= 1e-6,
                "{excess} over the bound in an interval ending at send {end}: {sends:?}"
            );
        }
        // And the bound is what paced them, not something slower: 126,000 datapoints
        // less at most 9,800 at once need at least 11.62 s at 10,000/s, and the gate
        // keeps its bucket busy, so not much more.
        let total: f64 = sends.iter().map(|s| s.1).sum();
        assert_eq!(total, 126_000.0);
        let last = sends.last().unwrap().0;
        assert!(last >= Duration::from_millis(11_620), "{last:?}: {sends:?}");
        assert!(last < Duration::from_millis(12_500), "{last:?}: {sends:?}");
        let older = handle
            .status()
            .await
            .unwrap()
            .into_iter()
            .find(|k| k.key.ends_with("cloudwatch:GetMetricData:older-datapoints"))
            .expect("the budget is a key of its own");
        assert_eq!(older.state.policy.arrival_jitter_ms(), 200);
        assert_eq!(older.state.policy.admission_burst(), admission_burst);
    });
}

/// [`worst_excess`] over the intervals `[t_i, t_end]` only.
fn worst_excess_ending_at(sends: &[(Duration, f64)], end: usize, rate: f64, burst: f64) -> f64 {
    (0..=end)
        .map(|i| {
            let charged: f64 = sends[i..=end].iter().map(|s| s.1).sum();
            let length = (sends[end].0 - sends[i].0).as_secs_f64();
            charged - (burst + rate * length)
        })
        .fold(f64::MIN, f64::max)
}
