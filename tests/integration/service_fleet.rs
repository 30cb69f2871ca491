//! Fleet mode in the service: `tollgate serve --config FILE` with a `[fleet]` section, as
//! a child process, scanning the fixture AWS simulator (started here, on loopback) while
//! the fleet table's endpoint is a closed loopback port.
//!
//! - `[fleet]` alone: its table and `on_error = "stop"` apply: the scan's calls are
//!   refused, and the stored report's `fleet_degraded` names the file's table, mode `stop`.
//! - `TOLLGATE_FLEET_ON_ERROR=local-share` beside the same file: the environment wins for
//!   that value (the scan completes under a local share), the file's table still applies.
//! - A bad `[fleet]` value: serve refuses to start, naming file, line and key.

use crate::service_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use service_support::{Dirs, Serve};
use tollgate_sim::{bundled, Scenario, SimServer, Simulator};

const LIMIT: Duration = Duration::from_secs(120);
const TABLE: &str = "tg-from-the-file";

/// The simulator on a loopback port, served by its own runtime.
struct Sim {
    rt: tokio::runtime::Runtime,
    server: Option<SimServer>,
    url: String,
    regions: Vec<String>,
}

impl Sim {
    fn start() -> Sim {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let scenario = Scenario::parse(bundled::DEMO, "demo.toml").unwrap();
        let regions = scenario.regions.clone();
        let server = rt.block_on(async {
            Simulator::new(scenario)
                .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                .await
                .unwrap()
        });
        Sim {
            url: server.endpoint_url(),
            server: Some(server),
            rt,
            regions,
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.rt.block_on(server.shutdown());
        }
    }
}

/// A loopback URL where nothing listens.
fn closed_port_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("service.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn fleet_config(dir: &Path) -> String {
    write_config(
        dir,
        &format!(
            "[fleet]\ntable = \"{TABLE}\"\nendpoint_url = \"{}\"\non_error = \"stop\"\n",
            closed_port_url()
        ),
    )
}

/// Submit one scan of the simulator; wait for it to end; its stored report.
fn scan(serve: &Serve, sim: &Sim) -> (String, serde_json::Value) {
    let body = serde_json::json!({
        "regions": sim.regions,
        "datasets": ["kms-keys"],
        "endpoint_url": sim.url,
        "timeout": "100s",
    })
    .to_string();
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let id = answer["scan_id"].as_str().unwrap().to_string();
    let status = serve.wait_for(&id, &["complete", "partial", "failed"], LIMIT);
    let (code, report) = serve.json("GET", &format!("/v1/scans/{id}/report"), None);
    assert_eq!(code, 200, "{report}");
    (status, report)
}

fn degraded(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report
        .get("fleet_degraded")
        .and_then(|d| d.as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn the_fleet_section_applies_and_a_stopped_key_is_stated_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = Sim::start();
    let config = fleet_config(tmp.path());
    let serve = Serve::start(&Dirs::new(tmp.path()), &["--config", &config], &[]);
    let (status, report) = scan(&serve, &sim);
    assert_eq!(status, "failed", "every keyed call is refused: {report}");
    let reasons = report["datasets"]["kms-keys"]["reasons"].to_string();
    assert!(
        reasons.contains(&format!("fleet DynamoDB table {TABLE}")),
        "{reasons}"
    );
    let degraded = degraded(&report);
    assert!(!degraded.is_empty(), "{report}");
    // The scan's keys: KMS's (the dataset) and the tagging sweep's.
    for d in &degraded {
        assert_eq!(d["mode"], "stop", "{d}");
        assert!(d["error"].as_str().unwrap().contains(TABLE), "{d}");
        let key = d["key"].as_str().unwrap();
        assert!(
            key.contains("kms:") || key.contains("tag:GetResources"),
            "{d}"
        );
    }
    assert!(
        degraded
            .iter()
            .any(|d| d["key"].as_str().unwrap().contains("kms:")),
        "{report}"
    );
    assert!(serve.terminate().success());
}

#[test]
fn the_environment_wins_over_the_fleet_section_value_by_value() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = Sim::start();
    let config = fleet_config(tmp.path());
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", &config],
        &[("TOLLGATE_FLEET_ON_ERROR", "local-share")],
    );
    let (status, report) = scan(&serve, &sim);
    assert_ne!(status, "failed", "local share admits: {report}");
    let degraded = degraded(&report);
    assert!(!degraded.is_empty(), "{report}");
    for d in &degraded {
        assert_eq!(d["mode"], "local-share", "the environment's mode: {d}");
        assert!(
            d["error"].as_str().unwrap().contains(TABLE),
            "the file's table: {d}"
        );
    }
    assert!(serve.terminate().success());
}

#[test]
fn a_bad_fleet_section_stops_serve_before_it_starts_naming_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(
        tmp.path(),
        "[service]\nmax_concurrent_scans = 1\n\n[fleet]\ntable = \"ok-table\"\non_error = \"sometimes\"\n",
    );
    let dirs = Dirs::new(tmp.path());
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config", &config]);
    service_support::child_env(&mut cmd, &dirs);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{config}:6: `fleet.on_error`")),
        "{stderr}"
    );
    assert!(stderr.contains("\"local-share\" or \"stop\""), "{stderr}");
    assert!(out.stdout.is_empty(), "never listened");
}
