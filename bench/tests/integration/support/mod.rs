//! The two executables the bench tests run: `tollgate-bench` (this package's binary,
//! which cargo builds for these tests) and the user binary `tollgate`, which the bench
//! spawns from beside itself. Cargo builds another package's binary only for that
//! package's own tests, so `tollgate` is whatever the last build of it left in the same
//! target directory: `cargo test --workspace` (scripts/test, CI) builds it fresh first;
//! with `cargo test -p tollgate-bench` alone, run `cargo build -p tollgate` before.

#![allow(dead_code)] // each test file uses the part it needs

use std::path::{Path, PathBuf};

/// This package's `tollgate-bench`.
pub fn bench_exe() -> &'static str {
    env!("CARGO_BIN_EXE_tollgate-bench")
}

/// The `tollgate` binary beside `tollgate-bench` (where the bench itself looks for it).
pub fn tollgate_exe() -> PathBuf {
    let dir = Path::new(bench_exe())
        .parent()
        .expect("tollgate-bench has a directory");
    let tollgate = dir.join("tollgate");
    assert!(
        tollgate.is_file(),
        "{} is not built: run `cargo test --workspace`, or `cargo build -p tollgate` before \
         `cargo test -p tollgate-bench`",
        tollgate.display()
    );
    tollgate
}
