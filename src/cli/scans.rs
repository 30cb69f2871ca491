//! `tollgate scans submit|list|show|cancel|report`: the local service's client. The
//! token comes from the service's state directory (`TOLLGATE_STATE_DIR`, else
//! `$XDG_STATE_HOME/tollgate`, else `~/.local/state/tollgate`), the address from `--url`
//! (default `http://127.0.0.1:7878`). Every command prints a table, or with `--json`
//! the API's JSON.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use tollgate_service::client::DEFAULT_URL;
use tollgate_service::{ApiToken, ClientError, ServiceClient, StateDir, StateDirEnv};

/// `tollgate scans` flags shared by every subcommand.
#[derive(Debug, clap::Args)]
pub struct ScansArgs {
    /// The service's URL.
    #[arg(long, global = true, value_name = "URL", env = "TOLLGATE_SERVICE_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: ScansCommand,
}

/// One `tollgate scans` subcommand.
#[derive(Debug, clap::Subcommand)]
pub enum ScansCommand {
    /// Submit a scan of a configured target, or of regions and datasets; an identical
    /// running scan is joined instead.
    Submit(SubmitArgs),
    /// List scans, newest first.
    List,
    /// One scan with per-dataset progress.
    Show {
        /// The scan id.
        scan_id: String,
    },
    /// Cancel a queued or running scan (its partial report is kept).
    Cancel {
        /// The scan id.
        scan_id: String,
    },
    /// A finished scan's report (the JSON `tollgate discover` writes, with `--json`).
    Report {
        /// The scan id.
        scan_id: String,
    },
}

/// `tollgate scans submit` flags.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// A target from the service's configuration.
    #[arg(long, conflicts_with_all = ["regions", "types", "endpoint_url", "profile", "timeout", "role_arn"])]
    pub target: Option<String>,
    /// Regions, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions: Vec<String>,
    /// Resource types, comma-separated: type names, `*` globs or dataset aliases
    /// (default: the default types); `--datasets` is the same flag.
    #[arg(long, alias = "datasets", value_delimiter = ',', value_name = "TYPE")]
    pub types: Vec<String>,
    /// Send every AWS request to this endpoint (an emulator).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// AWS profile.
    #[arg(long)]
    pub profile: Option<String>,
    /// Deadline of the whole scan (90s, 5m, 1h).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Scan another account: the IAM role to assume (STS AssumeRole).
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// The external id the role requires.
    #[arg(long, value_name = "ID", requires = "role_arn")]
    pub external_id: Option<String>,
    /// The role session name (default: tollgate).
    #[arg(long, value_name = "NAME", requires = "role_arn")]
    pub session_name: Option<String>,
    /// Wait until the scan finishes and print its status.
    #[arg(long)]
    pub wait: bool,
    /// Skip the account's cooldown (never its cap of running scans).
    #[arg(long)]
    pub force: bool,
}

impl SubmitArgs {
    /// The submission's request body: the target, or the regions, datasets and the
    /// options given; `force` when asked.
    fn into_body(self) -> serde_json::Value {
        let mut body = match self.target {
            Some(target) => serde_json::json!({ "target": target }),
            None => {
                let mut body = serde_json::json!({
                    "regions": self.regions,
                    "types": self.types,
                });
                for (key, value) in [
                    ("endpoint_url", self.endpoint_url),
                    ("profile", self.profile),
                    ("timeout", self.timeout),
                    ("role_arn", self.role_arn),
                    ("external_id", self.external_id),
                    ("session_name", self.session_name),
                ] {
                    if let Some(value) = value {
                        body[key] = value.into();
                    }
                }
                body
            }
        };
        if self.force {
            body["force"] = true.into();
        }
        body
    }
}

/// How often `submit --wait` polls.
const POLL: Duration = Duration::from_millis(500);

pub fn run(args: ScansArgs) -> anyhow::Result<ExitCode> {
    let state_dir = StateDir::resolve(&StateDirEnv::from_process_env())?;
    let token = ApiToken::read(&state_dir.token_path())?;
    let client = ServiceClient::new(&args.url, token)?;
    let mut out = std::io::stdout().lock();
    let json = args.json;
    match args.command {
        ScansCommand::Submit(submit) => return submit_scan(&client, &mut out, submit, json),
        ScansCommand::List => list(&client, &mut out, json)?,
        ScansCommand::Show { scan_id } => {
            let scan = client.json("GET", &format!("/v1/scans/{scan_id}"), None)?;
            print_scan(&mut out, &scan, json)?;
        }
        ScansCommand::Cancel { scan_id } => {
            let scan = client.json("DELETE", &format!("/v1/scans/{scan_id}"), None)?;
            if json {
                writeln!(out, "{scan}")?;
            } else {
                writeln!(
                    out,
                    "cancelling {scan_id} (was {})",
                    scan["status"].as_str().unwrap_or("?")
                )?;
            }
        }
        ScansCommand::Report { scan_id } => report(&client, &mut out, &scan_id, json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `submit`: the submission's answer (refused: why, and what to do instead), or with
/// `--wait` the scan once it has ended (exit 0 only when it completed).
fn submit_scan(
    client: &ServiceClient,
    out: &mut impl Write,
    submit: SubmitArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let wait = submit.wait;
    let body = submit.into_body();
    let answer = match client.json("POST", "/v1/scans", Some(&body.to_string())) {
        Err(ClientError::Refused {
            reason,
            retry_after_seconds,
            latest_scan,
            message,
        }) => {
            if json {
                let refusal = serde_json::json!({
                    "error": message,
                    "reason": reason,
                    "retry_after_seconds": retry_after_seconds,
                    "latest_scan": latest_scan,
                });
                writeln!(out, "{refusal}")?;
            } else {
                writeln!(out, "refused ({reason}): {message}")?;
                writeln!(out, "latest scan: {latest_scan}")?;
                writeln!(
                    out,
                    "read it with `tollgate scans report {latest_scan}`, retry in \
                     {retry_after_seconds} s, or pass --force"
                )?;
            }
            return Ok(ExitCode::from(1));
        }
        answer => answer?,
    };
    let scan_id = answer["scan_id"]
        .as_str()
        .context("no scan_id in the answer")?
        .to_string();
    if wait {
        return wait_for(client, out, &scan_id, json);
    }
    if json {
        writeln!(out, "{answer}")?;
    } else {
        let how = if answer["joined"].as_bool() == Some(true) {
            "joined"
        } else {
            "submitted"
        };
        writeln!(out, "{how} {scan_id}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `submit --wait`: poll the scan every [`POLL`] until it is neither queued nor running,
/// then print it; exit 0 only when it completed.
fn wait_for(
    client: &ServiceClient,
    out: &mut impl Write,
    scan_id: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    loop {
        let scan = client.json("GET", &format!("/v1/scans/{scan_id}"), None)?;
        let status = scan["status"].as_str().unwrap_or("?");
        if status != "queued" && status != "running" {
            print_scan(out, &scan, json)?;
            return Ok(ExitCode::from(if status == "complete" { 0 } else { 1 }));
        }
        std::thread::sleep(POLL);
    }
}

/// `list`: one line per scan, newest first.
fn list(client: &ServiceClient, out: &mut impl Write, json: bool) -> anyhow::Result<()> {
    let answer = client.json("GET", "/v1/scans", None)?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<22} {:<12} {:<12} {:<24} datasets",
        "scan", "status", "target", "queued"
    )?;
    for scan in answer["scans"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "{:<22} {:<12} {:<12} {:<24} {}",
            scan["scan_id"].as_str().unwrap_or("?"),
            scan["status"].as_str().unwrap_or("?"),
            scan["target"].as_str().unwrap_or("-"),
            scan["queued_at"].as_str().unwrap_or("?"),
            join(&scan["datasets"]),
        )?;
    }
    Ok(())
}

/// `report`: a finished scan's report, as the service has it (`--json`) or one line per
/// dataset.
fn report(
    client: &ServiceClient,
    out: &mut impl Write,
    scan_id: &str,
    json: bool,
) -> anyhow::Result<()> {
    let bytes = client.request("GET", &format!("/v1/scans/{scan_id}/report"), None)?;
    if json {
        out.write_all(&bytes)?;
        return Ok(());
    }
    let report: serde_json::Value =
        serde_json::from_slice(&bytes).context("decoding the report")?;
    writeln!(
        out,
        "scan {} · account {} · {}",
        report["scan_id"].as_str().unwrap_or("?"),
        report["account"].as_str().unwrap_or("unresolved"),
        join(&report["regions"])
    )?;
    writeln!(out, "{:<18} {:<10} {:>7}", "dataset", "status", "items")?;
    for (name, dataset) in report["datasets"].as_object().into_iter().flatten() {
        writeln!(
            out,
            "{:<18} {:<10} {:>7}",
            name,
            dataset["status"].as_str().unwrap_or("?"),
            dataset["items"].as_array().map_or(0, Vec::len)
        )?;
    }
    Ok(())
}

fn join(values: &serde_json::Value) -> String {
    values
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn print_scan(out: &mut impl Write, scan: &serde_json::Value, json: bool) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(scan)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{} · {} · target {} · account {}",
        scan["scan_id"].as_str().unwrap_or("?"),
        scan["status"].as_str().unwrap_or("?"),
        scan["target"].as_str().unwrap_or("-"),
        scan["account"].as_str().unwrap_or("-"),
    )?;
    writeln!(
        out,
        "{:<18} {:<10} {:>7} {:>11} {:>7}",
        "dataset", "status", "listed", "done/plan", "items"
    )?;
    for p in scan["progress"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "{:<18} {:<10} {:>7} {:>11} {:>7}",
            p["dataset"].as_str().unwrap_or("?"),
            p["status"].as_str().unwrap_or("?"),
            p["listed"],
            format!("{}/{}", p["done"], p["planned"]),
            p["items"],
        )?;
    }
    if let Some(accounts) = scan["organization"]["accounts"].as_array() {
        writeln!(
            out,
            "organization · {} listed\n{:<14} {:<8} {:>9}  status/reason",
            scan["organization"]["listed"], "account", "state", "datasets"
        )?;
        for a in accounts {
            writeln!(
                out,
                "{:<14} {:<8} {:>9}  {}",
                a["account"].as_str().unwrap_or("?"),
                a["state"].as_str().unwrap_or("?"),
                format!("{}/{}", a["datasets_done"], a["datasets_total"]),
                a["status"].as_str().or(a["reason"].as_str()).unwrap_or("-"),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::print_scan;

    #[test]
    fn an_organization_scan_prints_one_line_per_account() {
        let scan = serde_json::json!({
            "scan_id": "scan-1", "status": "running", "target": "org", "account": null,
            "progress": [],
            "organization": {"listed": 2, "accounts": [
                {"account": "111111111111", "state": "running", "datasets_done": 1, "datasets_total": 2},
                {"account": "222222222222", "state": "skipped", "datasets_done": 0, "datasets_total": 0, "reason": "excluded"}
            ]}
        });
        let mut out = Vec::new();
        print_scan(&mut out, &scan, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("organization · 2 listed"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("111111111111")
                && l.contains("running")
                && l.contains("1/2")),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("222222222222") && l.contains("excluded")),
            "{text}"
        );
    }
}
