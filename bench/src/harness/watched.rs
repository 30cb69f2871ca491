//! An emulator (dynalite for `hosts`, moto for `outage`) run under a watchdog shell that
//! stops it when this process exits however it exits: the shell waits for end-of-file on
//! a pipe whose only writer is held here, and the kernel closes it when this process dies.

#![allow(clippy::disallowed_methods)] // waiting for the server reads real time

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// A running server on a loopback port; stopped on drop.
pub struct Watched {
    pub url: String,
    watchdog: Child,
    stdin: Option<ChildStdin>,
}

impl Watched {
    /// Run `script` under `sh -c` with `$0` = `binary` and `$1` = a free loopback port,
    /// then wait (up to 30 s) until `answers(port)`. `name` is for messages.
    pub fn start(
        name: &str,
        script: &str,
        binary: &Path,
        answers: impl Fn(u16) -> bool,
    ) -> anyhow::Result<Watched> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .with_context(|| format!("finding a free loopback port for {name}"))?
            .port();
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(binary)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {} under sh", binary.display()))?;
        let stdin = watchdog.stdin.take();
        let server = Watched {
            url: format!("http://127.0.0.1:{port}"),
            watchdog,
            stdin,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !answers(port) {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{name} ({}) did not answer at {} within 30 s",
                binary.display(),
                server.url
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end-of-file: the watchdog stops the server
        let _ = self.watchdog.wait();
    }
}
