//! `--peer pyrate`: the same multi-process workload through pyrate-limiter's SQLite
//! bucket, the closest off-the-shelf cross-process limiter, measured in the same run, in
//! each round right after tollgate's admissions (so both see the same machine).
//!
//! Other candidates, all from the package registries this project can reach, were
//! considered and left out: `limits` (PyPI) shares state across processes only through a
//! Redis, Memcached or MongoDB server (its memory storage is per process);
//! `token-bucket`, `aiolimiter` and `ratelimit` (PyPI), `governor` (crates) and
//! `bottleneck` (npm, whose cross-process mode needs Redis) limit within one process.
//!
//! The bench installs pyrate-limiter (and filelock, which its multi-process mode needs)
//! from PyPI into the project's virtual environment (`.venv` at the repository root, or
//! `TOLLGATE_VENV`) on first use, then runs P Python workers sharing one SQLite file.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;
use tollgate_actors::clock::unix_now;

use crate::harness::worker::WorkerReport;

const WORKER: &str = include_str!("pyrate_worker.py");
/// Pinned, so that figures name what they measured (the versions current when pinned).
const PACKAGES: &[&str] = &["pyrate-limiter==4.5.1", "filelock==4.2.11"];
/// What `--peer pyrate` rows are labelled.
pub const SUBJECT: &str = "pyrate-limiter 4.5.1 SQLiteBucket (peer)";
/// Time for the Python workers to start and import before they begin together.
const START_DELAY: Duration = Duration::from_millis(1_500);

#[derive(Debug, Deserialize)]
struct PeerReport {
    latencies_us: Vec<u64>,
    started_us: u64,
    finished_us: u64,
    granted_at_us: Vec<u64>,
}

/// The project's virtual environment.
fn venv_dir() -> PathBuf {
    std::env::var_os("TOLLGATE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // This crate sits at `bench/` in the repository.
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join(".venv")
        })
}

/// A Python interpreter with pyrate-limiter importable, installing it if needed.
pub fn python_with_pyrate() -> anyhow::Result<PathBuf> {
    let venv = venv_dir();
    let python = venv.join("bin").join("python");
    if !python.exists() {
        eprintln!("bench: creating {}", venv.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv (is Python 3 installed?)")?;
        if !status.success() {
            bail!("python3 -m venv {} failed", venv.display());
        }
    }
    let importable = Command::new(&python)
        .args([
            "-c",
            "import sys, importlib.metadata as m, pyrate_limiter, filelock; \
             sys.exit(m.version('pyrate-limiter') != '4.5.1' or m.version('filelock') != '4.2.11')",
        ])
        .stderr(Stdio::null())
        .status()?
        .success();
    if !importable {
        eprintln!(
            "bench: installing {} into {}",
            PACKAGES.join(", "),
            venv.display()
        );
        let status = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet"])
            .args(PACKAGES)
            .status()
            .context("running pip")?;
        if !status.success() {
            bail!(
                "pip could not install {} into {}",
                PACKAGES.join(", "),
                venv.display()
            );
        }
    }
    Ok(python)
}

/// Run `processes` pyrate workers, `n` acquisitions each, on the SQLite bucket `db`
/// (shared by every round of a run, as tollgate's admission directory is); `python` from
/// [`python_with_pyrate`].
pub fn measure(
    python: &Path,
    processes: usize,
    n: usize,
    rate: f64,
    tmp: &Path,
) -> anyhow::Result<Vec<WorkerReport>> {
    let script = tmp.join("pyrate_worker.py");
    std::fs::write(&script, WORKER)?;
    let db = tmp.join("pyrate.sqlite");
    let start_at = unix_now().as_micros() + START_DELAY.as_micros() as u64;
    let children = (0..processes)
        .map(|_| {
            Command::new(python)
                .arg(&script)
                .arg(&db)
                .arg(n.to_string())
                .arg(rate.to_string())
                .arg(start_at.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .context("spawning a pyrate worker")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut reports = Vec::with_capacity(processes);
    for child in children {
        let pid = child.id();
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!("a pyrate worker failed: {}", out.status);
        }
        let report: PeerReport =
            serde_json::from_slice(&out.stdout).context("reading a pyrate worker's report")?;
        reports.push(WorkerReport {
            pid,
            coordinator: false,
            started_us: report.started_us,
            finished_us: report.finished_us,
            latencies_us: report.latencies_us,
            granted_at_us: report.granted_at_us,
        });
    }
    Ok(reports)
}
