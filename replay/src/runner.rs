//! Running a script: the real quota actors and the real gate on a paused clock.
//!
//! The replay owns one thread. On it, an actix system runs over a current-thread tokio
//! runtime whose clock is paused from the start, so simulated time advances only when
//! every task waits on a timer: each admission decision, actor wake-up, backoff and
//! scripted transport time happens at its exact simulated instant, whatever the host's
//! load. Time 0 is the runtime's start.
//!
//! What runs is production code: the quota actors and registry over a fresh
//! `MemoryStore` (tollgate-storage) (nothing on disk, nothing shared with a
//! real admission directory),
//! reached through [`AdmissionHandle`]s; per request, an [`AwsGate`] for the request's
//! account whose inner HTTP client is the request's [`ScriptedTransport`]; and a real SDK
//! client (KMS `ListKeys`, an awsJson 1.1 operation like CloudWatch Logs'
//! `DescribeLogStreams`, for which the workspace has no SDK crate) that signs and sends
//! each attempt through the gate's connector. The quota key comes from the script's
//! `service` and `operation`, not from the carrier operation.
//!
//! Processes: each `process` number stands for a separate process sharing one admission
//! directory. The lowest number hosts the actors (the coordinator); every process gets its
//! own admission handle with its own owner identity (`pid` = the process number) on those
//! actors, which is what the coordinator does for each client process (without the
//! socket), and its own gates and retry owners.
//!
//! Scheduling: at each instant, requests start (in script order), then cancellations
//! run: the request's admission scope is cancelled (queued waiters never start) and its
//! cancellation token fires (an in-flight attempt is aborted). Every request's deadline
//! is the script's `deadline_ms` from time 0, like a scan's.
//!
//! Jitter: the retry owner draws from `fastrand`'s thread-local generator; the replay
//! seeds it on its own thread, so a replay with the same seed is reproducible and no
//! production code changes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_kms::config::retry::RetryConfig;
use aws_sdk_kms::config::{BehaviorVersion, Credentials, Region};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;
use tollgate_actors::{
    start_in_current_system, AdmissionHandle, KeyStatus, RuntimeConfig, Schedules, TokioClock,
};
use tollgate_quota::{DatapointCharge, Owner, Partition, WallClock};

use crate::report::{Report, RequestReport};
use crate::script::{Script, ScriptedRequest};
use crate::transport::ScriptedTransport;
use crate::ReplayError;
use tollgate_engine::aws::{
    gated_stalled_stream_protection, gated_timeouts, AwsGate, CallContext, CallError,
    CallerIdentity, ClockTimeSource, MemoryTelemetry, ScanId, UngatedRefusal,
};

/// The carrier region of the SDK client (requests keep their own region in their key).
const CARRIER_REGION: &str = "us-east-1";

/// How to run a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Seed of the jitter generator.
    pub seed: u64,
}

/// The default jitter seed.
pub const DEFAULT_SEED: u64 = 1;

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { seed: DEFAULT_SEED }
    }
}

/// Run `script` on its own thread in simulated time and report what happened.
pub fn run(script: &Script, options: ReplayOptions) -> Result<Report, ReplayError> {
    let script = script.clone();
    std::thread::Builder::new()
        .name("tollgate-replay".into())
        .spawn(move || run_here(script, options))
        .map_err(|e| ReplayError::Runtime(format!("starting the replay thread: {e}")))?
        .join()
        .map_err(|_| ReplayError::Runtime("the replay thread panicked".into()))?
}

fn run_here(script: Script, options: ReplayOptions) -> Result<Report, ReplayError> {
    fastrand::seed(options.seed);
    let mut report = tollgate_actors::paused_system().block_on(simulate(script))?;
    report.seed = options.seed;
    Ok(report)
}

/// One request's task result.
struct Finished {
    index: usize,
    started: Duration,
    ended: Duration,
    error: Option<CallError>,
    transport: ScriptedTransport,
    /// The call's attempt events: what each dispatched attempt was charged.
    telemetry: MemoryTelemetry,
}

async fn simulate(script: Script) -> Result<Report, ReplayError> {
    let origin = tollgate_actors::clock::monotonic_now();
    // The admission clock reads the script's `start_at` at time 0 (Unix time, like the real
    // clock), so schedules and resets fall where they would, and signatures and stored
    // timestamps are reproducible.
    let clock = Arc::new(TokioClock::starting_at(
        script.start_at.to_timestamp(WallClock::UNIX_EPOCH),
    ));
    let handles = admission_handles(&script, clock.clone())?;
    let replay = Replay {
        kms: carrier_client(clock),
        origin,
        deadline: origin + script.deadline,
        script: Arc::new(script),
    };
    let finished = replay.run_timeline(&handles).await?;
    let elapsed = finished.iter().map(|f| f.ended).max().unwrap_or_default();
    let requests = finished
        .into_iter()
        .map(|f| {
            RequestReport::new(
                &replay.script.requests[f.index],
                f.started,
                f.ended,
                f.error,
                &f.transport.exchanges(),
                &dispatched_datapoints(&f.telemetry),
            )
        })
        .collect();
    let keys = final_keys(&handles).await?;
    Ok(Report {
        requests,
        elapsed_ms: elapsed.as_millis() as u64,
        keys,
        seed: 0,
    })
}

/// What happens to a request at an instant of the timeline; at one instant, starts come
/// before cancellations (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Start,
    Cancel,
}

/// The script's steps in order: (instant, step, request index).
fn timeline(script: &Script) -> Vec<(Duration, Step, usize)> {
    let mut timeline = Vec::new();
    for (i, r) in script.requests.iter().enumerate() {
        timeline.push((r.at, Step::Start, i));
        if let Some(at) = r.cancel_at {
            timeline.push((at, Step::Cancel, i));
        }
    }
    timeline.sort();
    timeline
}

/// What every request of one replay shares.
#[derive(Clone)]
struct Replay {
    script: Arc<Script>,
    /// The carrier SDK client.
    kms: aws_sdk_kms::Client,
    /// Time 0.
    origin: Instant,
    /// Every request's deadline.
    deadline: Instant,
}

impl Replay {
    /// Starts and cancels each request at its instant, then waits for all of them;
    /// finished in script order.
    async fn run_timeline(
        &self,
        handles: &BTreeMap<u32, AdmissionHandle>,
    ) -> Result<Vec<Finished>, ReplayError> {
        let tokens: Vec<CancellationToken> = self
            .script
            .requests
            .iter()
            .map(|_| CancellationToken::new())
            .collect();
        let mut tasks = Vec::with_capacity(self.script.requests.len());
        for (at, step, index) in timeline(&self.script) {
            sleep_until(self.origin + at).await;
            let handle = handles[&self.script.requests[index].process].clone();
            match step {
                Step::Cancel => {
                    if let Err(e) = handle.cancel_scope(scope_of(index)).await {
                        tracing::warn!(error = %e, "cancelling a replayed request's waiters failed");
                    }
                    tokens[index].cancel();
                }
                Step::Start => {
                    let replay = self.clone();
                    let cancel = tokens[index].clone();
                    tasks.push(actix::spawn(replay.request(index, handle, cancel)));
                }
            }
        }
        let mut finished = Vec::with_capacity(tasks.len());
        for task in tasks {
            finished
                .push(task.await.map_err(|e| {
                    ReplayError::Runtime(format!("a replayed request failed: {e}"))
                })?);
        }
        finished.sort_by_key(|f| f.index);
        Ok(finished)
    }

    /// One request, from its start to its end, through its own gate and transport.
    async fn request(
        self,
        index: usize,
        handle: AdmissionHandle,
        cancel: CancellationToken,
    ) -> Finished {
        let request = &self.script.requests[index];
        let started = tollgate_actors::clock::since(self.origin);
        let transport = ScriptedTransport::new(&request.responses, self.origin);
        let telemetry = MemoryTelemetry::new();
        let gate = AwsGate::new(
            handle,
            self.script.policies.clone(),
            &CallerIdentity::resolved(Partition::aws(), request.account.clone(), None),
            transport.http_client(),
        )
        .with_retry(self.script.retry)
        .with_telemetry(Arc::new(telemetry.clone()));
        let ctx = CallContext {
            scan_id: ScanId(scope_of(index)),
            collector: "replay",
            datasets: vec![request.id.clone()],
            deadline: self.deadline,
            cancel,
        };
        let error = call(&gate, &ctx, request, &self.kms).await.err();
        Finished {
            index,
            started,
            ended: tollgate_actors::clock::since(self.origin),
            error,
            transport,
            telemetry,
        }
    }
}

/// Every key's state at the end, by key, read from the coordinator, which then stops.
async fn final_keys(
    handles: &BTreeMap<u32, AdmissionHandle>,
) -> Result<Vec<KeyStatus>, ReplayError> {
    let Some(handle) = handles.values().next() else {
        return Ok(Vec::new());
    };
    let mut keys = handle
        .status()
        .await
        .map_err(|e| ReplayError::Runtime(format!("reading the final key states: {e}")))?;
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    handle
        .shutdown()
        .await
        .map_err(|e| ReplayError::Runtime(format!("stopping the quota actors: {e}")))?;
    Ok(keys)
}

/// Each request is its own cancellation scope (and scan id): 1-based script position.
fn scope_of(index: usize) -> u64 {
    index as u64 + 1
}

/// One admission handle per process number over one set of actors (module docs).
fn admission_handles(
    script: &Script,
    clock: Arc<TokioClock>,
) -> Result<BTreeMap<u32, AdmissionHandle>, ReplayError> {
    let owner = |process: u32| Owner {
        pid: process,
        generation: 1,
    };
    let mut processes: Vec<u32> = script.requests.iter().map(|r| r.process).collect();
    processes.sort_unstable();
    processes.dedup();
    let first = *processes
        .first()
        .ok_or_else(|| ReplayError::Runtime("the script has no requests".into()))?;
    let coordinator = start_in_current_system(
        // The simulated processes live for the whole replay.
        RuntimeConfig {
            schedules: Schedules::new(Arc::new(script.policies.clone()), WallClock::UNIX_EPOCH),
            ..RuntimeConfig::simulated(owner(first))
        },
        clock,
    );
    let mut handles = BTreeMap::new();
    for process in processes {
        let handle = if process == first {
            coordinator.clone()
        } else {
            coordinator.for_owner(owner(process)).ok_or_else(|| {
                ReplayError::Runtime("the replay's admission handle is not local".into())
            })?
        };
        handles.insert(process, handle);
    }
    Ok(handles)
}

/// The SDK client that carries every attempt: static test credentials, SDK retries off,
/// no operation timeouts, signing on the simulated clock, and the refusing default client
/// (the gate hands each attempt its gated client), as `sdk_config` builds clients.
fn carrier_client(clock: Arc<TokioClock>) -> aws_sdk_kms::Client {
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(CARRIER_REGION))
        .credentials_provider(Credentials::new(
            "AKIDREPLAY",
            "replay-secret",
            None,
            None,
            "replay",
        ))
        .http_client(UngatedRefusal)
        .retry_config(RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(gated_stalled_stream_protection())
        .time_source(ClockTimeSource(clock))
        .build();
    aws_sdk_kms::Client::from_conf(config)
}

async fn call(
    gate: &AwsGate,
    ctx: &CallContext,
    request: &ScriptedRequest,
    kms: &aws_sdk_kms::Client,
) -> Result<(), CallError> {
    let send = |http| {
        kms.list_keys()
            .customize()
            .config_override(aws_sdk_kms::Config::builder().http_client(http))
            .send()
    };
    let region = &request.region;
    match &request.metric_data {
        Some(metric_data) => gate
            .call_metric_data(ctx, region, metric_data, send)
            .await
            .map(|_| ()),
        None => gate
            .call(
                ctx,
                &request.service,
                &request.operation,
                Some(region),
                send,
            )
            .await
            .map(|_| ()),
    }
}

/// What each dispatched attempt of a call was charged besides its token, in dispatch
/// order: one entry per attempt the transport saw (`None` for every attempt of a call
/// that charges no datapoints).
fn dispatched_datapoints(telemetry: &MemoryTelemetry) -> Vec<Option<DatapointCharge>> {
    telemetry
        .events()
        .iter()
        .filter(|e| e.dispatched)
        .map(|e| e.datapoints)
        .collect()
}
