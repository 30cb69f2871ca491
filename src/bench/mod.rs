//! Benchmarks, run as `tollgate bench ...`: separate from the tests, they print tables of
//! percentiles and ratios against a reference floor measured in the same run.
//!
//! Benchmarks read the wall clock by nature; that is allowed here and nowhere else in the
//! binary.

mod in_process;
mod stats;

use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Which benchmark.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Admission latency and throughput on an unlimited policy.
    Admission(AdmissionArgs),
}

/// Arguments of `tollgate bench admission`.
#[derive(Debug, Args)]
pub struct AdmissionArgs {
    /// Measure admission inside this process (actors on their own thread, real sled
    /// state in a temporary directory), with the governor crate's check as the floor.
    #[arg(long)]
    pub in_process: bool,
    /// Admissions per measurement.
    #[arg(long, default_value_t = 20_000)]
    pub requests: usize,
    /// Concurrent callers for the throughput measurement.
    #[arg(long, default_value_t = 4)]
    pub callers: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Run a benchmark.
pub fn run(which: BenchCommand) -> anyhow::Result<ExitCode> {
    match which {
        BenchCommand::Admission(args) => {
            anyhow::ensure!(
                args.in_process,
                "only the in-process admission benchmark exists so far; pass --in-process"
            );
            in_process::run(&args)
        }
    }
}
