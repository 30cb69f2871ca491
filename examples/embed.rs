//! Embedding tollgate: check credentials (a typed error to match on), start the engine,
//! run a scan through the supervisor's messages, cancel another, and read the results.
//!
//! ```sh
//! # against moto (python3 -m pip install "moto[server]"; moto_server -p 5000 &):
//! AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 \
//!     cargo run --example embed -- http://127.0.0.1:5000
//! # against the account of the default credential chain:
//! cargo run --example embed
//! ```
//!
//! The endpoint comes from the first argument or `TOLLGATE_ENDPOINT_URL`. The admission
//! directory is the usual one (`TOLLGATE_ADMISSION_DIR`, else the user cache), so this
//! program shares quotas with every other tollgate process of the user.
#![forbid(unsafe_code)]

use std::time::Duration;

use tokio::sync::oneshot;
use tollgate::engine::aws::{check_credentials, CredentialsErrorKind};
use tollgate::engine::{Engine, EngineConfig};
use tollgate::scan::supervisor::{AwaitReport, CancelScan, GetProgress, StartScan};
use tollgate::{Dataset, DiscoveryReport, DiscoveryRequest, EngineDiscovery};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint_url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("TOLLGATE_ENDPOINT_URL").ok());

    let request = DiscoveryRequest {
        endpoint_url: endpoint_url.clone(),
        timeout: Duration::from_secs(120),
        ..Default::default()
    };

    // 0. Credentials before anything else: a scan without them only fails every call.
    //    The error's Display says what was tried and how to fix it; its kind is typed.
    if let Err(e) = check_credentials(request.credentials_source()).await {
        match e.kind() {
            CredentialsErrorKind::SsoLoginRequired => {
                eprintln!(
                    "(an SSO profile: `aws sso login --profile {}`)",
                    e.profile()
                )
            }
            CredentialsErrorKind::ProfileNotFound => {
                eprintln!("(profiles defined: {})", e.detail())
            }
            _ => {}
        }
        return Err(e.into());
    }

    // 1. The engine: admission directory, quota actors (or a client of the user's
    //    coordinator). The discovery runtime runs the supervisor on its own actor thread.
    let engine = Engine::open(EngineConfig::from_env()?)?;
    let discovery = engine.discovery(None);
    let supervisor = discovery.supervisor();

    // 2. A scan through messages: StartScan answers at once with the scan id; progress is
    //    there to poll; AwaitReport delivers the report when the scan finishes.
    let started = supervisor.send(StartScan(request.clone())).await??;
    println!("scan {} started", started.scan_id);
    let (reply, report) = oneshot::channel();
    supervisor
        .send(AwaitReport {
            scan_id: started.scan_id,
            reply,
        })
        .await?;
    if let Some(progress) = supervisor.send(GetProgress(started.scan_id)).await? {
        for p in progress {
            println!(
                "  {:<18} listed {:>4}  calls {:>4}/{:<4}",
                p.dataset, p.listed, p.done, p.planned
            );
        }
    }

    // 3. Another scan, cancelled right away: its report still arrives, with what it had
    //    collected and the unfinished datasets marked `cancelled`.
    let other = supervisor
        .send(StartScan(DiscoveryRequest {
            datasets: vec![Dataset::S3Buckets, Dataset::KmsKeys],
            ..request
        }))
        .await??;
    let cancelled = supervisor.send(CancelScan(other.scan_id)).await?;
    println!("scan {} cancelled: {cancelled}", other.scan_id);
    let (other_reply, other_report) = oneshot::channel();
    supervisor
        .send(AwaitReport {
            scan_id: other.scan_id,
            reply: other_reply,
        })
        .await?;

    // 4. Read the results.
    print_report(&report.await??);
    print_report(&other_report.await??);

    discovery.shutdown();
    engine.close().await?;
    Ok(())
}

fn print_report(report: &DiscoveryReport) {
    println!(
        "\n{} · account {} · regions {}",
        report.scan_id,
        report.account.as_deref().unwrap_or("unresolved"),
        report.regions.join(",")
    );
    for (name, dataset) in &report.datasets {
        println!(
            "  {name:<18} {:<10} {:>4} items  {} reasons",
            dataset.status.as_str(),
            dataset.items.len(),
            dataset.reasons.len()
        );
        for reason in &dataset.reasons {
            println!(
                "      {} {} ×{}: {}",
                reason.operation, reason.kind, reason.count, reason.message
            );
        }
    }
    for message in report.throttling.iter().flat_map(|t| &t.messages) {
        println!("  throttling: {message}");
    }
}
