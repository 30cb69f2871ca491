//! `bench outage`: what a DynamoDB outage costs, measured from outside (issue 24, item 6).
//!
//! Real moto ([`moto`]) holds `--tables` tables; a fault proxy ([`fault_proxy`]) in front
//! of it answers 500 to every DescribeTable for `--outage` (default 90 s) starting
//! `--outage-start` after the first DescribeTable arrives; three (`--processes`) real
//! `tollgate discover --datasets dynamodb-tables` processes share one admission directory
//! and scan through it, each through its own proxy port (so each arrival is attributed
//! to its process). Per run it reports:
//!
//! - **attempts into the outage**: DescribeTable requests the proxy received inside the
//!   window (server-side), per process, and how many arrived in the window's first
//!   second (the burst before the breaker held callers back) and after it (probes);
//! - **completion after the outage's end**: the last process's exit minus the window's
//!   end (the target: at most 15 s);
//! - **items lost**: tables × processes minus the tables the reports list, and whether
//!   every report is complete.
//!
//! `--control` adds the same runs with circuit breakers off (`TOLLGATE_BREAKERS=off` in
//! the processes' environment), the figure that says what the breaker saves. Each 90 s
//! run costs about two minutes.
//!
//! # Layout
//! - `moto`: the moto server and its tables.
//! - `fault_proxy`: the counting proxy that fails DescribeTable inside the window.
//! - `run`: one run: spawn, arm the window, wait, read the reports.
//! - this file: flags, the runs, the table.

mod fault_proxy;
mod moto;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use self::fault_proxy::Window;
use self::run::{run_once, RunResult};

/// `bench outage` flags.
#[derive(Debug, clap::Args)]
pub struct OutageArgs {
    /// How long DescribeTable answers 500 (seconds).
    #[arg(long, default_value_t = 90.0, value_name = "SECONDS")]
    pub outage: f64,
    /// When the outage starts, after the first DescribeTable reaches the proxy (seconds).
    /// The default leaves the three scans of the default tables a few seconds of work
    /// after the outage (the bench prints how much: "left at the start").
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub outage_start: f64,
    /// How long the proxy holds each DescribeTable before answering it 500 during the
    /// outage (milliseconds; 0: at once). A service that fails slowly leaves more calls
    /// in flight when the first failure comes back.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub error_latency_ms: u64,
    /// Tables in moto (enough that the scans still run when the outage starts).
    #[arg(long, default_value_t = 400)]
    pub tables: usize,
    /// `tollgate discover` processes sharing one admission directory.
    #[arg(long, default_value_t = 3)]
    pub processes: usize,
    /// Runs per mode.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Also run with circuit breakers off (the control).
    #[arg(long)]
    pub control: bool,
    /// Keep every run's reports, telemetry and logs under this directory.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print the results as JSON too.
    #[arg(long)]
    pub json: bool,
}

/// Circuit breakers on (tollgate as shipped) or off (the control).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Breakers {
    On,
    Off,
}

const REGION: &str = "us-east-1";
const PREFIX: &str = "outage-";

pub fn run(args: &OutageArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.processes > 0, "--processes must be at least 1");
    anyhow::ensure!(args.outage > 0.0, "--outage must be positive");
    let window = Window {
        start: Duration::from_secs_f64(args.outage_start.max(0.0)),
        duration: Duration::from_secs_f64(args.outage),
        error_latency: Duration::from_millis(args.error_latency_ms),
    };
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let root = args
        .keep
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&root)?;
    let moto = moto::Moto::start()?;
    moto.create_tables(REGION, PREFIX, args.tables)?;
    eprintln!(
        "moto at {} with {} tables; outage of {:.1} s from {:.1} s after the first DescribeTable, \
         500s answered after {} ms",
        moto.url, args.tables, args.outage, args.outage_start, args.error_latency_ms
    );
    let mut modes = vec![Breakers::On];
    if args.control {
        modes.push(Breakers::Off);
    }
    let mut results = Vec::new();
    for i in 0..args.runs {
        for &mode in &modes {
            let dir = root.join(format!("{}-{i}", mode_name(mode)));
            std::fs::create_dir_all(&dir)?;
            let setup = run::Setup {
                moto_url: &moto.url,
                region: REGION,
                tables: args.tables,
                processes: args.processes,
                window,
                breakers: mode,
                dir: &dir,
            };
            let result = run_once(&setup)?;
            print_run(&result);
            results.push(result);
        }
    }
    println!();
    print_summary(&results, &modes);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    if let Some(keep) = &args.keep {
        eprintln!("kept every run under {}", keep.display());
    }
    // A run whose scans ended before the outage did, or never met it, measured no outage.
    let untrusted = results
        .iter()
        .filter(|r| r.ended_before_outage || r.into_outage == 0)
        .count();
    if untrusted > 0 {
        eprintln!(
            "FAILED: {untrusted} run(s) did not measure an outage (a scan ended before the \
             outage did, or sent nothing into it): raise --tables or lower --outage-start"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn mode_name(mode: Breakers) -> &'static str {
    match mode {
        Breakers::On => "breakers-on",
        Breakers::Off => "breakers-off",
    }
}

fn print_run(r: &RunResult) {
    let per: Vec<String> = r
        .into_outage_per_process
        .iter()
        .map(u64::to_string)
        .collect();
    println!(
        "{:<13} into the outage {:>4} (per process {}; first second {}, later {}), \
         DescribeTable in all {:>5}, completion after the end {:>7.1} s, items lost {}, \
         complete reports {}/{}",
        mode_name(r.breakers),
        r.into_outage,
        per.join("/"),
        r.first_second,
        r.into_outage - r.first_second,
        r.describe_tables,
        r.completion_after_end_s,
        r.items_lost,
        r.complete_reports,
        r.into_outage_per_process.len()
    );
    println!(
        "              left at the start {} calls ({:.1} s at the policy rate); recovery found {}",
        r.left_at_start,
        r.left_at_start_ideal_s,
        r.recovery_found_after_s
            .map_or("never".to_owned(), |s| format!("{s:.1} s after the end"))
    );
    println!("              arrivals (s into the outage): {}", r.timeline);
    if !r.failed_by_attempt.is_empty() {
        let by: Vec<String> = r
            .failed_by_attempt
            .iter()
            .map(|(a, n)| format!("attempt {a}: {n}"))
            .collect();
        println!(
            "              500s seen by the processes: {}",
            by.join(", ")
        );
    }
    if r.ended_before_outage {
        println!("              warning: a process ended before the outage did (add --tables)");
    }
}

fn print_summary(results: &[RunResult], modes: &[Breakers]) {
    println!(
        "{:<13} {:>5} {:>28} {:>34} {:>30} {:>12} {:>9}",
        "breakers",
        "runs",
        "into the outage min/med/max",
        "completion after end min/med/max",
        "recovery found min/med/max",
        "items lost",
        "complete"
    );
    for &mode in modes {
        let rows: Vec<&RunResult> = results.iter().filter(|r| r.breakers == mode).collect();
        let attempts = spread(rows.iter().map(|r| r.into_outage as f64).collect());
        let completion = spread(rows.iter().map(|r| r.completion_after_end_s).collect());
        let found = spread(
            rows.iter()
                .map(|r| r.recovery_found_after_s.unwrap_or(f64::NAN))
                .collect(),
        );
        let lost: u64 = rows.iter().map(|r| r.items_lost).max().unwrap_or(0);
        let complete = rows
            .iter()
            .all(|r| r.complete_reports == r.into_outage_per_process.len());
        println!(
            "{:<13} {:>5} {:>28} {:>34} {:>30} {:>12} {:>9}",
            mode_name(mode),
            rows.len(),
            format!("{:.0} / {:.0} / {:.0}", attempts.0, attempts.1, attempts.2),
            format!(
                "{:.1} s / {:.1} s / {:.1} s",
                completion.0, completion.1, completion.2
            ),
            format!("{:.1} s / {:.1} s / {:.1} s", found.0, found.1, found.2),
            format!("max {lost}"),
            if complete { "all" } else { "NOT all" }
        );
    }
}

/// Min, median (the lower middle of an even count) and max.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    (v[0], v[(v.len() - 1) / 2], v[v.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_min_median_max() {
        assert_eq!(spread(vec![3.0, 1.0, 2.0]), (1.0, 2.0, 3.0));
        assert_eq!(spread(vec![4.0, 1.0, 2.0, 3.0]), (1.0, 2.0, 4.0));
        assert_eq!(spread(vec![5.0]), (5.0, 5.0, 5.0));
    }
}
