//! `tollgate replay SCRIPT.json [--json] [--seed N]`: a dry run of policies in simulated
//! time (see the `tollgate_replay` crate). Exit 0 when the replay ran, whatever its
//! requests' results; 1 when the script is invalid (the error names the field).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use tollgate_engine::EngineConfig;
use tollgate_replay::{ReplayOptions, Script};

pub fn run(script: &Path, json: bool, seed: u64) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(script)
        .with_context(|| format!("reading the replay script {}", script.display()))?;
    // Script policies over TOLLGATE_QUOTA_OVERRIDES over the defaults: keys the script
    // does not name behave as `tollgate discover` would see them.
    let base = EngineConfig::from_env()?.policies;
    let parsed = Script::parse(&text, &base)
        .with_context(|| format!("{} is not a valid replay script", script.display()))?;
    for warning in parsed.policies.warnings() {
        eprintln!("tollgate: warning: {warning}");
    }
    let report = tollgate_replay::run(&parsed, ReplayOptions { seed })?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        writeln!(
            out,
            "replay of {} (simulated time, jitter seed {seed})\n",
            script.display()
        )?;
        write!(out, "{}", report.table())?;
    }
    Ok(ExitCode::SUCCESS)
}
