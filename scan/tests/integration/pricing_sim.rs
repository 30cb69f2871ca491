//! `--pricing` through the fixture simulator (issue 36, item 4): transit gateway
//! attachments priced from the simulator's offer file, read over a real loopback socket
//! (the price list is plain HTTP, not an SDK call), the scan itself over the in-process
//! transport.
//!
//! In paused time: a price list that never answers, or answers its headers and stalls
//! in the body, times out after 5 s and leaves the scan complete with `null` prices and
//! a reason; an error status is not read to the end (its body stalls: a client that
//! read it would time out instead); a cancellation during the read stops the scan at
//! once. The price list that answers is read in real time (a socket read in paused time
//! could let the clock jump to the timeout while the answer is on its way).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use aws_credential_types::Credentials;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_collectors::output::ReasonKind;
use tollgate_collectors::{Dataset, DatasetStatus, DiscoveryReport};
use tollgate_engine::aws::{AttemptOutcome, MemoryTelemetry};
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::{Owner, PolicyTable, Timestamp};
use tollgate_scan::supervisor::{AwaitReport, CancelScan, StartScan, Supervisor, SupervisorDeps};
use tollgate_scan::DiscoveryRequest;
use tollgate_sim::{Scenario, Simulator};

const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);

const GATEWAYS: &str = r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1"]
[latency]
default = { kind = "fixed", ms = 10 }

[[ec2.vpcs]]
id = "vpc-0a000000000000001"
region = "us-east-1"
cidr_block = "10.0.0.0/16"

[[ec2.transit_gateways]]
id = "tgw-0a000000000000001"
region = "us-east-1"
description = "core"
tags = { team = "network" }

[[ec2.transit_gateways]]
id = "tgw-0a000000000000002"
region = "us-east-1"

[[ec2.transit_gateway_attachments]]
id = "tgw-attach-0a000000000000001"
region = "us-east-1"
transit_gateway_id = "tgw-0a000000000000001"
resource_type = "vpc"
resource_id = "vpc-0a000000000000001"

[[ec2.transit_gateway_attachments]]
id = "tgw-attach-0a000000000000002"
region = "us-east-1"
transit_gateway_id = "tgw-0a000000000000001"
resource_type = "vpn"
resource_id = "vpn-0a000000000000001"

[[ec2.transit_gateway_attachments]]
id = "tgw-attach-0a000000000000003"
region = "us-east-1"
transit_gateway_id = "tgw-0a000000000000001"
resource_type = "peering"
state = "deleted"

[[ec2.transit_gateways]]
id = "tgw-0e000000000000001"
region = "eu-west-1"

[[ec2.transit_gateway_attachments]]
id = "tgw-attach-0e000000000000001"
region = "eu-west-1"
transit_gateway_id = "tgw-0e000000000000001"
resource_type = "connect"
"#;

/// The scenario with a `[pricing]` section.
fn scenario(pricing: &str) -> Scenario {
    Scenario::parse(&format!("{GATEWAYS}\n[pricing]\n{pricing}\n"), "pricing").unwrap()
}

struct Run {
    report: DiscoveryReport,
    elapsed: Duration,
    telemetry: MemoryTelemetry,
}

/// Scan the transit gateways and attachments of `sim`, priced from its offer file
/// served on a loopback socket; cancel the scan `cancel_after` it started, if given.
async fn scan(sim: &Simulator, cancel_after: Option<Duration>) -> Run {
    let server = sim
        .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .expect("the simulator listens on loopback");
    let admission = start_in_current_system(
        RuntimeConfig::simulated(Owner {
            pid: std::process::id(),
            generation: 1,
        }),
        Arc::new(TokioClock::starting_at(START)),
    );
    let telemetry = MemoryTelemetry::new();
    let supervisor = Supervisor::new(SupervisorDeps {
        admission,
        policies: PolicyTable::defaults(),
        telemetry: ScanTelemetry::new(Arc::new(telemetry.clone())),
        http: sim.http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    })
    .start();
    let request = DiscoveryRequest {
        regions: sim.scenario().regions.clone(),
        datasets: vec![
            "AWS::EC2::TransitGateway".parse().unwrap(),
            "AWS::EC2::TransitGatewayAttachment".parse().unwrap(),
        ],
        endpoint_url: Some("http://simulator.invalid".into()),
        timeout: Duration::from_secs(3_600),
        credentials: Some(Credentials::new("AKIDSIM", "sim", None, None, "sim")),
        tags: tollgate_collectors::tagging::TagSweep::Skip,
        pricing: Some(server.endpoint_url()),
        ..Default::default()
    };
    let started_at = tollgate_actors::clock::monotonic_now();
    let started = supervisor
        .send(StartScan(request))
        .await
        .expect("the supervisor answers")
        .expect("a valid request");
    if let Some(after) = cancel_after {
        tokio::time::sleep(after).await;
        supervisor.send(CancelScan(started.scan_id)).await.unwrap();
    }
    let (reply, answer) = oneshot::channel();
    supervisor
        .send(AwaitReport {
            scan_id: started.scan_id,
            reply,
        })
        .await
        .expect("the supervisor answers");
    let report = answer.await.expect("a report").expect("a known scan");
    let elapsed = tollgate_actors::clock::since(started_at);
    crate::assert_valid_report(&report);
    server.shutdown().await;
    Run {
        report,
        elapsed,
        telemetry,
    }
}

fn dataset(name: &str) -> Dataset {
    name.parse().unwrap()
}

/// `HourlyPrice` of each item of `ty`, by id.
fn prices(run: &Run, ty: &str) -> Vec<(String, Value)> {
    let report = run.report.dataset(dataset(ty)).unwrap();
    let mut prices: Vec<(String, Value)> = report
        .items
        .iter()
        .map(|i| {
            let r = i.resource();
            let price = r.properties.get("HourlyPrice").cloned();
            (r.id.clone(), price.expect("priced, or null"))
        })
        .collect();
    prices.sort_by(|a, b| a.0.cmp(&b.0));
    prices
}

/// The price list reads' attempt events.
fn reads(run: &Run) -> Vec<AttemptOutcome> {
    let events = run.telemetry.events();
    let reads = events.iter().filter(|e| e.service == "AWS Public Pricing");
    reads.map(|e| e.outcome).collect()
}

/// Every price is `null`, both datasets are complete, and each says why once.
fn assert_unpriced(run: &Run, why: &str) {
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    for ty in [
        "AWS::EC2::TransitGateway",
        "AWS::EC2::TransitGatewayAttachment",
    ] {
        let priced = prices(run, ty);
        assert!(!priced.is_empty(), "{ty}");
        for (id, price) in &priced {
            // A gateway without attachments costs nothing, price list or not.
            let free = id == "tgw-0a000000000000002";
            assert_eq!(price.is_null(), !free, "{ty}: {priced:?}");
        }
        let report = run.report.dataset(dataset(ty)).unwrap();
        assert_eq!(report.status, DatasetStatus::Complete, "{ty}");
        let reason = report
            .reasons
            .iter()
            .find(|r| r.field.as_deref() == Some("HourlyPrice"))
            .unwrap_or_else(|| panic!("{ty}: {:?}", report.reasons));
        assert_eq!(reason.operation, "pricing:GetPublicPriceList");
        if ty.ends_with("Attachment") {
            assert!(reason.message.contains(why), "{reason:?}");
        }
    }
}

#[test]
fn a_price_list_that_never_answers_times_out_in_5_s_and_leaves_the_scan_complete_with_null_prices()
{
    let sim = Simulator::new(scenario(r#"stall = "headers""#));
    let run = paused_system().block_on(scan(&sim, None));
    assert_unpriced(&run, "no complete answer within 5s");
    let attachments = run
        .report
        .dataset(dataset("AWS::EC2::TransitGatewayAttachment"))
        .unwrap();
    let reason = &attachments.reasons[0];
    assert_eq!(reason.kind, ReasonKind::Transient);
    assert_eq!(reason.count, 2, "one read per region: {reason:?}");
    // One read per region, each given up at 5 s; both regions at once.
    assert_eq!(reads(&run), [AttemptOutcome::DeadlineExceeded; 2]);
    assert!(run.elapsed >= Duration::from_secs(5), "{:?}", run.elapsed);
    assert!(run.elapsed < Duration::from_secs(6), "{:?}", run.elapsed);
}

#[test]
fn a_body_that_stalls_after_the_headers_times_out_as_one_that_never_answers() {
    let sim = Simulator::new(scenario(r#"stall = "body""#));
    let run = paused_system().block_on(scan(&sim, None));
    assert_unpriced(&run, "no complete answer within 5s");
    assert!(run.elapsed >= Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn an_error_status_leaves_prices_null_at_once_without_reading_its_endless_body() {
    let sim = Simulator::new(scenario("status = 503\nerror_body = \"stall\""));
    let run = paused_system().block_on(scan(&sim, None));
    assert_unpriced(&run, "HTTP 503");
    let attachments = run
        .report
        .dataset(dataset("AWS::EC2::TransitGatewayAttachment"))
        .unwrap();
    assert_eq!(attachments.reasons[0].code.as_deref(), Some("503"));
    assert_eq!(reads(&run), [AttemptOutcome::Fatal; 2]);
    // Had the client read the error body to its (never coming) end, the timeout would
    // have ended it at 5 s.
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn a_cancellation_during_the_price_list_read_stops_the_scan() {
    let sim = Simulator::new(scenario(r#"stall = "headers""#));
    let run = paused_system().block_on(scan(&sim, Some(Duration::from_secs(2))));
    let attachments = run
        .report
        .dataset(dataset("AWS::EC2::TransitGatewayAttachment"))
        .unwrap();
    assert_eq!(attachments.status, DatasetStatus::Cancelled);
    assert_eq!(run.report.overall_status(), DatasetStatus::Cancelled);
    // Stopped at the cancellation, not at the read's timeout; the reads say so.
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
    assert_eq!(reads(&run), [AttemptOutcome::Cancelled; 2]);
}

#[test]
fn attachments_take_their_kinds_hourly_price_and_a_gateway_the_sum_of_its_attachments() {
    // Real time: the answer comes over a socket (see the module's documentation).
    let sim = Simulator::new(scenario(
        "hourly = { VPC = 0.05, VPN = 0.07 }\nregions = { \"eu-west-1\" = { Connect = 0.06 } }",
    ));
    let run = actix::System::new().block_on(scan(&sim, None));
    assert_eq!(run.report.overall_status(), DatasetStatus::Complete);
    let attachments = prices(&run, "AWS::EC2::TransitGatewayAttachment");
    assert_eq!(
        attachments,
        [
            ("tgw-attach-0a000000000000001".to_string(), json!(0.05)),
            ("tgw-attach-0a000000000000002".to_string(), json!(0.07)),
            ("tgw-attach-0a000000000000003".to_string(), json!(0.0)),
            ("tgw-attach-0e000000000000001".to_string(), json!(0.06)),
        ],
        "vpc, vpn, a deleted peering (no longer billed), connect"
    );
    let gateways = prices(&run, "AWS::EC2::TransitGateway");
    let sum = gateways[0].1.as_f64().unwrap();
    assert!((sum - 0.12).abs() < 1e-9, "{gateways:?}");
    assert_eq!(gateways[1].1, json!(0.0), "no attachment, no charge");
    assert_eq!(gateways[2].1, json!(0.06));
    for ty in [
        "AWS::EC2::TransitGateway",
        "AWS::EC2::TransitGatewayAttachment",
    ] {
        assert!(run.report.dataset(dataset(ty)).unwrap().reasons.is_empty());
    }
    assert_eq!(reads(&run), [AttemptOutcome::Success; 2], "one per region");
}
