//! `tollgate policies --at RFC3339`: the policy in force for every key at one instant.
//!
//! The same resolution the quota actors do (seed 003): each scheduled key's base policy
//! overlaid by the first entry whose cron matches that minute in its own zone, with the
//! instant until which it certainly holds (the next change of any entry's match, or the
//! scan cap); each allowance key's period at that instant and its next reset. Nothing
//! is read from the admission directory: this is the configuration's answer, not the
//! live state (`tollgate status` shows that).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;
use tollgate_engine::EngineConfig;
use tollgate_quota::overrides::{EffectiveRow, Origin};
use tollgate_quota::schedule::{AllowancePeriod, DEFAULT_SCAN_CAP};
use tollgate_quota::{Policy, PolicyTable, ReadTime, ServiceGroup, WallClock};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    service: String,
    group: String,
    policy: Policy,
    origin: Origin,
    /// The schedule entry in force (scheduled keys; `None` for the base).
    entry: Option<usize>,
    /// Until when this policy certainly holds (scheduled keys only; RFC 3339).
    valid_until: Option<String>,
    /// The allowance's period at the instant (allowance keys only).
    allowance: Option<AllowanceAt>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AllowanceAt {
    amount: u64,
    period_start: String,
    resets_at: String,
}

#[derive(Debug, Serialize)]
struct Report {
    at: String,
    keys: Vec<Row>,
}

fn row(table: &PolicyTable, effective: EffectiveRow, at: WallClock) -> Row {
    let mut row = Row {
        service: effective.service,
        group: effective.group,
        policy: effective.policy,
        origin: effective.origin,
        entry: None,
        valid_until: None,
        allowance: None,
    };
    let Ok(name) = ServiceGroup::new(&row.service, &row.group) else {
        return row;
    };
    match table.read_time_for_name(&name) {
        Some(ReadTime::Schedule(_)) => {
            let resolved = table.resolve_for_name(&name, at, at.saturating_add(DEFAULT_SCAN_CAP));
            row.policy = resolved.policy;
            row.entry = resolved.entry;
            row.valid_until = Some(resolved.valid_until.to_rfc3339());
        }
        Some(ReadTime::Allowance(allowance)) => {
            let AllowancePeriod { start, next_reset } = allowance.period_at(at);
            row.allowance = Some(AllowanceAt {
                amount: allowance.amount(),
                period_start: start.to_rfc3339(),
                resets_at: next_reset.to_rfc3339(),
            });
        }
        None => {}
    }
    row
}

pub fn run(at: &str, json: bool) -> anyhow::Result<ExitCode> {
    let at = WallClock::parse_rfc3339(at)
        .with_context(|| "--at: give an RFC 3339 instant such as 2026-01-05T09:00:00+01:00")?;
    let config = EngineConfig::from_env()?;
    for warning in config.policies.warnings() {
        eprintln!("tollgate: warning: {warning}");
    }
    let table = &config.policies;
    let keys: Vec<Row> = table
        .rows()
        .into_iter()
        .map(|r| row(table, r, at))
        .collect();
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&Report {
            at: at.to_rfc3339(),
            keys,
        })
        .context("encoding the policy table")?;
        writeln!(out, "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "effective at {at}")?;
    writeln!(
        out,
        "{:<46} {:>10} {:>8} {:>11} {:>8}  {:<24} allowance",
        "service:group", "rate/s", "burst", "concurrency", "retries", "valid until"
    )?;
    for k in keys {
        let p = k.policy;
        let until = k.valid_until.unwrap_or_else(|| "-".to_owned());
        let allowance = k.allowance.map_or("-".to_owned(), |a| {
            format!(
                "{} per period {} .. {}",
                a.amount, a.period_start, a.resets_at
            )
        });
        writeln!(
            out,
            "{:<46} {:>10} {:>8} {:>11} {:>8}  {:<24} {}",
            format!("{}:{}", k.service, k.group),
            p.rate_per_second(),
            p.burst(),
            p.concurrency(),
            p.retry_capacity(),
            until,
            allowance,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
