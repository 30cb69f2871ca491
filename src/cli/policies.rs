//! `tollgate policies`: the effective policy table, and whether each row's figures were
//! checked against AWS documentation (`verified`: see `tollgate_quota::defaults::Verified`).

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
    // Whether the figures were checked against AWS documentation (an override's are the user's).
    let verified = |row: &tollgate_quota::overrides::EffectiveRow| match row.origin {
        tollgate_quota::overrides::Origin::Override => "override",
        _ => tollgate_quota::defaults::verified(&row.service, &row.group).label(),
    };
    let mut out = std::io::stdout().lock();
    if json {
        /// A row of the table and whether its figures were checked.
        #[derive(serde::Serialize)]
        struct Marked<'a> {
            #[serde(flatten)]
            row: &'a tollgate_quota::overrides::EffectiveRow,
            verified: &'static str,
        }
        let marked: Vec<Marked> = rows
            .iter()
            .map(|row| Marked {
                row,
                verified: verified(row),
            })
            .collect();
        let text = serde_json::to_string_pretty(&marked).context("encoding the policy table")?;
        writeln!(out, "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<58} {:>10} {:>8} {:>11} {:>8}  {:<9} verified",
        "service:group", "rate/s", "burst", "concurrency", "retries", "origin"
    )?;
    for row in &rows {
        let p = row.policy;
        writeln!(
            out,
            "{:<58} {:>10} {:>8} {:>11} {:>8}  {:<9} {}",
            format!("{}:{}", row.service, row.group),
            p.rate_per_second(),
            p.burst(),
            p.concurrency(),
            p.retry_capacity(),
            serde_json::to_value(row.origin)?.as_str().unwrap_or("?"),
            verified(row),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
