//! Running an executable as a user would, for the tests of `tollgate` and `tollgate-bench`:
//! the user's own settings that would change the answers removed, the outcome described
//! in full when an assertion fails.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// `exe` without the user's quota overrides or policy file in its environment.
pub fn command(exe: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_remove("TOLLGATE_QUOTA_OVERRIDES")
        .env_remove("TOLLGATE_POLICY_FILE")
        // A developer's own inventory store is never written by a test.
        .env_remove("TOLLGATE_STORE");
    cmd
}

/// Run `cmd` to its end, stdout and stderr captured.
#[track_caller]
pub fn output(cmd: &mut Command) -> Output {
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

/// Exit status, stdout and stderr, for an assertion message.
pub fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The rest of the first stdout line of `out` that starts with `prefix`, or a panic
/// showing the output: how a parent reads what a child process reports.
#[track_caller]
pub fn line_after(out: &Output, prefix: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|rest| rest.trim().to_string())
        .unwrap_or_else(|| panic!("no {prefix:?} line in {}", describe(out)))
}
