//! moto's server for the real-protocol tests (DESIGN §7 tier 3).
//!
//! `scripts/test` starts one `moto_server` on loopback and exports its URL as
//! `TOLLGATE_TEST_MOTO_URL`. A test run without it (plain `cargo test`) starts its own
//! server when `moto_server` is installed, and otherwise fails with instructions: a
//! discovery test that silently passes without an emulator would prove nothing.
//!
//! Tests share one server, so every resource a test creates carries a unique prefix and
//! checks look only at that prefix. This file has no AWS SDK code, so the root package's
//! CLI tests include it too (`#[path]`).

#![allow(dead_code)] // each test binary uses a different part

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The variable `scripts/test` sets.
pub const MOTO_URL_ENV: &str = "TOLLGATE_TEST_MOTO_URL";

/// moto's default account.
pub const MOTO_ACCOUNT: &str = "123456789012";

/// A running moto server.
pub struct Moto {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

/// A `moto_server` this test binary started, under a watchdog shell that stops it when
/// this process exits, however it exits: the shell waits for end-of-file on its stdin,
/// whose only writer is held here, and the kernel closes that pipe when the process dies.
/// (A `Drop` would not do: statics are never dropped, and the test harness ends the
/// process with `exit`.)
struct OwnedServer {
    _watchdog: Child,
    _stdin: ChildStdin,
}

/// The watchdog: `$0` is moto_server, `$1` the port. `read` returns at end-of-file.
const WATCHDOG: &str = "\"$0\" -H 127.0.0.1 -p \"$1\" >/dev/null 2>&1 & moto=$!; \
     read -r _; kill \"$moto\" 2>/dev/null; wait \"$moto\"";

static OWNED: OnceLock<std::sync::Mutex<Option<OwnedServer>>> = OnceLock::new();
static URL: OnceLock<String> = OnceLock::new();

/// Static credentials the emulator accepts, for the default credential chain; set once,
/// before any test of this binary loads an SDK config.
fn test_credentials() {
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_SESSION_TOKEN", "testing");
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::remove_var("AWS_PROFILE");
}

/// The shared server: `TOLLGATE_TEST_MOTO_URL`, else one this test binary starts.
pub fn moto() -> Moto {
    let url = URL.get_or_init(|| {
        test_credentials();
        match std::env::var(MOTO_URL_ENV) {
            Ok(url) if !url.is_empty() => url,
            _ => start_own_server(),
        }
    });
    Moto { url: url.clone() }
}

fn moto_binary() -> Option<PathBuf> {
    // The repository root is the manifest dir (root package) or its parent (engine).
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for root in [manifest.clone(), manifest.join("..")] {
        let venv = root.join(".venv/bin/moto_server");
        if venv.is_file() {
            return Some(venv);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("moto_server"))
            .find(|p| p.is_file())
    })
}

fn start_own_server() -> String {
    let Some(binary) = moto_binary() else {
        panic!(
            "these tests need moto's AWS emulator: run scripts/test (it installs and starts \
             moto), or `python3 -m pip install \"moto[server]\"`, or set {MOTO_URL_ENV} to a \
             running moto_server's URL"
        );
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
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
        .unwrap_or_else(|e| panic!("starting {} under sh: {e}", binary.display()));
    let stdin = watchdog.stdin.take().expect("piped stdin");
    OWNED
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .replace(OwnedServer {
            _watchdog: watchdog,
            _stdin: stdin,
        });
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..150 {
        if http_get_ok(port, "/moto-api/") {
            return url;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("moto_server at {url} did not answer within 15 s");
}

fn http_get_ok(port: u16, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

impl Moto {
    /// Create an IAM role for Lambda functions. moto checks that a function's role exists
    /// in its IAM; a plain form POST keeps the IAM SDK out of the build.
    pub fn create_lambda_role(&self, name: &str) -> String {
        use std::io::{Read, Write};
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches('/').parse().ok())
            .expect("moto URL has a port");
        let body = format!(
            "Action=CreateRole&Version=2010-05-08&RoleName={name}&AssumeRolePolicyDocument=%7B%7D"
        );
        let request = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=00\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("moto");
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.contains("EntityAlreadyExists"),
            "CreateRole: {answer}"
        );
        format!("arn:aws:iam::{MOTO_ACCOUNT}:role/{name}")
    }
}

/// A prefix unique to this test run, for resource names (lowercase, S3-safe).
pub fn unique_prefix(test: &str) -> String {
    let nanos = tollgate_quota::Clock::now(&tollgate_actors::TokioClock::system()).as_micros();
    format!("tg{}-{test}-", nanos % 1_000_000_000)
}
