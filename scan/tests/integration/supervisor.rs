//! The supervisor's message API without AWS: refused requests, unknown scans, and a scan
//! cancelled before its setup finished.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tollgate_actors::{AdmissionRuntime, RuntimeConfig};
use tollgate_collectors::{Dataset, DatasetStatus};
use tollgate_engine::aws::telemetry::NoTelemetry;
use tollgate_engine::aws::ScanId;
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::PolicyTable;
use tollgate_scan::request::RequestError;
use tollgate_scan::supervisor::{
    AwaitReport, CancelScan, CountScans, ForgetScan, GetProgress, ScanCount, StartScan,
    SupervisorDeps, UnknownScan,
};
use tollgate_scan::{Discovery, DiscoveryRequest};
use tollgate_storage::MemoryStore;

fn discovery() -> (Discovery, AdmissionRuntime) {
    let admission = AdmissionRuntime::start(RuntimeConfig::for_this_process(Arc::new(
        MemoryStore::new(),
    )))
    .unwrap();
    let discovery = Discovery::start_with(SupervisorDeps {
        admission: admission.handle(),
        policies: PolicyTable::defaults(),
        telemetry: ScanTelemetry::new(Arc::new(NoTelemetry)),
        http: tollgate_engine::aws::default_http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    });
    (discovery, admission)
}

#[tokio::test]
async fn bad_requests_are_refused_and_unknown_scans_say_so() {
    let (discovery, _admission) = discovery();
    let supervisor = discovery.supervisor();
    let refused = supervisor
        .send(StartScan(DiscoveryRequest {
            regions: vec!["Mars-1".into()],
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(matches!(refused, Err(RequestError::BadRegion(r)) if r == "Mars-1"));

    let nobody = ScanId(42);
    assert!(!supervisor.send(CancelScan(nobody)).await.unwrap());
    assert_eq!(supervisor.send(GetProgress(nobody)).await.unwrap(), None);
    assert!(!supervisor.send(ForgetScan(nobody)).await.unwrap());
    let (reply, answer) = oneshot::channel();
    supervisor
        .send(AwaitReport {
            scan_id: nobody,
            reply,
        })
        .await
        .unwrap();
    assert_eq!(answer.await.unwrap(), Err(UnknownScan(nobody)));
    discovery.shutdown();
}

/// Cancelled while the caller's identity is still being resolved (the endpoint accepts
/// connections and never answers; static credentials, so that the request is signed and
/// sent whatever the machine's AWS configuration): the report arrives with every dataset
/// `cancelled`, and the scan can then be forgotten.
#[tokio::test]
async fn a_scan_cancelled_during_setup_still_reports() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let (discovery, _admission) = discovery();
    let scan = discovery
        .start_scan(DiscoveryRequest {
            regions: vec!["us-east-1".into()],
            datasets: vec![Dataset::KmsKeys, Dataset::S3Buckets],
            endpoint_url: Some(url),
            timeout: Duration::from_secs(60),
            credentials: Some(aws_credential_types::Credentials::new(
                "AKIDTEST", "test", None, None, "test",
            )),
            ..Default::default()
        })
        .await
        .unwrap();
    let progress = scan.progress();
    assert_eq!(progress.len(), 2);
    assert!(progress.iter().all(|p| p.finished.is_none()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(scan.cancel().await.unwrap());
    assert!(!scan.cancel().await.unwrap(), "cancelled once");
    let report = scan.report().await.unwrap();
    crate::assert_valid_report(&report);
    assert_eq!(report.scan_id, scan.id().to_string());
    for dataset in [Dataset::KmsKeys, Dataset::S3Buckets] {
        let d = report.dataset(dataset).unwrap();
        assert_eq!(d.status, DatasetStatus::Cancelled, "{dataset}: {d:?}");
        assert!(d.items.is_empty());
        assert_eq!(d.reasons.len(), 1);
    }
    assert_eq!(report.overall_status(), DatasetStatus::Cancelled);
    let supervisor = discovery.supervisor();
    assert!(supervisor.send(ForgetScan(scan.id())).await.unwrap());
    assert_eq!(supervisor.send(GetProgress(scan.id())).await.unwrap(), None);
    discovery.shutdown();
    drop(silent);
}

/// Item 6 of issue 21: what a scan holds per account (its SDK configuration and
/// credentials, its gate) goes when its report is assembled, not when it is forgotten;
/// the entry itself goes with `ForgetScan`. The endpoint refuses connections, so setup
/// ends quickly (an unresolved caller, an isolated admission runtime) and the collectors
/// start; cancelling them ends the scan.
#[tokio::test]
async fn a_finished_scan_holds_no_setup_and_a_forgotten_one_nothing() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (discovery, _admission) = discovery();
    let supervisor = discovery.supervisor();
    let scan = discovery
        .start_scan(DiscoveryRequest {
            regions: vec!["us-east-1".into(), "eu-west-1".into()],
            datasets: vec![Dataset::KmsKeys, Dataset::DynamoDbTables],
            endpoint_url: Some(url),
            timeout: Duration::from_secs(60),
            credentials: Some(aws_credential_types::Credentials::new(
                "AKIDTEST", "test", None, None, "test",
            )),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut running = supervisor.send(CountScans).await.unwrap();
    for _ in 0..500 {
        if running.holding_setup == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        running = supervisor.send(CountScans).await.unwrap();
    }
    assert_eq!(
        running,
        ScanCount {
            scans: 1,
            holding_setup: 1
        },
        "a running scan holds its setup"
    );
    scan.cancel().await.unwrap();
    scan.report().await.unwrap();
    assert_eq!(
        supervisor.send(CountScans).await.unwrap(),
        ScanCount {
            scans: 1,
            holding_setup: 0
        },
        "the finished scan keeps its report, not its setup"
    );
    assert!(supervisor.send(ForgetScan(scan.id())).await.unwrap());
    assert_eq!(
        supervisor.send(CountScans).await.unwrap(),
        ScanCount::default()
    );
    discovery.shutdown();
}
