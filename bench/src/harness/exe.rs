//! The executables a benchmark spawns: its own worker processes are hidden subcommands
//! of this executable, and where it measures the product itself (`fleet`'s tollgate mode
//! runs `tollgate discover`, `admission --serve` runs `tollgate serve`) it runs the user
//! binary `tollgate`, which a cargo build puts beside this one (`target/PROFILE/`).

use std::path::PathBuf;

use anyhow::Context;

/// The hidden subcommand of one admission worker process.
pub const WORKER: &str = "worker";
/// The hidden subcommand of one plain-SDK process of `fleet`.
pub const FLEET_WORKER: &str = "fleet-worker";

/// This executable, to spawn its worker subcommands.
pub fn bench() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("locating the tollgate-bench executable")
}

/// The `tollgate` binary beside this executable, or an error naming the build command.
pub fn tollgate() -> anyhow::Result<PathBuf> {
    let bench = bench()?;
    let dir = bench
        .parent()
        .context("the tollgate-bench executable has no directory")?;
    let tollgate = dir.join("tollgate");
    anyhow::ensure!(
        tollgate.is_file(),
        "this benchmark runs the tollgate binary, which is not beside {} (looked for {}); \
         build both into one directory: `cargo build -p tollgate -p tollgate-bench --profile bench-fast`",
        bench.display(),
        tollgate.display()
    );
    Ok(tollgate)
}
