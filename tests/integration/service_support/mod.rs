//! Shared by the service's integration tests: a `tollgate serve` child process on a free
//! loopback port with its own admission and state directories, and its API called through
//! the test kit's HTTP client.

#![allow(dead_code)] // each test binary uses a different part

pub mod inventory;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tollgate_testkit::http::{self, Call};

/// How often the helpers poll.
const POLL: Duration = Duration::from_millis(100);

/// A `tollgate serve` child; killed (SIGKILL) on drop unless stopped.
pub struct Serve {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub token: String,
}

/// Where one service keeps its things.
pub struct Dirs {
    pub admission: PathBuf,
    pub state: PathBuf,
}

impl Dirs {
    pub fn new(root: &Path) -> Dirs {
        Dirs {
            admission: root.join("admission"),
            state: root.join("state"),
        }
    }
}

/// The environment every child gets: emulator credentials, nothing from the user.
pub fn child_env(cmd: &mut Command, dirs: &Dirs) {
    tollgate_testkit::emulator_env(cmd)
        .env("TOLLGATE_ADMISSION_DIR", &dirs.admission)
        .env("TOLLGATE_STATE_DIR", &dirs.state)
        .env_remove("TOLLGATE_QUOTA_OVERRIDES");
}

impl Serve {
    /// Start `tollgate serve --listen 127.0.0.1:0 [args]`, wait for its first stdout line.
    pub fn start(dirs: &Dirs, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        child_env(&mut cmd, dirs);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning tollgate serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("tollgate serve printed its address within 60 s");
        let addr = line
            .trim_end()
            .strip_prefix("tollgate serve: listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let token = std::fs::read_to_string(dirs.state.join("api-token"))
            .expect("the token file exists once serve listens")
            .trim()
            .to_string();
        Serve { child, addr, token }
    }

    /// A request with the token.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        http(&self.addr, method, path, Some(&self.token), body)
    }

    /// A request with the token, answer parsed as JSON.
    pub fn json(&self, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
        let (status, text) = self.call(method, path, body);
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path}: {status} {text:?} is not JSON: {e}"));
        // Every scan report the service tests read validates against the schema.
        if status == 200 && path.starts_with("/v1/scans/") && path.ends_with("/report") {
            tollgate_testkit::report_schema::assert_valid(&value);
        }
        (status, value)
    }

    /// A scan's status now.
    pub fn status_of(&self, scan_id: &str) -> String {
        let (code, scan) = self.json("GET", &format!("/v1/scans/{scan_id}"), None);
        assert_eq!(code, 200, "{scan}");
        scan["status"].as_str().unwrap().to_string()
    }

    /// Wait (bounded) until `scan_id` has one of `statuses`.
    pub fn wait_for(&self, scan_id: &str, statuses: &[&str], limit: Duration) -> String {
        // Counted polls instead of a clock read (clippy.toml bans those outside one place).
        let polls = limit.as_millis() / POLL.as_millis();
        for _ in 0..polls {
            let status = self.status_of(scan_id);
            if statuses.contains(&status.as_str()) {
                return status;
            }
            std::thread::sleep(POLL);
        }
        let status = self.status_of(scan_id);
        panic!("scan {scan_id} still {status} after {limit:?}, expected one of {statuses:?}");
    }

    /// SIGTERM and wait (bounded); the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("a pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        for _ in 0..(30_000 / POLL.as_millis()) {
            if let Some(status) = self.child.try_wait().expect("waiting") {
                return status;
            }
            std::thread::sleep(POLL);
        }
        panic!("serve did not stop within 30 s of SIGTERM");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request, with the bearer token if given; (status, body).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut call = Call::new(method, path).header("content-type", "application/json");
    if let Some(token) = token {
        call = call.header("authorization", format!("Bearer {token}"));
    }
    let answer = http::must(addr, call.body(body.unwrap_or("")));
    (answer.status, answer.text())
}
