//! The live page in a real browser: headless Chromium (Debian's `chromium`, which
//! `scripts/test` installs when missing) loads `/?token=...` from a running service,
//! follows the redirect that moves the token into an HttpOnly cookie, runs the page's
//! script, and the rendered DOM must show a running scan's id and its datasets.

mod service_support;

use std::path::PathBuf;
use std::process::Command;

use service_support::{http, Dirs, Serve};
use tollgate_testkit::moto::moto;
use tollgate_testkit::unique_prefix;

/// One DynamoDB control-plane call every two seconds: the scan stays running while the
/// browser starts and renders.
const SLOW_DYNAMODB: &str = r#"{"dynamodb:control-plane-read":{"ratePerSecond":0.5,"burst":1}}"#;

fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the live-page test needs headless Chromium: run scripts/test (it installs \
             Debian's `chromium` when missing), or `apt-get install -y chromium`"
        )
    })
}

#[test]
fn a_running_scan_and_its_datasets_appear_in_the_rendered_page() {
    let browser = chromium();
    let moto = moto();
    moto.create_tables(&unique_prefix("page"), 8);
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &[],
        &[("TOLLGATE_QUOTA_OVERRIDES", SLOW_DYNAMODB)],
    );
    let body = format!(
        r#"{{"regions":["us-east-1"],"datasets":["dynamodb-tables"],"endpoint_url":"{}","timeout":"100s"}}"#,
        moto.url
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let scan_id = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(serve.status_of(&scan_id), "running");

    // Without the token the page is refused.
    assert_eq!(http(&serve.addr, "GET", "/", None, None).0, 401);

    let profile = tmp.path().join("chromium-profile");
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("http://{}/?token={}", serve.addr, serve.token))
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dom.contains(&format!("data-scan-id=\"{scan_id}\"")),
        "the running scan is shown:\n{dom}"
    );
    assert!(
        dom.contains("data-dataset=\"dynamodb-tables\""),
        "its dataset is shown:\n{dom}"
    );
    assert!(
        !dom.contains(&serve.token),
        "the token does not stay in the page"
    );
    serve.json("DELETE", &format!("/v1/scans/{scan_id}"), None);
}
