//! A first run on a machine without AWS set up (issue 16), as a user runs it: the real
//! binary, an empty temporary home, every AWS variable cleared, and instance metadata
//! unreachable (a local port that accepts connections and never answers, the slow case).
//!
//! What must hold: no credentials → exit 1 before any scan output, one message saying
//! what was tried and what to do, no library WARN lines; a missing profile is named; an
//! expired SSO session says `aws sso login`; a failing `credential_process` gives its exit
//! status and its stderr appears nowhere (stdout, stderr at any `-v`, report, telemetry);
//! `tollgate demo` never runs the user's credential helpers. Times are printed, never
//! asserted.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

const SECRET: &str = "TOLLGATE-TEST-SECRET-5f2b9c";

/// A home directory with nothing in it, and a metadata endpoint that never answers.
struct FirstRun {
    home: tempfile::TempDir,
    _imds: TcpListener,
    imds_url: String,
}

impl FirstRun {
    fn new() -> Self {
        let imds = TcpListener::bind("127.0.0.1:0").unwrap();
        let imds_url = format!("http://{}", imds.local_addr().unwrap());
        FirstRun {
            home: tempfile::tempdir().unwrap(),
            _imds: imds,
            imds_url,
        }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.home.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A `credential_process` script at `rel`.
    fn script(&self, rel: &str, body: &str) -> String {
        self.write(rel, &format!("#!/bin/sh\n{body}\n"));
        let path = self.path(rel);
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path.display().to_string()
    }

    /// Run tollgate with a cleared environment: HOME, PATH, an admission directory in the
    /// home, and the unanswering metadata endpoint. Prints how long it took.
    #[allow(clippy::disallowed_methods)] // wall clock: printed for the report, not asserted
    fn run(&self, args: &[&str]) -> (Output, String) {
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", "/usr/bin:/bin")
            .env("TOLLGATE_ADMISSION_DIR", self.path("admission"))
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &self.imds_url)
            .current_dir(self.home.path())
            .output()
            .unwrap();
        eprintln!("tollgate {args:?} took {:?}", started.elapsed());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out, stderr)
    }
}

/// Exit 1, nothing on stdout, no scan output, no library warnings: only tollgate's message.
fn assert_refused_before_the_scan(out: &Output, stderr: &str) {
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!stderr.contains("WARN"), "{stderr}");
    assert!(!stderr.contains("started (scan"), "{stderr}");
    assert!(!stderr.contains("dataset "), "{stderr}");
    assert_eq!(stderr.matches("tollgate:").count(), 1, "{stderr}");
}

#[test]
fn no_credentials_exits_1_with_one_message_saying_what_was_tried_and_what_to_do() {
    let run = FirstRun::new();
    let (out, stderr) = run.run(&["discover", "--datasets", "kms-keys"]);
    assert_refused_before_the_scan(&out, &stderr);
    for needle in [
        "no AWS credentials found",
        "environment variables",
        "profile `default`",
        ".aws/config (missing)",
        "SSO",
        "credential_process",
        "web identity",
        "container",
        "instance metadata",
        "aws configure",
        "--profile",
        "AWS_PROFILE",
        "aws sso login",
    ] {
        assert!(stderr.contains(needle), "{needle:?} missing: {stderr}");
    }
}

#[test]
fn a_missing_profile_is_named_with_the_files_read() {
    let run = FirstRun::new();
    let (out, stderr) = run.run(&["discover", "--profile", "nope", "--datasets", "kms-keys"]);
    assert_refused_before_the_scan(&out, &stderr);
    assert!(stderr.contains("profile `nope` not found"), "{stderr}");
    let config = run.path(".aws/config");
    assert!(stderr.contains(&config.display().to_string()), "{stderr}");

    // With profiles defined, they are listed.
    run.write(
        ".aws/credentials",
        "[default]\naws_access_key_id = AKIDX\naws_secret_access_key = x\n",
    );
    run.write(".aws/config", "[profile work]\nregion = eu-west-1\n");
    let (out, stderr) = run.run(&["discover", "--profile", "nope"]);
    assert_refused_before_the_scan(&out, &stderr);
    assert!(
        stderr.contains("profiles defined: default, work"),
        "{stderr}"
    );
}

#[test]
fn an_expired_sso_session_says_aws_sso_login() {
    let run = FirstRun::new();
    run.write(
        ".aws/config",
        "[profile work]\nsso_session = corp\nsso_account_id = 123456789012\n\
         sso_role_name = ReadOnly\nregion = us-east-1\n\n\
         [sso-session corp]\nsso_start_url = https://example.awsapps.com/start\n\
         sso_region = us-east-1\n",
    );
    // The cache file is named by the SHA-1 of the session name: sha1("corp").
    run.write(
        ".aws/sso/cache/ee0bfd2552fbd840c02cc48b6e823320543c450f.json",
        r#"{"accessToken": "expired-token", "expiresAt": "2020-01-01T00:00:00Z", "region": "us-east-1", "startUrl": "https://example.awsapps.com/start"}"#,
    );
    let (out, stderr) = run.run(&["discover", "--profile", "work", "--datasets", "kms-keys"]);
    assert_refused_before_the_scan(&out, &stderr);
    assert!(stderr.contains("aws sso login --profile work"), "{stderr}");
    assert!(!stderr.contains("expired-token"), "{stderr}");
}

fn assert_secret_absent(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET),
        "the secret appears in {what}: {text}"
    );
}

#[test]
fn a_failing_credential_process_gives_its_exit_status_and_its_stderr_appears_nowhere() {
    let run = FirstRun::new();
    let helper = run.script(
        "bin/creds-helper",
        &format!("echo \"aws_secret_access_key={SECRET}\" >&2\nexit 3"),
    );
    run.write(
        ".aws/config",
        &format!("[profile helper]\ncredential_process = {helper}\nregion = us-east-1\n"),
    );
    let report = run.path("report.json");
    let telemetry = run.path("telemetry.jsonl");
    for verbosity in [None, Some("-v"), Some("-vv")] {
        let mut args = vec!["discover", "--profile", "helper", "--datasets", "kms-keys"];
        args.extend(["--output", report.to_str().unwrap()]);
        args.extend(["--telemetry", telemetry.to_str().unwrap()]);
        args.extend(verbosity);
        let (out, stderr) = run.run(&args);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_secret_absent("stdout", &String::from_utf8_lossy(&out.stdout));
        assert_secret_absent("stderr", &stderr);
        assert!(stderr.contains("credential_process"), "{stderr}");
        assert!(stderr.contains("exit status: 3"), "{stderr}");
        for file in [&report, &telemetry] {
            if file.exists() {
                assert_secret_absent("a file", &std::fs::read_to_string(file).unwrap());
            }
        }
    }
}

#[test]
fn the_demo_never_runs_the_users_credential_helpers() {
    let run = FirstRun::new();
    let marker = run.path("helper-ran");
    let helper = run.script(
        "bin/creds-helper",
        &format!("touch {}\nexit 1", marker.display()),
    );
    let config = format!("credential_process = {helper}\nregion = us-east-1\n");
    run.write(
        ".aws/config",
        &format!("[default]\n{config}\n[profile work]\n{config}"),
    );
    let (out, stderr) = run.run(&["demo"]);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !Path::new(&marker).exists(),
        "tollgate demo ran the user's credential_process"
    );
}
