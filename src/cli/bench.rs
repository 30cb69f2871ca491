//! `tollgate bench ARGS...`: the benchmarks are their own executable, `tollgate-bench`
//! (crate `bench/`), so that this binary carries no benchmark code, no benchmark-only
//! dependency and no worker subcommands. Like git's and cargo's external subcommands,
//! this one hands its arguments to that executable, found beside this one (a cargo build
//! puts both in `target/PROFILE/`), else on PATH.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Args;

/// The benchmark executable's file name.
const BENCH_EXE: &str = "tollgate-bench";
/// How to build it (in the profile the benchmarks are meant for).
const BUILD_HINT: &str = "cargo build -p tollgate-bench --profile bench-fast";

/// Arguments of `tollgate bench`: everything after `bench` goes to tollgate-bench,
/// `--help` included.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct BenchArgs {
    /// The benchmark and its options (`tollgate bench --help` lists the benchmarks).
    #[arg(
        value_name = "BENCHMARK ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<OsString>,
}

/// Replace this process with tollgate-bench (its exit code and signals are then the
/// user's directly); returns only when that fails.
pub fn run(args: BenchArgs, verbose: u8) -> anyhow::Result<ExitCode> {
    let exe = locate()?;
    let mut cmd = Command::new(&exe);
    // `tollgate -v bench ...`: the flag was parsed here; pass it on.
    cmd.args(std::iter::repeat_n("-v", usize::from(verbose)));
    cmd.args(&args.args);
    let err = cmd.exec();
    Err(anyhow::Error::new(err).context(format!("running {}", exe.display())))
}

/// tollgate-bench beside this binary, else on PATH, else an error naming the build.
fn locate() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().ok();
    let beside = me
        .as_deref()
        .and_then(Path::parent)
        .map(|dir| dir.join(BENCH_EXE));
    if let Some(path) = beside.as_ref().filter(|p| is_executable(p)) {
        return Ok(path.clone());
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(BENCH_EXE))
            .find(|p| is_executable(p))
    });
    if let Some(path) = on_path {
        return Ok(path);
    }
    let looked = match &beside {
        Some(path) => format!("{} and PATH", path.display()),
        None => "PATH".to_owned(),
    };
    anyhow::bail!(
        "the benchmarks are a separate executable, {BENCH_EXE}, which was not found \
         (looked for {looked}); build it with `{BUILD_HINT}` (add `-p tollgate` for this \
         binary beside it) and run target/bench-fast/tollgate bench ..., or put \
         {BENCH_EXE} on PATH"
    )
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
