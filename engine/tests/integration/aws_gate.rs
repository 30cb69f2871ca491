//! The gated AWS call path over a fake transport, in paused time inside an actix system:
//! a real STS client signs real requests with static test credentials, and a scripted
//! connector answers them. Admission runs in quota actors over a `MemoryStore`.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_sts::config::retry::RetryConfig;
use aws_sdk_sts::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpClient};
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionHandle, RuntimeConfig, TokioClock,
};
use tollgate_engine::aws::identity::resolve_identity;
use tollgate_engine::aws::{
    gated_timeouts, AttemptEvent, AttemptOutcome, AwsGate, CallContext, CallErrorKind,
    CallerIdentity, ClockTimeSource, GateDispatch, Jitter, MemoryTelemetry, RetryOutcome,
    RetrySettings, ScanId, UngatedRefusal,
};
use tollgate_quota::key::{AccountId, RunId};
use tollgate_quota::{Owner, Partition, PolicyTable, Timestamp};
use tollgate_sim::transport::{response as http_response, FakeTransport};

const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const REGION: &str = "us-east-1";

// ---------------------------------------------------------------- the fake transport

/// One scripted answer.
#[derive(Debug, Clone)]
enum Reply {
    Identity,
    Error {
        status: u16,
        code: &'static str,
        retry_after: Option<&'static str>,
    },
    /// Any body, as XML.
    Raw {
        status: u16,
        body: &'static str,
    },
    /// Never answers (a request in flight until aborted).
    Hang,
}

fn throttle() -> Reply {
    Reply::Error {
        status: 400,
        code: "Throttling",
        retry_after: None,
    }
}

/// What the transport saw.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
}

#[derive(Debug, Clone)]
struct FakeAws {
    script: Arc<Mutex<VecDeque<Reply>>>,
    otherwise: Reply,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeAws {
    fn new(script: impl IntoIterator<Item = Reply>, otherwise: Reply) -> Self {
        FakeAws {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            otherwise,
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn client(&self) -> SharedHttpClient {
        let this = self.clone();
        FakeTransport::new(move |_request| this.answer()).http_client()
    }

    fn answer(&self) -> HttpConnectorFuture {
        self.seen.lock().unwrap().push(Seen {
            at: monotonic_now(),
        });
        let reply = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| self.otherwise.clone());
        match reply {
            Reply::Hang => HttpConnectorFuture::new(std::future::pending()),
            reply => HttpConnectorFuture::ready(Ok(response(&reply))),
        }
    }
}

fn response(reply: &Reply) -> HttpResponse {
    let (status, body, retry_after) = match reply {
        Reply::Identity => (
            200,
            r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult>
    <Arn>arn:aws-us-gov:iam::123456789012:user/alice</Arn>
    <UserId>AIDATEST</UserId>
    <Account>123456789012</Account>
  </GetCallerIdentityResult>
  <ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>
</GetCallerIdentityResponse>"#
                .to_owned(),
            None,
        ),
        Reply::Error {
            status,
            code,
            retry_after,
        } => (
            *status,
            format!(
                r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>{code}</Code><Message>scripted {code}</Message></Error>
  <RequestId>req-2</RequestId>
</ErrorResponse>"#
            ),
            *retry_after,
        ),
        Reply::Raw { status, body } => (*status, (*body).to_owned(), None),
        Reply::Hang => unreachable!(),
    };
    let mut response = http_response(status, "text/xml", body);
    if let Some(value) = retry_after {
        response.headers_mut().insert("retry-after", value);
    }
    response
}

/// Records each preparation's signature, as the SDK hands the signed request over.
#[derive(Debug, Clone, Default)]
struct Signatures(Arc<Mutex<Vec<(String, String)>>>);

impl Intercept for Signatures {
    fn name(&self) -> &'static str {
        "Signatures"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let headers = context.request().headers();
        let get = |name| headers.get(name).unwrap_or_default().to_owned();
        self.0
            .lock()
            .unwrap()
            .push((get("authorization"), get("x-amz-date")));
        Ok(())
    }
}

// ---------------------------------------------------------------- the harness

fn admission(clock: Arc<TokioClock>) -> AdmissionHandle {
    let owner = Owner {
        pid: std::process::id(),
        generation: 1,
    };
    start_in_current_system(RuntimeConfig::simulated(owner), clock)
}

fn sts_client(clock: Arc<TokioClock>, signatures: Option<Signatures>) -> aws_sdk_sts::Client {
    let mut config = aws_sdk_sts::Config::builder()
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
        // As production (`sdk_config`): upload protection would time the admission wait.
        .stalled_stream_protection(tollgate_engine::aws::gated_stalled_stream_protection())
        .time_source(ClockTimeSource(clock));
    if let Some(signatures) = signatures {
        config = config.interceptor(signatures);
    }
    aws_sdk_sts::Client::from_conf(config.build())
}

/// Policy overrides for `sts:GetCallerIdentity`.
fn policies(json: &str) -> PolicyTable {
    PolicyTable::with_overrides(json, "test").unwrap()
}

fn identity() -> CallerIdentity {
    CallerIdentity::resolved(
        Partition::aws(),
        AccountId::new("123456789012").unwrap(),
        None,
    )
}

struct Harness {
    gate: AwsGate,
    client: aws_sdk_sts::Client,
    fake: FakeAws,
    telemetry: MemoryTelemetry,
    handle: AdmissionHandle,
    clock: Arc<TokioClock>,
}

fn harness(fake: FakeAws, policies: PolicyTable, signatures: Option<Signatures>) -> Harness {
    let clock = Arc::new(TokioClock::starting_at(START));
    let handle = admission(clock.clone());
    let telemetry = MemoryTelemetry::new();
    let gate = AwsGate::new(handle.clone(), policies, &identity(), fake.client())
        .with_retry(RetrySettings {
            jitter: Jitter::None,
            ..RetrySettings::default()
        })
        .with_telemetry(Arc::new(telemetry.clone()));
    Harness {
        gate,
        client: sts_client(clock.clone(), signatures),
        fake,
        telemetry,
        handle,
        clock,
    }
}

fn context(cancel: CancellationToken) -> CallContext {
    CallContext {
        scan_id: ScanId(7),
        collector: "test-collector",
        datasets: vec!["identity".into()],
        deadline: monotonic_now() + Duration::from_secs(3_600),
        cancel,
    }
}

impl Harness {
    async fn call(&self, ctx: &CallContext) -> Result<String, tollgate_engine::aws::CallError> {
        let client = self.client.clone();
        self.gate
            .call(ctx, "sts", "GetCallerIdentity", Some(REGION), move |http| {
                client
                    .get_caller_identity()
                    .customize()
                    .config_override(aws_sdk_sts::Config::builder().http_client(http))
                    .send()
            })
            .await
            .map(|out| out.account().unwrap_or_default().to_owned())
    }

    async fn retry_units(&self) -> u32 {
        let status = self.handle.status().await.unwrap();
        status[0].state.retry_units
    }

    async fn reservations(&self) -> usize {
        let status = self.handle.status().await.unwrap();
        status[0].state.reservations
    }

    fn dispatch_offsets(&self, from: Instant) -> Vec<Duration> {
        self.fake.seen().iter().map(|s| s.at - from).collect()
    }

    fn events(&self) -> Vec<AttemptEvent> {
        self.telemetry.events()
    }
}

// ---------------------------------------------------------------- (a) throttle, throttle, success

#[test]
fn throttled_twice_then_success_spends_two_units_and_refunds_one() {
    paused_system().block_on(async {
        let fake = FakeAws::new([throttle(), throttle(), Reply::Identity], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let start = monotonic_now();
        let account = h.call(&context(CancellationToken::new())).await.unwrap();
        assert_eq!(account, "123456789012");

        let at = h.dispatch_offsets(start);
        assert_eq!(at.len(), 3, "three physical attempts");
        // Jitter::None: backoff 1 s after the first throttle, 2 s after the second.
        assert!(at[1] - at[0] >= Duration::from_secs(1), "{at:?}");
        assert!(at[2] - at[1] >= Duration::from_secs(2), "{at:?}");
        // 20 - 2 spent + 1 refunded by the success.
        assert_eq!(h.retry_units().await, 19);
        assert_eq!(h.reservations().await, 0, "the reservation was released");

        let events = h.events();
        let outcomes: Vec<_> = events
            .iter()
            .map(|e| (e.attempt, e.outcome, e.retry_outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                (1, AttemptOutcome::Throttle, RetryOutcome::Retry),
                (2, AttemptOutcome::Throttle, RetryOutcome::Retry),
                (3, AttemptOutcome::Success, RetryOutcome::Done),
            ]
        );
        let last = events.last().unwrap();
        assert_eq!(
            last.quota.as_deref(),
            Some("aws/123456789012/us-east-1/sts:GetCallerIdentity")
        );
        assert_eq!(last.retry_count, 2);
        assert!(last.dispatched);
        assert_eq!(last.status_code, Some(200));
        assert_eq!(last.attribution.dataset.as_deref(), Some("identity"));
        assert_eq!(last.attribution.scan_id, "scan-0000000000000007");
        assert_eq!(events[0].error_code.as_deref(), Some("Throttling"));
        assert_eq!(
            last.cleanup_outcome,
            Some(tollgate_engine::aws::CleanupOutcome::Released)
        );
        assert_eq!(
            h.clock.now_ms() - START.as_micros() / 1_000,
            at[2].as_millis() as u64,
            "the call ended at its last dispatch"
        );
    });
}

trait NowMs {
    fn now_ms(&self) -> u64;
}

impl NowMs for TokioClock {
    fn now_ms(&self) -> u64 {
        tollgate_quota::Clock::now(self).as_micros() / 1_000
    }
}

// ---------------------------------------------------------------- (b) Retry-After

#[test]
fn retry_after_is_a_floor_for_the_backoff() {
    paused_system().block_on(async {
        let slow_down = Reply::Error {
            status: 503,
            code: "SlowDown",
            retry_after: Some("7"),
        };
        let fake = FakeAws::new([slow_down], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let start = monotonic_now();
        h.call(&context(CancellationToken::new())).await.unwrap();
        let at = h.dispatch_offsets(start);
        assert_eq!(at.len(), 2);
        assert!(
            at[1] - at[0] >= Duration::from_secs(7),
            "the retry went out after {:?}",
            at[1] - at[0]
        );
        assert_eq!(
            h.events()[0].outcome,
            AttemptOutcome::Throttle,
            "SlowDown on a 503 is throttling"
        );
    });
}

// ---------------------------------------------------------------- (c) 4-minute signature bound

#[test]
fn a_wait_past_four_minutes_reprepares_with_a_fresh_signature() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], Reply::Identity);
        let signatures = Signatures::default();
        // One request per 300 s: the second call waits 300 s for admission.
        let table = policies(
            r#"{"sts:GetCallerIdentity":{"ratePerSecond":0.0033333333333333335,"burst":1}}"#,
        );
        let h = harness(fake, table, Some(signatures.clone()));
        let ctx = context(CancellationToken::new());
        let start = monotonic_now();
        h.call(&ctx).await.unwrap();
        h.call(&ctx).await.unwrap();

        let at = h.dispatch_offsets(start);
        assert_eq!(at.len(), 2, "re-preparation sends nothing");
        assert!(at[1] >= Duration::from_secs(299), "{at:?}");

        let events = h.events();
        let second: Vec<_> = events[1..]
            .iter()
            .map(|e| (e.attempt, e.preparation_count, e.outcome, e.dispatched))
            .collect();
        assert_eq!(
            second,
            [
                (1, 1, AttemptOutcome::Reprepare, false),
                (1, 2, AttemptOutcome::Success, true),
            ],
            "the refresh neither counts an attempt nor sends"
        );
        assert!(events[1].queue_duration_ms >= 240_000);

        let signatures = signatures.0.lock().unwrap().clone();
        assert_eq!(signatures.len(), 3, "three preparations: {signatures:?}");
        let (first_auth, first_date) = &signatures[1];
        let (fresh_auth, fresh_date) = &signatures[2];
        assert_ne!(first_date, fresh_date, "X-Amz-Date moved on");
        assert_ne!(first_auth, fresh_auth, "a fresh signature");
        assert_eq!(h.retry_units().await, 20, "no retry unit spent");
    });
}

// ---------------------------------------------------------------- (d) cancellation

#[test]
fn cancellation_while_queued_dispatches_nothing() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], Reply::Identity);
        let table = policies(r#"{"sts:GetCallerIdentity":{"ratePerSecond":0.01,"burst":1}}"#);
        let h = Arc::new(harness(fake, table, None));
        let cancel = CancellationToken::new();
        let ctx = context(cancel.clone());
        h.call(&ctx).await.unwrap();
        let queued = {
            let h = h.clone();
            let ctx = ctx.clone();
            actix::spawn(async move { h.call(&ctx).await })
        };
        tokio::time::sleep(Duration::from_secs(10)).await;
        cancel.cancel();
        let err = queued.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Cancelled);
        assert_eq!(err.attempts(), 0);
        // Long after, still nothing more went out.
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(h.fake.seen().len(), 1);
        let last = h.events().last().cloned().unwrap();
        assert_eq!(
            (last.outcome, last.dispatched, last.transport_duration_ms),
            (AttemptOutcome::Cancelled, false, 0)
        );
        assert_eq!(h.reservations().await, 0);
    });
}

#[test]
fn cancellation_in_flight_aborts_the_request_and_releases_the_slot() {
    paused_system().block_on(async {
        let fake = FakeAws::new([Reply::Hang], Reply::Identity);
        let h = Arc::new(harness(fake, PolicyTable::defaults(), None));
        let cancel = CancellationToken::new();
        let ctx = context(cancel.clone());
        let call = {
            let h = h.clone();
            actix::spawn(async move { h.call(&ctx).await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(h.fake.seen().len(), 1, "in flight");
        cancel.cancel();
        let err = call.await.unwrap().unwrap_err();
        assert_eq!((err.kind(), err.attempts()), (CallErrorKind::Cancelled, 1));
        let last = h.events().last().cloned().unwrap();
        assert_eq!(
            (last.outcome, last.dispatched),
            (AttemptOutcome::Cancelled, true)
        );
        assert!(last.transport_duration_ms >= 5_000);
        assert_eq!(h.reservations().await, 0);
        assert_eq!(
            h.retry_units().await,
            20,
            "an aborted request is no feedback"
        );
    });
}

// ---------------------------------------------------------------- (e) fatal

#[test]
fn access_denied_is_fatal_after_one_attempt() {
    paused_system().block_on(async {
        let denied = Reply::Error {
            status: 403,
            code: "AccessDenied",
            retry_after: None,
        };
        let fake = FakeAws::new([], denied);
        let h = harness(fake, PolicyTable::defaults(), None);
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Fatal);
        assert_eq!(
            (err.code(), err.status(), err.attempts()),
            (Some("AccessDenied"), Some(403), 1)
        );
        assert!(err.is_access_denied());
        assert_eq!(h.fake.seen().len(), 1);
        assert_eq!(h.retry_units().await, 20);
        let last = h.events().last().cloned().unwrap();
        assert_eq!(
            (last.outcome, last.retry_outcome),
            (AttemptOutcome::Fatal, RetryOutcome::NotRetryable)
        );
    });
}

// ---------------------------------------------------------------- (f) limits

#[test]
fn at_most_six_physical_attempts() {
    paused_system().block_on(async {
        let unavailable = Reply::Error {
            status: 503,
            code: "ServiceUnavailable",
            retry_after: None,
        };
        let fake = FakeAws::new([], unavailable);
        let h = harness(fake, PolicyTable::defaults(), None);
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!((err.kind(), err.attempts()), (CallErrorKind::Transient, 6));
        assert_eq!(h.fake.seen().len(), 6);
        assert_eq!(h.retry_units().await, 15, "five retries spent");
        let last = h.events().last().cloned().unwrap();
        assert_eq!(last.retry_outcome, RetryOutcome::AttemptsExhausted);
    });
}

#[test]
fn max_attempts_is_configurable() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], throttle());
        let mut h = harness(fake, PolicyTable::defaults(), None);
        h.gate = h.gate.clone().with_retry(RetrySettings {
            max_attempts: NonZeroU32::new(2).unwrap(),
            jitter: Jitter::None,
            ..RetrySettings::default()
        });
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!((err.kind(), err.attempts()), (CallErrorKind::Throttled, 2));
    });
}

#[test]
fn an_empty_retry_allowance_stops_retries_with_the_last_error() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], throttle());
        let table = policies(r#"{"sts:GetCallerIdentity":{"retryCapacity":2}}"#);
        let h = harness(fake, table, None);
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::RetryAllowanceExhausted);
        assert_eq!((err.code(), err.attempts()), (Some("Throttling"), 3));
        assert_eq!(h.fake.seen().len(), 3, "1 first attempt + 2 retries");
        let last = h.events().last().cloned().unwrap();
        assert_eq!(
            (last.outcome, last.dispatched),
            (AttemptOutcome::Exhausted, false)
        );
        // A first attempt still goes out with the allowance empty.
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::RetryAllowanceExhausted);
        assert_eq!(h.fake.seen().len(), 4);
    });
}

// ---------------------------------------------------------------- ungated use

#[test]
fn a_client_used_without_the_gate_sends_nothing() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let err = h.client.get_caller_identity().send().await.unwrap_err();
        let text = format!(
            "{}",
            aws_smithy_types::error::display::DisplayErrorContext(&err)
        );
        assert!(text.contains("AwsGate::call"), "{text}");
        assert!(h.fake.seen().is_empty());
    });
}

/// A client whose HTTP client is the gate's dispatch (as every client built from
/// `sdk_config`): no override needed inside `AwsGate::call`, and nothing sent outside it.
fn dispatching_client(h: &Harness) -> aws_sdk_sts::Client {
    let config = h
        .client
        .config()
        .to_builder()
        .http_client(GateDispatch::new(h.fake.client()))
        .build();
    aws_sdk_sts::Client::from_conf(config)
}

#[test]
fn a_dispatching_client_sends_inside_a_gated_call_and_refuses_outside_it() {
    paused_system().block_on(async {
        let fake = FakeAws::new([throttle()], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let client = dispatching_client(&h);
        let ctx = context(CancellationToken::new());
        let account = h
            .gate
            .call(&ctx, "sts", "GetCallerIdentity", Some(REGION), |_| {
                client.get_caller_identity().send()
            })
            .await
            .unwrap();
        assert_eq!(account.account(), Some("123456789012"));
        // The throttle and the retry both went through final admission.
        assert_eq!(h.fake.seen().len(), 2);
        let dispatched: Vec<bool> = h.events().iter().map(|e| e.dispatched).collect();
        assert_eq!(dispatched, [true, true]);

        let err = client.get_caller_identity().send().await.unwrap_err();
        let text = format!(
            "{}",
            aws_smithy_types::error::display::DisplayErrorContext(&err)
        );
        assert!(text.contains("AwsGate::call"), "{text}");
        assert_eq!(h.fake.seen().len(), 2, "nothing left outside the gate");
    });
}

#[test]
fn a_second_request_inside_one_gated_attempt_is_refused_not_carried_on_its_grant() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let client = dispatching_client(&h);
        let ctx = context(CancellationToken::new());
        let refused = Arc::new(std::sync::Mutex::new(None));
        let answer = h
            .gate
            .call(&ctx, "sts", "GetCallerIdentity", Some(REGION), |_| {
                let (client, refused) = (client.clone(), refused.clone());
                async move {
                    let first = client.get_caller_identity().send().await;
                    if let Err(err) = client.get_caller_identity().send().await {
                        let text = aws_smithy_types::error::display::DisplayErrorContext(&err);
                        *refused.lock().unwrap() = Some(format!("{text}"));
                    }
                    first
                }
            })
            .await;
        let text = refused
            .lock()
            .unwrap()
            .clone()
            .expect("the second request failed");
        assert!(
            text.contains("one gated attempt sends one request"),
            "{text}"
        );
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(h.fake.seen().len(), 1, "one attempt, one request");
    });
}

// ---------------------------------------------------------------- (g) identity

#[test]
fn identity_resolves_account_and_partition_from_the_arn() {
    paused_system().block_on(async {
        let fake = FakeAws::new([throttle()], Reply::Identity);
        let clock = Arc::new(TokioClock::starting_at(START));
        let client = sts_client(clock, None);
        let telemetry = MemoryTelemetry::new();
        let id = resolve_identity(
            &client,
            &fake.client(),
            RunId::new("run-1").unwrap(),
            &CancellationToken::new(),
            monotonic_now() + Duration::from_secs(60),
            &telemetry,
        )
        .await
        .unwrap();
        assert!(id.is_resolved());
        assert_eq!(id.account.to_string(), "123456789012");
        assert_eq!(id.partition.as_str(), "aws-us-gov");
        assert_eq!(fake.seen().len(), 2, "one throttle, one retry");
        assert!(telemetry.events().iter().all(|e| e.quota.is_none()));
    });
}

#[test]
fn identity_failure_falls_back_to_an_unresolved_run_scope() {
    paused_system().block_on(async {
        let fake = FakeAws::new(
            [],
            Reply::Error {
                status: 500,
                code: "InternalFailure",
                retry_after: None,
            },
        );
        let clock = Arc::new(TokioClock::starting_at(START));
        let client = sts_client(clock, None);
        let id = resolve_identity(
            &client,
            &fake.client(),
            RunId::new("run-42").unwrap(),
            &CancellationToken::new(),
            monotonic_now() + Duration::from_secs(60),
            &MemoryTelemetry::new(),
        )
        .await
        .unwrap();
        assert!(!id.is_resolved());
        assert_eq!(id.account.to_string(), "unresolved:run-42");
        assert_eq!(fake.seen().len(), 3, "its own budget: at most 3 attempts");
        assert!(id.unresolved_reason.unwrap().contains("InternalFailure"));

        // The gate then keys quotas by the run scope.
        let handle = admission(Arc::new(TokioClock::starting_at(START)));
        let gate = AwsGate::new(
            handle,
            PolicyTable::defaults(),
            &CallerIdentity::unresolved(RunId::new("run-42").unwrap(), Some(REGION), "x"),
            fake.client(),
        );
        let key = gate.quota_key("s3", "ListBuckets", Some(REGION)).unwrap();
        assert!(
            key.to_string().starts_with("aws/unresolved:run-42/"),
            "{key}"
        );
    });
}

#[test]
fn identity_cancellation_is_an_error_not_a_fallback() {
    paused_system().block_on(async {
        let fake = FakeAws::new([Reply::Hang], Reply::Identity);
        let clock = Arc::new(TokioClock::starting_at(START));
        let client = sts_client(clock, None);
        let cancel = CancellationToken::new();
        let cancel_soon = cancel.clone();
        actix::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            cancel_soon.cancel();
        });
        let err = resolve_identity(
            &client,
            &fake.client(),
            RunId::new("run-3").unwrap(),
            &cancel,
            monotonic_now() + Duration::from_secs(60),
            &MemoryTelemetry::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Cancelled);
    });
}

// ---------------------------------------------------------------- S3 through the gate

fn s3_client(clock: Arc<TokioClock>) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new(REGION))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "AKIDTEST",
            "test-secret",
            None,
            None,
            "test",
        ))
        .http_client(UngatedRefusal)
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(aws_sdk_s3::config::StalledStreamProtectionConfig::disabled())
        .time_source(ClockTimeSource(clock))
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// S3's restXml answers go through the same path: a listing, and the "no lifecycle
/// configuration" answer collectors treat as zero rules (fatal, not retried, code kept).
#[test]
fn s3_listing_and_missing_lifecycle_configuration() {
    paused_system().block_on(async {
        let buckets = Reply::Raw {
            status: 200,
            body: r#"<?xml version="1.0" encoding="UTF-8"?>
<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner><ID>owner</ID></Owner>
  <Buckets><Bucket><Name>logs</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets>
</ListAllMyBucketsResult>"#,
        };
        let no_lifecycle = Reply::Raw {
            status: 404,
            body: r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchLifecycleConfiguration</Code><Message>The lifecycle configuration does not exist</Message><BucketName>logs</BucketName><RequestId>r</RequestId></Error>"#,
        };
        let fake = FakeAws::new([throttle_s3(), buckets, no_lifecycle], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let s3 = s3_client(h.clock.clone());
        let ctx = context(CancellationToken::new());
        let listed = h
            .gate
            .call(&ctx, "s3", "ListBuckets", Some(REGION), |http| {
                s3.list_buckets()
                    .customize()
                    .config_override(aws_sdk_s3::Config::builder().http_client(http))
                    .send()
            })
            .await
            .unwrap();
        let names: Vec<_> = listed.buckets().iter().filter_map(|b| b.name()).collect();
        assert_eq!(names, ["logs"]);
        let err = h
            .gate
            .call(&ctx, "s3", "GetBucketLifecycleConfiguration", Some(REGION), |http| {
                s3.get_bucket_lifecycle_configuration()
                    .bucket("logs")
                    .customize()
                    .config_override(aws_sdk_s3::Config::builder().http_client(http))
                    .send()
            })
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Fatal);
        assert_eq!(
            (err.code(), err.status(), err.attempts()),
            (Some("NoSuchLifecycleConfiguration"), Some(404), 1)
        );
        let quotas: Vec<_> = h.events().iter().map(|e| (e.quota.clone().unwrap(), e.outcome)).collect();
        assert_eq!(
            quotas,
            [
                ("aws/123456789012/us-east-1/s3:ListBuckets".to_owned(), AttemptOutcome::Throttle),
                ("aws/123456789012/us-east-1/s3:ListBuckets".to_owned(), AttemptOutcome::Success),
                (
                    "aws/123456789012/us-east-1/s3:GetBucketLifecycleConfiguration".to_owned(),
                    AttemptOutcome::Fatal
                ),
            ]
        );
    });
}

/// S3's throttling answer: `SlowDown` on a 503.
fn throttle_s3() -> Reply {
    Reply::Raw {
        status: 503,
        body: r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>r</RequestId></Error>"#,
    }
}

// ---------------------------------------------------------------- sdk_config

/// `sdk_config` loads without a default HTTPS client feature, disables SDK retries and
/// operation timeouts, and leaves service clients with the refusing client.
#[test]
fn sdk_config_disables_sdk_retries_and_refuses_ungated_requests() {
    paused_system().block_on(async {
        let fake = FakeAws::new([], Reply::Identity);
        let sdk = tollgate_engine::aws::sdk_config_with(
            fake.client(),
            None,
            Some(REGION),
            Some("http://127.0.0.1:9"),
        )
        .await;
        assert_eq!(sdk.retry_config().map(|r| r.max_attempts()), Some(1));
        let timeouts = sdk.timeout_config().unwrap();
        assert_eq!(timeouts.operation_timeout(), None);
        assert_eq!(timeouts.operation_attempt_timeout(), None);
        let sts = aws_sdk_sts::Client::from_conf(
            aws_sdk_sts::config::Builder::from(&sdk)
                .credentials_provider(Credentials::new("AKIDTEST", "s", None, None, "test"))
                .build(),
        );
        let err = sts.get_caller_identity().send().await.unwrap_err();
        let text = format!(
            "{}",
            aws_smithy_types::error::display::DisplayErrorContext(&err)
        );
        assert!(text.contains("AwsGate::call"), "{text}");
        assert!(fake.seen().is_empty());
        // Through the gate's inner client, the same config reaches the transport.
        let out = sts
            .get_caller_identity()
            .customize()
            .config_override(aws_sdk_sts::Config::builder().http_client(fake.client()))
            .send()
            .await
            .unwrap();
        assert_eq!(out.account(), Some("123456789012"));
        assert_eq!(fake.seen().len(), 1);
    });
}

// ---------------------------------------------------------------- (g) outages: breakers and Retry-After

fn unavailable() -> Reply {
    Reply::Error {
        status: 503,
        code: "ServiceUnavailable",
        retry_after: None,
    }
}

fn context_for(deadline: Duration) -> CallContext {
    CallContext {
        deadline: monotonic_now() + deadline,
        ..context(CancellationToken::new())
    }
}

#[test]
fn a_call_meeting_a_breaker_open_past_its_deadline_fails_unsent_naming_the_scope() {
    paused_system().block_on(async {
        let h = harness(
            FakeAws::new([], unavailable()),
            PolicyTable::defaults(),
            None,
        );
        // The five attempts are sent at 0, 0.5, 1.5, 3.5 and 7.5 s (the key's cooldown
        // after each failure, longer than its jittered backoff); the fifth 503 opens the
        // scope's breaker until 12.5 s, after an 11.5 s deadline, so the sixth attempt
        // (ready by 10.7 s at the latest) is not sent.
        let err = h
            .call(&context_for(Duration::from_millis(11_500)))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::BreakerOpen, "{err}");
        assert_eq!(h.fake.seen().len(), 5);
        assert!(
            err.to_string().contains("aws/123456789012/us-east-1/sts"),
            "{err}"
        );
        let last = h.events().last().cloned().unwrap();
        assert_eq!(last.retry_outcome, RetryOutcome::BreakerOpen);
        assert_eq!(h.reservations().await, 0, "the reservation was released");
    });
}

#[test]
fn a_call_whose_deadline_allows_waits_for_the_probe_and_completes_after_the_outage() {
    paused_system().block_on(async {
        let script = std::iter::repeat_n(unavailable(), 5);
        let h = harness(
            FakeAws::new(script, Reply::Identity),
            PolicyTable::defaults(),
            None,
        );
        let start = monotonic_now();
        let account = h
            .call(&context_for(Duration::from_secs(600)))
            .await
            .unwrap();
        assert_eq!(account, "123456789012");
        let at = h.dispatch_offsets(start);
        assert_eq!(at.len(), 6, "five failures, then the probe: {at:?}");
        assert!(
            at[5] - at[4] >= tollgate_quota::BASE_OPEN,
            "nothing is sent while the breaker is open: {at:?}"
        );
        let status = h.handle.coordination().await.unwrap();
        assert!(
            status
                .breakers
                .iter()
                .all(|b| matches!(b.state, tollgate_quota::BreakerState::Closed { .. })),
            "closed again: {status:?}"
        );
    });
}

/// Issue 24: calls that passed the scope's closed breaker and then queued behind the
/// failing key's cooldown were sent one per cooldown (8 s) through the open breaker, so
/// the breaker held back nothing. Asked again after their long wait, they find it open
/// and wait for the probe: after the opening, the only attempts are the probes, one per
/// re-opening (at least 10 s apart).
#[test]
fn calls_queued_when_the_breaker_opens_are_not_sent_through_it() {
    paused_system().block_on(async {
        let script = std::iter::repeat_n(unavailable(), 8);
        // A slow key: the ten calls queue for their grants instead of going at once.
        let table = policies(r#"{"sts:GetCallerIdentity":{"ratePerSecond":20,"burst":1}}"#);
        let h = harness(FakeAws::new(script, Reply::Identity), table, None);
        let start = monotonic_now();
        let ctx = context_for(Duration::from_secs(600));
        let calls = futures_util::future::join_all((0..10).map(|_| h.call(&ctx))).await;
        assert!(calls.iter().all(Result::is_ok), "{calls:?}");
        let at = h.dispatch_offsets(start);
        // Eight failures, then each call's success. The fifth failure opens the breaker;
        // after it only probes go: the first when the 5 s opening ends, the next two one
        // re-opening (at least 10 s) apart. Without asking the breaker again after the
        // wait, a queued call went every 8 s (the key's cooldown).
        assert_eq!(at.len(), 8 + 10, "{at:?}");
        assert!(at[5] - at[4] >= tollgate_quota::BASE_OPEN, "{at:?}");
        for pair in at[5..9].windows(2) {
            assert!(
                pair[1] - pair[0] >= tollgate_quota::MIN_REOPEN,
                "only probes go through the open breaker, one per re-opening: {at:?}"
            );
        }
    });
}

#[test]
fn a_throttle_with_retry_after_pauses_every_caller_of_the_key() {
    paused_system().block_on(async {
        let paused = Reply::Error {
            status: 400,
            code: "Throttling",
            retry_after: Some("30"),
        };
        let h = Arc::new(harness(
            FakeAws::new([paused], Reply::Identity),
            PolicyTable::defaults(),
            None,
        ));
        let start = monotonic_now();
        let first = {
            let h = h.clone();
            actix::spawn(async move { h.call(&context(CancellationToken::new())).await })
        };
        // Another caller of the same key arrives 1 s later: without the key-wide pause it
        // would go after the penalty's 500 ms cooldown.
        tokio::time::sleep(Duration::from_secs(1)).await;
        h.call(&context(CancellationToken::new())).await.unwrap();
        first.await.unwrap().unwrap();
        let at = h.dispatch_offsets(start);
        assert_eq!(at.len(), 3, "{at:?}");
        assert!(
            at[1..].iter().all(|t| *t >= Duration::from_secs(30)),
            "nobody went before the Retry-After: {at:?}"
        );
    });
}

// ---------------------------------------------------------------- (h) issue 24: classification

const RATE_EXCEEDED: &str = r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>RateExceeded</Code><Message>Rate exceeded</Message></Error>
  <RequestId>req-3</RequestId>
</ErrorResponse>"#;

const MAXIMUM_KEYS: &str = r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>LimitExceededException</Code><Message>You have reached the maximum number of keys</Message></Error>
  <RequestId>req-4</RequestId>
</ErrorResponse>"#;

#[test]
fn a_rate_exceeded_400_is_retried_and_slows_the_key() {
    paused_system().block_on(async {
        let rate_exceeded = Reply::Raw {
            status: 400,
            body: RATE_EXCEEDED,
        };
        let fake = FakeAws::new([rate_exceeded], Reply::Identity);
        let h = harness(fake, PolicyTable::defaults(), None);
        let ctx = context(CancellationToken::new());
        // Look at the key while the call backs off (1 s after a throttle, no jitter).
        let (result, during) = tokio::join!(h.call(&ctx), async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            h.handle.status().await.unwrap()[0].state.clone()
        });
        assert_eq!(result.unwrap(), "123456789012");
        assert_eq!(h.fake.seen().len(), 2, "retried once");
        assert!(during.penalty_steps >= 1, "{during:?}");
        assert!(
            during.effective_rate_per_second < during.policy.rate_per_second(),
            "the key was slowed: {during:?}"
        );
        let outcomes: Vec<_> = h
            .events()
            .iter()
            .map(|e| (e.outcome, e.retry_outcome, e.error_code.clone()))
            .collect();
        assert_eq!(
            outcomes,
            [
                (
                    AttemptOutcome::Throttle,
                    RetryOutcome::Retry,
                    Some("RateExceeded".to_owned())
                ),
                (AttemptOutcome::Success, RetryOutcome::Done, None),
            ]
        );
    });
}

#[test]
fn a_limit_exceeded_about_a_resource_count_stays_fatal_and_is_not_retried() {
    paused_system().block_on(async {
        let maximum_keys = Reply::Raw {
            status: 400,
            body: MAXIMUM_KEYS,
        };
        let fake = FakeAws::new([], maximum_keys);
        let h = harness(fake, PolicyTable::defaults(), None);
        let err = h
            .call(&context(CancellationToken::new()))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::Fatal, "{err}");
        assert_eq!(
            (err.code(), err.attempts()),
            (Some("LimitExceededException"), 1)
        );
        assert_eq!(h.fake.seen().len(), 1, "not retried");
        assert_eq!(h.retry_units().await, 20);
        let state = h.handle.status().await.unwrap()[0].state.clone();
        assert_eq!(
            state.penalty_steps, 0,
            "a resource count says nothing of rate"
        );
        let last = h.events().last().cloned().unwrap();
        assert_eq!(
            (last.outcome, last.retry_outcome),
            (AttemptOutcome::Fatal, RetryOutcome::NotRetryable)
        );
    });
}

// ---------------------------------------------------------------- a downstream throttle

/// A throttle whose message names the downstream service, as a Cloud Control handler's
/// does (`Rate exceeded (Service: Iam, ...)`); carried by STS's error shape here, since
/// the feedback rule reads the code's class and the message, not the service.
const DOWNSTREAM: &str = r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded (Service: Iam, Status Code: 400, Request ID: r1)</Message></Error>
  <RequestId>req-3</RequestId>
</ErrorResponse>"#;

/// One call charged beside `iam:ListRoles`, answered `answer` at every attempt (a success
/// would lift the penalty it was given): the penalty steps of the call's own key and of
/// the underlying key when it gives up.
fn penalties_after(answer: Reply) -> (u8, u8) {
    paused_system().block_on(async {
        let h = harness(FakeAws::new([], answer), PolicyTable::defaults(), None);
        let client = h.client.clone();
        let underlying = vec![("iam".to_string(), "ListRoles".to_string())];
        let ctx = context(CancellationToken::new());
        let got = h
            .gate
            .call_with_underlying(
                &ctx,
                ("sts", "GetCallerIdentity"),
                Some(REGION),
                &underlying,
                move |http| {
                    client
                        .get_caller_identity()
                        .customize()
                        .config_override(aws_sdk_sts::Config::builder().http_client(http))
                        .send()
                },
            )
            .await;
        let e = got.unwrap_err();
        assert_eq!(e.kind(), CallErrorKind::Throttled, "{e}");
        assert!(h.fake.seen().len() > 1, "retried");
        // Feedback is told, not asked: let it reach the actors.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let status = h.handle.status().await.unwrap();
        let steps = |suffix: &str| {
            status
                .iter()
                .find(|k| k.key.ends_with(suffix))
                .unwrap_or_else(|| panic!("no {suffix} key: {status:?}"))
                .state
                .penalty_steps
        };
        (steps("sts:GetCallerIdentity"), steps("iam:ListRoles"))
    })
}

#[test]
fn a_downstream_throttle_slows_the_underlying_key_and_not_the_calls_own() {
    let (own, iam) = penalties_after(Reply::Raw {
        status: 400,
        body: DOWNSTREAM,
    });
    assert_eq!(own, 0, "the call's own service answered");
    assert!(iam > 0, "the throttle is IAM's: {iam}");
}

#[test]
fn a_throttle_naming_no_downstream_service_slows_the_calls_own_key() {
    let (own, iam) = penalties_after(throttle());
    assert!(own > 0, "its own throttle: {own}");
    assert_eq!(iam, 0, "charged, but not throttled");
}
