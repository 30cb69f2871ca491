//! The service's guard rails for on-demand scans (issue 24, item 4), over real HTTP against
//! moto: a second on-demand scan of an account within its cooldown is refused with 429,
//! `retry_after_seconds` and the latest scan's id; `"force": true` runs it; scans past the
//! per-account cap queue, and one more is refused `busy`; `tollgate scans submit` prints
//! the refusal and the latest scan's id. A finished clean scan shows `"throttling": null`.

use crate::service_support;

use std::process::Command;
use std::time::Duration;

use service_support::{child_env, Dirs, Serve};
use tollgate_testkit::moto::{moto, Moto};
use tollgate_testkit::unique_prefix;

/// One DynamoDB control-plane call per second: a scan of a few tables runs for seconds.
const SLOW_DYNAMODB: &str = r#"{"dynamodb:control-plane-read":{"ratePerSecond":1,"burst":1}}"#;

const LIMIT: Duration = Duration::from_secs(120);

fn body(moto: &Moto, datasets: &str, extra: &str) -> String {
    body_in("us-east-1", moto, datasets, extra)
}

/// [`body`] of a scan of `region`.
fn body_in(region: &str, moto: &Moto, datasets: &str, extra: &str) -> String {
    format!(
        r#"{{"regions":["{region}"],"datasets":[{datasets}],"endpoint_url":"{}","timeout":"100s"{extra}}}"#,
        moto.url
    )
}

#[test]
fn a_second_scan_of_an_account_within_the_cooldown_is_refused_unless_forced() {
    let moto = moto();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::new(tmp.path());
    // Defaults: cooldown 60 s, one scan per account.
    let serve = Serve::start(&dirs, &[], &[]);
    // Lambda functions: a dataset moto answers in full (its KMS has no GetKeyLastUsage, so
    // a kms-keys scan ends partial there).
    let (code, answer) = serve.json(
        "POST",
        "/v1/scans",
        Some(&body(&moto, r#""lambda-functions""#, "")),
    );
    assert_eq!(code, 202, "{answer}");
    let first = answer["scan_id"].as_str().unwrap().to_string();
    serve.wait_for(&first, &["complete"], LIMIT);
    // A clean scan: the report and GET /v1/scans/{id} both say `"throttling": null`.
    let (code, scan) = serve.json("GET", &format!("/v1/scans/{first}"), None);
    assert_eq!(code, 200);
    assert!(
        scan.get("throttling").is_some_and(|t| t.is_null()),
        "{scan}"
    );
    let (_, report) = serve.json("GET", &format!("/v1/scans/{first}/report"), None);
    assert!(
        report.get("throttling").is_some_and(|t| t.is_null()),
        "{report}"
    );

    // Another dataset, same account (same endpoint, no profile, no role): cooldown.
    let other = body(&moto, r#""lambda-functions""#, "");
    let (code, refusal) = serve.json("POST", "/v1/scans", Some(&other));
    assert_eq!(code, 429, "{refusal}");
    assert_eq!(refusal["reason"], "cooldown", "{refusal}");
    assert_eq!(refusal["latest_scan"], first.as_str(), "{refusal}");
    let retry = refusal["retry_after_seconds"].as_u64().unwrap();
    assert!((1..=60).contains(&retry), "{refusal}");
    assert!(
        refusal["error"].as_str().unwrap().contains(&first),
        "{refusal}"
    );
    let (_, list) = serve.json("GET", "/v1/scans", None);
    assert_eq!(list["scans"].as_array().unwrap().len(), 1, "nothing queued");

    // The CLI prints the refusal and the latest scan's id.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(["scans", "submit", "--regions", "us-east-1"])
        .args([
            "--datasets",
            "lambda-functions",
            "--endpoint-url",
            &moto.url,
        ])
        .args(["--url", &format!("http://{}", serve.addr)]);
    child_env(&mut cmd, &dirs);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("refused (cooldown)"), "{stdout}");
    assert!(
        stdout.contains(&format!("latest scan: {first}")),
        "{stdout}"
    );

    // Forced: it runs.
    let forced = body(&moto, r#""lambda-functions""#, r#","force":true"#);
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&forced));
    assert_eq!(code, 202, "{answer}");
    let second = answer["scan_id"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    serve.wait_for(&second, &["complete", "partial"], LIMIT);
}

#[test]
fn scans_past_the_per_account_cap_queue_and_one_more_is_busy() {
    let moto = moto();
    // A region no other test uses: the slow scan describes these six tables at one per
    // second, not every table the suite's tests left in the shared moto (77 s late in
    // a suite run), and the kms-keys scan meets no key of other tests (each of which
    // moto fails with a 500).
    let region = "us-west-1";
    let body = |datasets: &str, extra: &str| body_in(region, &moto, datasets, extra);
    moto.create_tables_in(region, &unique_prefix("guard"), 6);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    // Room for three scans at once, one per account.
    std::fs::write(&config, "[service]\nmax_concurrent_scans = 3\n").unwrap();
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", config.to_str().unwrap()],
        &[("TOLLGATE_QUOTA_OVERRIDES", SLOW_DYNAMODB)],
    );
    let submit = |b: &str| serve.json("POST", "/v1/scans", Some(b));
    let (code, answer) = submit(&body(r#""dynamodb-tables""#, ""));
    assert_eq!(code, 202, "{answer}");
    let slow = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(serve.status_of(&slow), "running");
    let (code, answer) = submit(&body(r#""kms-keys""#, ""));
    assert_eq!(code, 202, "{answer}");
    let waiting = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(
        serve.status_of(&waiting),
        "queued",
        "the account's one slot is taken, though the service has room"
    );
    let (code, refusal) = submit(&body(r#""lambda-functions""#, ""));
    assert_eq!(code, 429, "{refusal}");
    assert_eq!(refusal["reason"], "busy", "{refusal}");
    assert_eq!(refusal["latest_scan"], waiting.as_str(), "{refusal}");
    assert!(refusal["retry_after_seconds"].as_u64().unwrap() >= 1);
    // Force skips the refusal, not the cap: it queues too.
    let (code, answer) = submit(&body(r#""lambda-functions""#, r#","force":true"#));
    assert_eq!(code, 202, "{answer}");
    let forced = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(serve.status_of(&forced), "queued");
    // One at a time, in order: each started after the one before it finished.
    let done = ["complete", "partial"];
    for scan in [&slow, &waiting, &forced] {
        serve.wait_for(scan, &done, LIMIT);
    }
    // RFC 3339 UTC, fractional seconds optional: (date and time, fraction) sorts.
    let at = |scan: &str, field: &str| {
        let (_, detail) = serve.json("GET", &format!("/v1/scans/{scan}"), None);
        let text = detail[field]
            .as_str()
            .unwrap()
            .trim_end_matches('Z')
            .to_string();
        let (whole, fraction) = text.split_once('.').unwrap_or((&text, "0"));
        let fraction: f64 = format!("0.{fraction}").parse().unwrap();
        (whole.to_string(), fraction)
    };
    assert!(at(&slow, "finished_at") <= at(&waiting, "started_at"));
    assert!(at(&waiting, "finished_at") <= at(&forced, "started_at"));
}
