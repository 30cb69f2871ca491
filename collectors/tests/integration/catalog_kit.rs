//! The catalog tests' set-up: the fixture simulator behind a real gate on a fresh
//! simulated coordinator, in paused time, with the SDK configuration a scan would have
//! (its requests refused unless sent through the gate).

use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::Credentials;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_engine::aws::{
    gated_stalled_stream_protection, gated_timeouts, AwsGate, CallContext, CallerIdentity,
    ClockTimeSource, MemoryTelemetry, ScanId, UngatedRefusal,
};
use tollgate_quota::key::AccountId;
use tollgate_quota::{Owner, Partition, PolicyTable, Timestamp};
use tollgate_sim::{Scenario, Simulator};

/// The scenario's account (the gate's keys name it).
pub const ACCOUNT: &str = "123456789012";

/// The simulator, the gate in front of it, the SDK configuration, the gate's telemetry.
pub struct Kit {
    pub sim: Simulator,
    pub gate: AwsGate,
    pub sdk: aws_config::SdkConfig,
    pub telemetry: MemoryTelemetry,
}

/// Call inside a paused actix system (`paused_system().block_on`).
pub fn kit(scenario: &str) -> Kit {
    kit_with(scenario, PolicyTable::defaults())
}

/// [`kit`] with these policies.
pub fn kit_with(scenario: &str, policies: PolicyTable) -> Kit {
    let sim = Simulator::new(Scenario::parse(scenario, "<catalog>").expect("a valid scenario"));
    let clock = Arc::new(TokioClock::starting_at(Timestamp::from_millis(
        1_800_000_000_000,
    )));
    let owner = Owner {
        pid: 1,
        generation: 1,
    };
    let admission = start_in_current_system(RuntimeConfig::simulated(owner), clock.clone());
    let telemetry = MemoryTelemetry::new();
    let identity =
        CallerIdentity::resolved(Partition::aws(), AccountId::new(ACCOUNT).unwrap(), None);
    let gate = AwsGate::new(admission, policies, &identity, sim.http_client())
        .with_telemetry(Arc::new(telemetry.clone()));
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url("http://sim.invalid")
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST", "secret", None, None, "t",
            )),
        )
        .http_client(UngatedRefusal)
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(gated_stalled_stream_protection())
        .time_source(ClockTimeSource(clock))
        .build();
    Kit {
        sim,
        gate,
        sdk,
        telemetry,
    }
}

/// A call context with a long deadline.
pub fn context() -> CallContext {
    CallContext {
        scan_id: ScanId(36),
        collector: "catalog",
        datasets: Vec::new(),
        deadline: monotonic_now() + Duration::from_secs(600),
        cancel: CancellationToken::new(),
    }
}

/// The canonical key of `region`'s non-search budget.
pub fn non_search(region: &str) -> String {
    format!("aws/{ACCOUNT}/{region}/resource-explorer-2:non-search")
}
