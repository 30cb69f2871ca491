//! `tollgate catalog status` and `tollgate catalog init` as real processes against the
//! simulator on a loopback port: status's table and JSON (sorted regions, `no-index`
//! where Resource Explorer is off), init's changes and a re-run that changes nothing,
//! and status after init seeing what init made.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Output;

use tollgate_sim::{Scenario, SimServer, Simulator};
use tollgate_testkit::cli;

const SCENARIO: &str = r#"
account = "123456789012"
regions = ["us-east-1", "eu-west-1", "ap-south-1"]
[resource_explorer]
settle_seconds = 1
[[resource_explorer.indexes]]
region = "eu-west-1"
type = "local"
"#;

/// The simulator on a loopback port, served by its own runtime.
struct Sim {
    rt: tokio::runtime::Runtime,
    server: Option<SimServer>,
    url: String,
}

impl Sim {
    fn start() -> Sim {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let scenario = Scenario::parse(SCENARIO, "<catalog>").unwrap();
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

fn catalog(sim: &Sim, dir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("catalog")
        .args(args)
        .args([
            "--endpoint-url",
            &sim.url,
            "--regions",
            "us-east-1,eu-west-1,ap-south-1",
        ])
        .env_remove("AWS_PROFILE")
        .env("AWS_ACCESS_KEY_ID", "AKIDSIM")
        .env("AWS_SECRET_ACCESS_KEY", "sim-secret")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"));
    cli::output(&mut cmd)
}

#[test]
fn catalog_status_reports_each_region_and_init_turns_resource_explorer_on_once() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();

    let out = catalog(&sim, dir.path(), &["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", cli::describe(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let regions: Vec<(&str, &str)> = status["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["region"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        regions,
        [
            ("ap-south-1", "no-index"),
            ("eu-west-1", "indexed"),
            ("us-east-1", "no-index")
        ]
    );

    let out = catalog(&sim, dir.path(), &["init", "--aggregator", "us-east-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", cli::describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("AGGREGATOR ACTIVE"), "{text}");
    assert!(
        text.contains("created index, promoted to aggregator, created view"),
        "{text}"
    );

    let out = catalog(&sim, dir.path(), &["init", "--aggregator", "us-east-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", cli::describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("unchanged").count(), 3, "{text}");

    let out = catalog(&sim, dir.path(), &["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", cli::describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let east = text.lines().find(|l| l.starts_with("us-east-1")).unwrap();
    assert!(
        east.contains("AGGREGATOR ACTIVE") && east.contains("tollgate-all-resources"),
        "{east}"
    );
}
