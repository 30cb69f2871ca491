//! A real STS client whose every call goes through the gate over a fake transport, signed
//! by the provider a test gives (no identity cache: each call asks the provider). The
//! credential tests (`credentials_mid_scan.rs`, `credential_provider_retries.rs`) differ in
//! the provider and the transport's answer, not in this wiring.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_sts::config::retry::RetryConfig;
use aws_sdk_sts::config::{BehaviorVersion, IdentityCache, Region};
use aws_smithy_runtime_api::client::http::HttpConnectorFuture;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{start_in_current_system, AdmissionHandle, RuntimeConfig, TokioClock};
use tollgate_engine::aws::{
    gated_timeouts, AwsGate, CallContext, CallError, CallerIdentity, ClockTimeSource,
    MemoryTelemetry, RetrySettings, ScanId, UngatedRefusal,
};
use tollgate_quota::key::AccountId;
use tollgate_quota::{Owner, Partition, PolicyTable, Timestamp};
use tollgate_sim::transport::{response, FakeTransport};

/// The simulated clock's start.
pub const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);

/// STS's answer to `GetCallerIdentity` for account 123456789012.
pub const IDENTITY_XML: &str = r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/a</Arn><UserId>X</UserId><Account>123456789012</Account></GetCallerIdentityResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>
</GetCallerIdentityResponse>"#;

/// What the transport answers to every request: status and XML body.
pub struct Reply {
    pub status: u16,
    pub body: &'static str,
}

pub struct StsGate {
    pub gate: AwsGate,
    pub client: aws_sdk_sts::Client,
    /// Requests the transport received.
    pub sent: Arc<AtomicU32>,
    pub telemetry: MemoryTelemetry,
    pub handle: AdmissionHandle,
}

/// The gate (its own key actors on a simulated clock, inside the current actix system)
/// and an STS client signing with `provider`, over a transport answering `reply`.
pub fn sts_gate(
    provider: impl ProvideCredentials + 'static,
    reply: Reply,
    retry: RetrySettings,
) -> StsGate {
    let clock = Arc::new(TokioClock::starting_at(START));
    let handle = start_in_current_system(
        RuntimeConfig::simulated(Owner {
            pid: std::process::id(),
            generation: 1,
        }),
        clock.clone(),
    );
    let sent = Arc::new(AtomicU32::new(0));
    let counter = sent.clone();
    let transport = FakeTransport::new(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        HttpConnectorFuture::ready(Ok(response(reply.status, "text/xml", reply.body)))
    });
    let telemetry = MemoryTelemetry::new();
    let identity = CallerIdentity::resolved(
        Partition::aws(),
        AccountId::new("123456789012").unwrap(),
        None,
    );
    let gate = AwsGate::new(
        handle.clone(),
        PolicyTable::defaults(),
        &identity,
        transport.http_client(),
    )
    .with_retry(retry)
    .with_telemetry(Arc::new(telemetry.clone()));
    let config = aws_sdk_sts::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(provider)
        .identity_cache(IdentityCache::no_cache())
        .http_client(UngatedRefusal)
        .retry_config(RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .time_source(ClockTimeSource(clock));
    StsGate {
        gate,
        client: aws_sdk_sts::Client::from_conf(config.build()),
        sent,
        telemetry,
        handle,
    }
}

impl StsGate {
    /// One `GetCallerIdentity` through the gate, as scan `scan_id`'s kms-keys collector.
    pub async fn call(&self, scan_id: u64) -> Result<(), CallError> {
        let ctx = CallContext {
            scan_id: ScanId(scan_id),
            collector: "test-collector",
            datasets: vec!["kms-keys".into()],
            deadline: monotonic_now() + Duration::from_secs(3_600),
            cancel: CancellationToken::new(),
        };
        let client = self.client.clone();
        self.gate
            .call(
                &ctx,
                "sts",
                "GetCallerIdentity",
                Some("us-east-1"),
                move |http| {
                    client
                        .get_caller_identity()
                        .customize()
                        .config_override(aws_sdk_sts::Config::builder().http_client(http))
                        .send()
                },
            )
            .await
            .map(|_| ())
    }
}
