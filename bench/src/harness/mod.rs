//! What more than one bench family uses: the executables to spawn, the worker process
//! and its report, the dedicated coordinator, the echo floor, the window count and the
//! printed table. Nothing here knows a family; every family may use all of it.
//!
//! # Layout
//! - `exe`: where this executable and the `tollgate` binary beside it are.
//! - `worker`: the worker process (hidden subcommand `worker`, and `probe-socket`) of
//!   `admission --processes`, `takeover` and `hosts`, and reading its report back.
//! - `coordinator`: `tollgate serve` holding a directory's coordinator role for a run.
//! - `echo`: the bare Unix-socket echo, the floor of `admission --processes`.
//! - `window`: the most grants any window held, from grant instants.
//! - `exits`: waiting for a run's processes, each one's exit instant recorded.
//! - `stats`: percentiles and the printed table.
//! - `watched`: an emulator under a watchdog shell, stopped when this process exits.

pub mod coordinator;
pub mod echo;
pub mod exe;
pub mod exits;
pub mod stats;
pub mod watched;
pub mod window;
pub mod worker;
