//! Which budget an EC2 read spends (issue 33, item 2): real `aws-sdk-ec2` requests,
//! signed and serialised by the SDK, through the real gate in paused time, answered by
//! a local fake transport.
//!
//! The `:unfiltered` budget of `DescribeVolumes` is set to 1/s (burst 1) and the
//! action's own key stays at its default 10/s (burst 10), so four calls at once are
//! either sent together (the action's budget alone) or one a second (the smaller
//! budget). A paginated call (`MaxResults`) and a filtered one go together; an
//! unfiltered, unpaginated one is paced, and so is one whose filter list is empty,
//! because the gate reads the request as sent and the SDK sends no empty list.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_credential_types::Credentials;
use aws_sdk_ec2::config::retry::RetryConfig;
use aws_sdk_ec2::config::{BehaviorVersion, Region};
use aws_sdk_ec2::types::Filter;
use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpClient};
use futures_util::future::join_all;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_engine::aws::{
    gated_stalled_stream_protection, gated_timeouts, AwsGate, CallContext, CallerIdentity,
    ClockTimeSource, MemoryTelemetry, ScanId, UngatedRefusal,
};
use tollgate_quota::key::AccountId;
use tollgate_quota::{Owner, Partition, PolicyTable, Timestamp};
use tollgate_sim::transport::{response, FakeTransport};

const REGION: &str = "eu-west-1";
const UNFILTERED_KEY: &str = "aws/123456789012/eu-west-1/ec2:DescribeVolumes:unfiltered";
const ACTION_KEY: &str = "aws/123456789012/eu-west-1/ec2:DescribeVolumes";
const OVERRIDES: &str = r#"{"ec2:DescribeVolumes:unfiltered": {"ratePerSecond": 1, "burst": 1}}"#;

const VOLUMES: &str = r#"<DescribeVolumesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r1</requestId><volumeSet/></DescribeVolumesResponse>"#;

/// What went out: when, and the form-encoded body.
type Sent = Arc<Mutex<Vec<(Instant, String)>>>;

/// How one call shapes its request.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Paginated,
    Filtered,
    Bare,
    EmptyFilterList,
}

fn transport(sent: Sent) -> SharedHttpClient {
    FakeTransport::new(move |request| {
        let body = String::from_utf8_lossy(request.body().bytes().unwrap_or_default()).into();
        sent.lock().unwrap().push((monotonic_now(), body));
        HttpConnectorFuture::ready(Ok(response(200, "text/xml", VOLUMES)))
    })
    .http_client()
}

fn client(clock: Arc<TokioClock>) -> aws_sdk_ec2::Client {
    let config = aws_sdk_ec2::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "t"))
        .http_client(UngatedRefusal)
        .retry_config(RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(gated_stalled_stream_protection())
        .time_source(ClockTimeSource(clock))
        .build();
    aws_sdk_ec2::Client::from_conf(config)
}

fn context() -> CallContext {
    CallContext {
        scan_id: ScanId(33),
        collector: "ec2",
        datasets: vec!["AWS::EC2::Volume".into()],
        deadline: monotonic_now() + Duration::from_secs(600),
        cancel: CancellationToken::new(),
    }
}

async fn describe(gate: &AwsGate, client: &aws_sdk_ec2::Client, shape: Shape) {
    let ctx = context();
    gate.call(&ctx, "ec2", "DescribeVolumes", Some(REGION), |http| {
        let request = client.describe_volumes();
        let request = match shape {
            Shape::Paginated => request.max_results(500),
            Shape::Filtered => {
                request.filters(Filter::builder().name("status").values("in-use").build())
            }
            Shape::Bare => request,
            Shape::EmptyFilterList => request.set_filters(Some(Vec::new())),
        };
        request
            .customize()
            .config_override(aws_sdk_ec2::Config::builder().http_client(http))
            .send()
    })
    .await
    .unwrap();
}

/// Four calls of `shape` at once on a fresh coordinator: when each went out (from the
/// first), what it sent, and the telemetry's `unfilteredQuota` of each.
fn four_at_once(shape: Shape) -> (Vec<Duration>, Vec<String>, Vec<Option<String>>) {
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(Timestamp::from_millis(
            1_800_000_000_000,
        )));
        let owner = Owner {
            pid: 1,
            generation: 1,
        };
        let admission = start_in_current_system(RuntimeConfig::simulated(owner), clock.clone());
        let sent: Sent = Arc::default();
        let telemetry = MemoryTelemetry::new();
        let identity = CallerIdentity::resolved(
            Partition::aws(),
            AccountId::new("123456789012").unwrap(),
            None,
        );
        let policies = PolicyTable::with_overrides(OVERRIDES, "test").unwrap();
        let gate = AwsGate::new(admission, policies, &identity, transport(sent.clone()))
            .with_telemetry(Arc::new(telemetry.clone()));
        let client = client(clock);
        let start = monotonic_now();
        join_all((0..4).map(|_| describe(&gate, &client, shape))).await;
        let sent = sent.lock().unwrap().clone();
        let events = telemetry.events();
        assert!(events
            .iter()
            .all(|e| e.quota.as_deref() == Some(ACTION_KEY)));
        (
            sent.iter().map(|(at, _)| *at - start).collect(),
            sent.into_iter().map(|(_, body)| body).collect(),
            events.into_iter().map(|e| e.unfiltered_quota).collect(),
        )
    })
}

#[test]
fn an_unfiltered_unpaginated_describe_volumes_draws_on_the_smaller_budget_and_a_paginated_one_does_not(
) {
    let paced: Vec<Duration> = (0..4).map(Duration::from_secs).collect();
    let together = vec![Duration::ZERO; 4];
    // (shape, what its request carries, when the four went out, the budget charged)
    let cases = [
        (Shape::Paginated, Some("MaxResults=500"), &together, None),
        (
            Shape::Filtered,
            Some("Filter.1.Name=status"),
            &together,
            None,
        ),
        (Shape::Bare, None, &paced, Some(UNFILTERED_KEY)),
        (Shape::EmptyFilterList, None, &paced, Some(UNFILTERED_KEY)),
    ];
    for (shape, carries, when, budget) in cases {
        let (sent_at, bodies, charged) = four_at_once(shape);
        assert_eq!(&sent_at, when, "{shape:?}: {bodies:?}");
        for body in &bodies {
            assert!(body.contains("Action=DescribeVolumes"), "{body}");
            match carries {
                Some(part) => assert!(body.contains(part), "{shape:?}: {body}"),
                None => assert!(
                    !body.contains("MaxResults") && !body.contains("Filter."),
                    "{shape:?} sends neither: {body}"
                ),
            }
        }
        assert_eq!(
            charged,
            vec![budget.map(str::to_string); 4],
            "{shape:?}: the telemetry names the budget the admission charged"
        );
    }
}
