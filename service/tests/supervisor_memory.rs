//! A long-running service must not grow with the scans it has run (issue 11, item 5):
//! once a scan's record and report are stored, the supervisor forgets it. Many scans of
//! the demo scenario's KMS keys through the [`ScanManager`], over the fixture simulator's
//! in-process transport in paused time; afterwards the supervisor knows none of them.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use aws_credential_types::Credentials;
use tokio::sync::oneshot;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_collectors::Dataset;
use tollgate_engine::aws::{MemoryTelemetry, ScanId};
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::{Owner, PolicyTable, Timestamp};
use tollgate_scan::supervisor::{AwaitReport, Supervisor, SupervisorDeps};
use tollgate_scan::DiscoveryRequest;
use tollgate_service::manager::guard::GuardSettings;
use tollgate_service::scan_request::ScanOrigin;
use tollgate_service::{History, ManagerDeps, Retention, ScanManager, ScanStatus, ServiceMetrics};
use tollgate_sim::{bundled, Scenario, Simulator};

const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const SCANS: usize = 12;

#[test]
fn finished_scans_are_stored_and_forgotten_by_the_supervisor() {
    let scenario = Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml").unwrap();
    let sim = Simulator::new(scenario);
    let tmp = tempfile::tempdir().unwrap();
    paused_system().block_on(async {
        let clock = Arc::new(TokioClock::starting_at(START));
        let admission = start_in_current_system(
            RuntimeConfig::simulated(Owner {
                pid: std::process::id(),
                generation: 1,
            }),
            clock.clone(),
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
        let manager = ScanManager::new(ManagerDeps {
            supervisor: supervisor.clone(),
            history: History::open(&tmp.path().join("history.sled")).unwrap(),
            clock,
            runtime: tokio::runtime::Handle::current(),
            max_concurrent_scans: NonZeroUsize::new(2).unwrap(),
            retention: Retention::default(),
            metrics: Arc::new(ServiceMetrics::new()),
            // Back-to-back scans of one account are this test's point: no cooldown.
            guard: GuardSettings {
                cooldown: Duration::ZERO,
                ..GuardSettings::default()
            },
            // The supervisor's memory is measured, not the inventory store's.
            store: None,
        });
        for _ in 0..SCANS {
            let request = DiscoveryRequest {
                regions: sim.scenario().regions.clone(),
                datasets: vec![Dataset::KmsKeys],
                endpoint_url: Some("http://simulator.invalid".into()),
                timeout: Duration::from_secs(3_600),
                credentials: Some(Credentials::new(
                    "AKIDSIM",
                    "sim-secret",
                    None,
                    None,
                    "simulation",
                )),
                ..Default::default()
            }
            .validate()
            .unwrap();
            let submitted = manager
                .submit(None, request, ScanOrigin::OnDemand { force: false })
                .unwrap();
            assert!(!submitted.joined);
            loop {
                let status = manager.show(&submitted.scan_id).unwrap().summary.status;
                if !status.is_active() {
                    assert_eq!(status, ScanStatus::Complete);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(manager.report_json(&submitted.scan_id).is_ok(), "stored");
        }
        assert_eq!(manager.list().unwrap().len(), SCANS);
        // The engine's ids, from the attempts' attribution.
        let mut engine_ids: Vec<String> = telemetry
            .events()
            .into_iter()
            .map(|e| e.attribution.scan_id)
            .collect();
        engine_ids.sort();
        engine_ids.dedup();
        assert_eq!(engine_ids.len(), SCANS, "{engine_ids:?}");
        // Forgetting is a message after the store: let it arrive.
        tokio::time::sleep(Duration::from_millis(10)).await;
        for id in engine_ids {
            let raw = u64::from_str_radix(id.trim_start_matches("scan-"), 16).unwrap();
            let (reply, answer) = oneshot::channel();
            supervisor
                .send(AwaitReport {
                    scan_id: ScanId(raw),
                    reply,
                })
                .await
                .unwrap();
            assert!(
                answer.await.unwrap().is_err(),
                "the supervisor still holds {id}"
            );
        }
    });
}
