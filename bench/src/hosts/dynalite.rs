//! A dynalite (in-memory DynamoDB emulator on node) that `bench hosts` starts for itself
//! when not given `--endpoint-url`: the one scripts/dynalite.sh installs into `.node/`.
//!
//! It runs under a watchdog shell that stops it when this process exits however it exits
//! (the shell waits for end-of-file on a pipe whose only writer is held here; the kernel
//! closes it when this process dies), as the engine's tests do with moto.

#![allow(clippy::disallowed_methods)] // waiting for the server reads real time

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// Where scripts/dynalite.sh installs it, relative to the repository root.
const INSTALLED: &str = ".node/node_modules/.bin/dynalite";

/// `$0` is dynalite, `$1` the port. `read` returns at end-of-file.
const WATCHDOG: &str =
    "\"$0\" --host 127.0.0.1 --port \"$1\" --createTableMs 0 >/dev/null 2>&1 & d=$!; \
     read -r _; kill \"$d\" 2>/dev/null; wait \"$d\"";

/// A running dynalite; stopped on drop.
pub struct Dynalite {
    pub url: String,
    watchdog: Child,
    stdin: Option<ChildStdin>,
}

impl Dynalite {
    /// Start one on a free loopback port and wait (up to 30 s) until it answers.
    pub fn start() -> anyhow::Result<Dynalite> {
        let binary = find()?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("finding a free loopback port for dynalite")?
            .port();
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg(&binary)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {} under sh", binary.display()))?;
        let stdin = watchdog.stdin.take();
        let dynalite = Dynalite {
            url: format!("http://127.0.0.1:{port}"),
            watchdog,
            stdin,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !answers(port) {
            anyhow::ensure!(
                Instant::now() < deadline,
                "dynalite ({}) did not answer at {} within 30 s",
                binary.display(),
                dynalite.url
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(dynalite)
    }
}

impl Drop for Dynalite {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end-of-file: the watchdog stops dynalite
        let _ = self.watchdog.wait();
    }
}

/// `$TOLLGATE_DYNALITE`, else `.node/` in the working directory or above this executable
/// (`target/PROFILE/` sits in the repository), else `dynalite` on PATH.
fn find() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("TOLLGATE_DYNALITE") {
        return Ok(PathBuf::from(path));
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    if let Some(found) = roots
        .iter()
        .map(|r| r.join(INSTALLED))
        .find(|p| p.is_file())
    {
        return Ok(found);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("dynalite"))
                .find(|p| p.is_file())
        })
        .context(
            "bench hosts needs dynalite (a DynamoDB emulator on node) and found none in .node/ \
             or on PATH: install it with `. scripts/dynalite.sh && start_dynalite` (or `npm \
             install --prefix .node dynalite@4.0.0`) from the repository root, set \
             TOLLGATE_DYNALITE to its executable, or pass --endpoint-url of a running one",
        )
}

/// Any HTTP answer to a bare GET: dynalite answers one with an error document.
fn answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && &head == b"HTTP/"
}
