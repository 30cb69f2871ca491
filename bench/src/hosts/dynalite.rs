//! A dynalite (in-memory DynamoDB emulator on node) that `bench hosts` starts for itself
//! when not given `--endpoint-url`: the one scripts/dynalite.sh installs into `.node/`.
//!
//! It runs under a watchdog shell that stops it when this process exits however it exits
//! (the shell waits for end-of-file on a pipe whose only writer is held here; the kernel
//! closes it when this process dies), as the engine's tests do with moto.

#![allow(clippy::disallowed_methods)] // waiting for the server reads real time

use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::Context;

use crate::harness::watched::Watched;

/// Where scripts/dynalite.sh installs it, relative to the repository root.
const INSTALLED: &str = ".node/node_modules/.bin/dynalite";

/// `$0` is dynalite, `$1` the port. `read` returns at end-of-file.
const WATCHDOG: &str =
    "\"$0\" --host 127.0.0.1 --port \"$1\" --createTableMs 0 >/dev/null 2>&1 & d=$!; \
     read -r _; kill \"$d\" 2>/dev/null; wait \"$d\"";

/// A running dynalite; stopped on drop.
pub struct Dynalite {
    /// Kept for its drop, which stops the server.
    _server: Watched,
    pub url: String,
}

impl Dynalite {
    /// Start one on a free loopback port and wait (up to 30 s) until it answers.
    pub fn start() -> anyhow::Result<Dynalite> {
        let server = Watched::start("dynalite", WATCHDOG, &find()?, answers)?;
        let url = server.url.clone();
        Ok(Dynalite {
            _server: server,
            url,
        })
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
