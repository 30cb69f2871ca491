//! moto's server for the real-protocol tests (DESIGN §7 tier 3).
//!
//! `scripts/test` starts one `moto_server` on loopback and exports its URL as
//! `TOLLGATE_TEST_MOTO_URL`. A test run without it (plain `cargo test`) starts its own
//! server when `moto_server` is installed, and otherwise fails with instructions: a
//! discovery test that silently passes without an emulator would prove nothing.
//!
//! Tests share one server, so every resource a test creates carries a unique prefix
//! ([`crate::unique_prefix`]) and checks look only at that prefix. Resources are created
//! with plain requests ([`Moto::call`]) rather than the AWS SDK, so that tests which do
//! not link the SDK (the CLI's and the service's) can use them too.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::http::{self, Answer, Call};

/// The variable `scripts/test` sets.
pub const MOTO_URL_ENV: &str = "TOLLGATE_TEST_MOTO_URL";

/// moto's default account.
pub const MOTO_ACCOUNT: &str = "123456789012";

/// `TOLLGATE_QUOTA_OVERRIDES` for a scan of moto's `kms-keys`: a retry capacity of one
/// for `kms:GetKeyLastUsage`.
///
/// Why: moto answers every GetKeyLastUsage with a 500. With the default capacity each
/// key's read is retried up to six attempts, each failure lengthens the key's cooldown
/// (0.5, 1, 2, 4, 8 s) and five in a row open the KMS breaker, after which every attempt
/// waits a real opening of 5 s, one probe at a time: with the three keys the suite's tests
/// leave in the shared moto, a scan spent about a minute waiting (and a second test's scan
/// longer, as keys accumulate). Those timing rules are proven on paused time
/// (`engine/tests/integration/aws_gate.rs`: `a_call_meeting_a_breaker_open_past_its_deadline_fails_unsent_naming_the_scope`,
/// `a_call_whose_deadline_allows_waits_for_the_probe_and_completes_after_the_outage`;
/// the breaker's real opening across processes in `actors/tests/integration/processes.rs`). With a
/// capacity of one, one retry of the 500 is still sent to moto and the others are refused
/// by the spent allowance, so the read is still retried, given up and reported, and with
/// fewer than five keys in moto the breaker never opens.
pub const KMS_ONE_RETRY: &str = r#"{"kms:GetKeyLastUsage":{"retryCapacity":1}}"#;

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

static OWNED: OnceLock<Mutex<Option<OwnedServer>>> = OnceLock::new();
static URL: OnceLock<String> = OnceLock::new();

/// The shared server: `TOLLGATE_TEST_MOTO_URL`, else one this test binary starts. The
/// first call also sets the emulator's credentials for this process
/// ([`crate::emulator_credentials`]), before any test of the binary loads an SDK config.
pub fn moto() -> Moto {
    let url = URL.get_or_init(|| {
        crate::emulator_credentials();
        match std::env::var(MOTO_URL_ENV) {
            Ok(url) if !url.is_empty() => url,
            _ => start_own_server(),
        }
    });
    Moto { url: url.clone() }
}

fn moto_binary() -> Option<PathBuf> {
    // The repository root is this crate's parent.
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/moto_server");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("moto_server"))
            .find(|p| p.is_file())
    })
}

fn start_own_server() -> String {
    let (url, server) = spawn_server();
    OWNED
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .replace(server);
    url
}

/// A moto server of one test's own, stopped when dropped (and when the test process
/// exits, however it exits): for state that cannot be shared by prefix, such as the one
/// organization moto's default account can manage. Dropping it closes the watchdog's
/// stdin, which stops the server.
pub struct DedicatedMoto {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    _server: OwnedServer,
}

impl DedicatedMoto {
    /// Start one (needs `moto_server`; sets the emulator credentials as [`moto`] does).
    pub fn start() -> DedicatedMoto {
        crate::emulator_credentials();
        let (url, server) = spawn_server();
        DedicatedMoto {
            url,
            _server: server,
        }
    }
}

fn spawn_server() -> (String, OwnedServer) {
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
    let server = OwnedServer {
        _watchdog: watchdog,
        _stdin: stdin,
    };
    let addr = format!("127.0.0.1:{port}");
    for _ in 0..150 {
        let up = http::exchange(&addr, Call::new("GET", "/moto-api/"));
        if up.is_ok_and(|a| a.status == 200) {
            return (format!("http://{addr}"), server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("moto_server at {addr} did not answer within 15 s");
}

impl Moto {
    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        let rest = self.url.strip_prefix("http://").unwrap_or(&self.url);
        rest.trim_end_matches('/')
    }

    /// One request to `service` in us-east-1 with a placeholder SigV4 header: moto reads
    /// the service from the credential scope and checks no signature.
    pub fn call(&self, service: &str, call: Call<'_>) -> Answer {
        self.call_in("us-east-1", service, call)
    }

    /// [`Moto::call`] in `region` (moto reads the region from the credential scope too):
    /// a test whose scan lists a whole region can keep that region to itself.
    pub fn call_in(&self, region: &str, service: &str, call: Call<'_>) -> Answer {
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=testing/20260101/{region}/{service}/aws4_request, \
             SignedHeaders=host, Signature=00"
        );
        http::must(self.addr(), call.header("authorization", auth))
    }

    /// One JSON-protocol request (`X-Amz-Target`) in us-east-1; the answer must be 200.
    pub fn json_call(&self, service: &str, target: &str, body: &str) -> Answer {
        self.json_call_in("us-east-1", service, target, body)
    }

    /// [`Moto::json_call`] in `region`.
    pub fn json_call_in(&self, region: &str, service: &str, target: &str, body: &str) -> Answer {
        let call = Call::new("POST", "/")
            .header("x-amz-target", target)
            .header("content-type", "application/x-amz-json-1.1")
            .body(body);
        let answer = self.call_in(region, service, call);
        assert_eq!(answer.status, 200, "{target}: {}", answer.text());
        answer
    }

    /// Create an IAM role for Lambda functions. moto checks that a function's role exists
    /// in its IAM; a plain form POST keeps the IAM SDK out of the build.
    pub fn create_lambda_role(&self, name: &str) -> String {
        let body = format!(
            "Action=CreateRole&Version=2010-05-08&RoleName={name}&AssumeRolePolicyDocument=%7B%7D"
        );
        let call = Call::new("POST", "/")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        let answer = self.call("iam", call);
        assert!(
            answer.status == 200 || answer.text().contains("EntityAlreadyExists"),
            "CreateRole: {} {}",
            answer.status,
            answer.text()
        );
        format!("arn:aws:iam::{MOTO_ACCOUNT}:role/{name}")
    }

    /// Create an S3 bucket with a path-style PUT.
    pub fn create_bucket(&self, name: &str) {
        let path = format!("/{name}");
        let answer = self.call("s3", Call::new("PUT", &path));
        assert_eq!(answer.status, 200, "CreateBucket: {}", answer.text());
    }

    /// Create `n` DynamoDB tables named `{prefix}t{i}`.
    pub fn create_tables(&self, prefix: &str, n: usize) {
        self.create_tables_in("us-east-1", prefix, n);
    }

    /// [`Moto::create_tables`] in `region`: a scan of a region no other test uses
    /// describes these tables and no others, however many the shared server holds.
    pub fn create_tables_in(&self, region: &str, prefix: &str, n: usize) {
        for i in 0..n {
            self.create_table_in(region, &format!("{prefix}t{i}"));
        }
    }

    /// Create one on-demand DynamoDB table with a string hash key `pk`.
    pub fn create_table(&self, name: &str) {
        self.create_table_in("us-east-1", name);
    }

    /// [`Moto::create_table`] in `region`.
    pub fn create_table_in(&self, region: &str, name: &str) {
        self.json_call_in(
            region,
            "dynamodb",
            "DynamoDB_20120810.CreateTable",
            &format!(
                r#"{{"TableName":"{name}","AttributeDefinitions":[{{"AttributeName":"pk","AttributeType":"S"}}],"KeySchema":[{{"AttributeName":"pk","KeyType":"HASH"}}],"BillingMode":"PAY_PER_REQUEST"}}"#
            ),
        );
    }
}
