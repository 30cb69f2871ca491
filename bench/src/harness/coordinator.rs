//! `DedicatedCoordinator`: a `tollgate serve` process holding an admission directory's
//! coordinator role for a run, so that every measured admission crosses the socket
//! (`bench admission --serve`, and one per host in `bench hosts`), or the bench's stand-in
//! of another shape in its place (`bench admission --serve --stand-in`).

#![allow(clippy::disallowed_methods)] // waits on a real process, on real time

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;

/// `tollgate serve` holding the coordinator role for a run (`--serve`; one per host in
/// `bench hosts`).
pub struct DedicatedCoordinator(std::process::Child);

impl DedicatedCoordinator {
    /// Spawn it and wait until its socket accepts connections.
    pub fn start(exe: &Path, dir: &Path) -> anyhow::Result<Self> {
        Self::start_with_env(exe, dir, &[])
    }

    /// The same, with extra environment (`bench hosts`: the fleet table's variables).
    pub fn start_with_env(
        exe: &Path,
        dir: &Path,
        env: &[(String, Option<String>)],
    ) -> anyhow::Result<Self> {
        let mut cmd = Command::new(exe);
        for (name, value) in env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        let child = cmd
            .arg("serve")
            .arg("--dir")
            .arg(dir)
            // serve also runs the discovery service: its API on a free loopback port and
            // its state beside the run's admission directory, not the user's.
            .args(["--listen", "127.0.0.1:0"])
            .env("TOLLGATE_STATE_DIR", dir.with_file_name("service-state"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("spawning `tollgate serve`")?;
        Self::ready(child, dir, "tollgate serve")
    }

    /// The bench's stand-in coordinator instead (`bench admission --serve --stand-in`:
    /// `admission::stand_in`), run as `bench stand-in-coordinator --dir DIR`.
    pub fn start_stand_in(bench: &Path, dir: &Path) -> anyhow::Result<Self> {
        let child = Command::new(bench)
            .arg(crate::admission::stand_in::STAND_IN)
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("spawning the stand-in coordinator")?;
        Self::ready(child, dir, "the stand-in coordinator")
    }

    /// `child`, once its socket in `dir` accepts connections.
    fn ready(child: std::process::Child, dir: &Path, what: &str) -> anyhow::Result<Self> {
        let server = DedicatedCoordinator(child);
        let socket = dir.join("coordinator.sock");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "{what} (--dir {}) did not accept connections within 10 s",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGKILL it and reap it (`bench hosts --kill-host`).
    pub fn kill(mut self) -> anyhow::Result<()> {
        self.0
            .kill()
            .context("sending SIGKILL to `tollgate serve`")?;
        self.0.wait()?;
        Ok(())
    }

    /// SIGTERM (a graceful hand-over) and wait; its pid.
    pub fn stop(mut self) -> anyhow::Result<u32> {
        let pid = self.0.id();
        if let Some(raw) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(raw, rustix::process::Signal::TERM);
        }
        let status = self.0.wait().context("waiting for `tollgate serve`")?;
        anyhow::ensure!(status.success(), "`tollgate serve` exited with {status}");
        Ok(pid)
    }
}

impl Drop for DedicatedCoordinator {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
