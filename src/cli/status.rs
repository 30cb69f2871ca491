//! `tollgate status`: the quota state held in the admission directory.
//!
//! If no process holds the directory, status reads the stored records through
//! [`tollgate_actors::read_offline`] (which takes the lock briefly and releases it marked
//! cleanly shut down: reading changes nothing). If a coordinator holds it, status asks it over the socket for its pid, its
//! connected clients, every key's live state and every circuit breaker it knows
//! (breakers live in the coordinator's memory: with none running, the list is empty).
//!
//! A key with a schedule or a calendar allowance also shows its calendar: the schedule
//! entry in force and until when, or the allowance's use in its period and its reset
//! (from the coordinator's actor, or, without one, from the configuration and the
//! record's counter, charged with the record's lease as a restore would).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use tollgate_actors::messages::CalendarStatus;
use tollgate_actors::{read_offline, BreakerStatus, ClientInfo, OfflineStatus, TokioClock};
use tollgate_quota::{Clock, QuotaSnapshot};
use tollgate_storage::AdmissionDir;

#[derive(Debug, Serialize)]
struct Report {
    admission_dir: String,
    source: String,
    coordinator_pid: Option<u32>,
    /// Processes connected to the running coordinator (empty when none runs).
    clients: Vec<ClientInfo>,
    keys: Vec<KeyReport>,
    /// Circuit breakers of the running coordinator: scope, state, reopen instant.
    breakers: Vec<BreakerStatus>,
}

#[derive(Debug, Serialize)]
struct KeyReport {
    key: String,
    state: QuotaSnapshot,
    #[serde(skip_serializing_if = "Option::is_none")]
    calendar: Option<CalendarStatus>,
    /// Fleet mode on this host: mode (fleet / local-share / stop), block, last error.
    #[serde(skip_serializing_if = "Option::is_none")]
    fleet: Option<tollgate_quota::fleet::FleetView>,
    /// The key's latest degraded spell (mode, error, since, rejoined_at), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    fleet_degraded: Option<tollgate_actors::FleetDegradedSpell>,
}

/// The report: the stored state if no coordinator runs, else the coordinator's.
fn gather(dir: &AdmissionDir, config: tollgate_engine::EngineConfig) -> anyhow::Result<Report> {
    let mut report = Report {
        admission_dir: dir.path().display().to_string(),
        source: dir.source().to_string(),
        coordinator_pid: None,
        clients: Vec::new(),
        keys: Vec::new(),
        breakers: Vec::new(),
    };
    match read_offline(dir, &config.policies, TokioClock::system().now())? {
        OfflineStatus::Stored(keys) => {
            report.keys = keys
                .into_iter()
                .map(|k| KeyReport {
                    key: k.key,
                    state: k.state,
                    calendar: k.calendar,
                    fleet: None,
                    fleet_degraded: None,
                })
                .collect();
        }
        OfflineStatus::Coordinated => {
            let live = super::status_live::fetch(dir, config)?;
            report.coordinator_pid = Some(live.coordinator_pid);
            report.clients = live.clients;
            report.breakers = live.breakers;
            report.keys = live
                .keys
                .into_iter()
                .map(|k| KeyReport {
                    key: k.key,
                    state: k.state,
                    calendar: k.calendar,
                    fleet: k.fleet,
                    fleet_degraded: k.fleet_degraded,
                })
                .collect();
        }
    }
    Ok(report)
}

pub fn run(dir: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let config = tollgate_engine::EngineConfig::from_env()?.with_admission_dir(dir);
    let dir = AdmissionDir::resolve(&config.dir_env)?;
    let report = gather(&dir, config)?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write_text(&mut out, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report for people.
/// The key column: wide enough for a GetMetricData datapoint budget (aws partition) of a 12-digit
/// account in the longest region names (`aws/123456789012/ap-southeast-5/cloudwatch:
/// GetMetricData:recent-datapoints`), whose tokens (180,000.00) and window
/// (180000/180000) fill the wider number columns.
const KEY_WIDTH: usize = 74;

fn write_text(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    writeln!(
        out,
        "admission directory: {} ({})",
        report.admission_dir, report.source
    )?;
    match report.coordinator_pid {
        Some(pid) => {
            writeln!(out, "coordinator: pid {pid} (live state below)")?;
            let pids: Vec<String> = report.clients.iter().map(|c| c.pid.to_string()).collect();
            writeln!(
                out,
                "clients: {} connected{}{}",
                pids.len(),
                if pids.is_empty() { "" } else { ": pids " },
                pids.join(", ")
            )?;
        }
        None => writeln!(out, "coordinator: none running")?,
    }
    for b in &report.breakers {
        let reopens = b
            .reopens_at
            .map(|at| format!(", nothing sent before {at} (Unix time)"))
            .unwrap_or_default();
        let source = if b.from_fleet {
            " (from the fleet)"
        } else {
            ""
        };
        writeln!(out, "breaker {}: {:?}{reopens}{source}", b.scope, b.state)?;
    }
    if report.keys.is_empty() {
        return writeln!(out, "no quota state stored yet");
    }
    writeln!(
        out,
        "{:<KEY_WIDTH$} {:>10} {:>10} {:>7} {:>8} {:>7} {:>13}",
        "key", "tokens", "rate/s", "penalty", "retries", "held", "window"
    )?;
    for k in &report.keys {
        let s = &k.state;
        writeln!(
            out,
            "{:<KEY_WIDTH$} {:>10.2} {:>10.3} {:>7} {:>8} {:>7} {:>13}",
            k.key,
            s.tokens,
            s.effective_rate_per_second,
            s.penalty_steps,
            s.retry_units,
            s.reservations,
            format!("{}/{}", s.window_starts, s.window_limit),
        )?;
        match k.calendar {
            Some(CalendarStatus {
                allowance: Some(a), ..
            }) => writeln!(
                out,
                "  allowance: {}/{} used since {}, resets at {}",
                a.used, a.amount, a.period_start, a.resets_at
            )?,
            Some(CalendarStatus {
                entry,
                valid_until: Some(until),
                ..
            }) => writeln!(
                out,
                "  schedule: {} in force until {until}",
                entry.map_or("the base policy".to_owned(), |i| format!("entry {i}"))
            )?,
            _ => {}
        }
        if let Some(f) = &k.fleet {
            writeln!(
                out,
                "  fleet: {:?}, {} token(s) in hand, factor {}, {} host(s) seen{}{}",
                f.mode,
                f.block_left,
                f.factor,
                f.hosts_seen,
                f.local_share_rate
                    .map(|r| format!(", local share {r:.3}/s"))
                    .unwrap_or_default(),
                f.last_error
                    .as_ref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default(),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::{Policy, QuotaState, Timestamp};

    fn key(name: &str, rate: f64) -> KeyReport {
        let policy = Policy::with_rate(rate, rate).unwrap();
        KeyReport {
            key: name.into(),
            state: QuotaState::new(policy, Timestamp::ZERO).snapshot(Timestamp::ZERO),
            calendar: None,
            fleet: None,
            fleet_degraded: None,
        }
    }

    #[test]
    fn datapoint_budgets_line_up_with_request_keys_in_the_table() {
        let report = Report {
            admission_dir: "/tmp/a".into(),
            source: "stored".into(),
            coordinator_pid: None,
            clients: Vec::new(),
            keys: vec![
                key("aws/123456789012/us-east-1/cloudwatch:GetMetricData", 500.0),
                key(
                    "aws/123456789012/ap-southeast-5/cloudwatch:GetMetricData:recent-datapoints",
                    180_000.0,
                ),
                key(
                    "aws/123456789012/us-east-1/cloudwatch:GetMetricData:older-datapoints",
                    396_000.0,
                ),
            ],
            breakers: Vec::new(),
        };
        let mut out = Vec::new();
        write_text(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("key "))
            .collect();
        assert_eq!(table.len(), 4, "{text}");
        let width = table[0].len();
        for line in &table {
            assert_eq!(line.len(), width, "columns line up:\n{text}");
        }
        assert!(table[3].contains("396000.00"), "{text}");
        assert!(table[3].ends_with("0/396000"), "{text}");
    }
}
