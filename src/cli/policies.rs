//! `tollgate policies`: the effective policy table.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use tollgate_engine::EngineConfig;

pub fn run(json: bool) -> anyhow::Result<ExitCode> {
    let config = EngineConfig::from_env()?;
    for warning in config.policies.warnings() {
        eprintln!("tollgate: warning: {warning}");
    }
    let rows = config.policies.rows();
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&rows).context("encoding the policy table")?;
        writeln!(out, "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<58} {:>10} {:>8} {:>11} {:>8}  origin",
        "service:group", "rate/s", "burst", "concurrency", "retries"
    )?;
    for row in rows {
        let p = row.policy;
        writeln!(
            out,
            "{:<58} {:>10} {:>8} {:>11} {:>8}  {}",
            format!("{}:{}", row.service, row.group),
            p.rate_per_second(),
            p.burst(),
            p.concurrency(),
            p.retry_capacity(),
            serde_json::to_value(row.origin)?.as_str().unwrap_or("?"),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
