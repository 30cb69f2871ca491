//! The live page in a real browser: headless Chromium (Debian's `chromium`, which
//! `scripts/test` installs when missing) loads `/?token=...` from a running service,
//! follows the redirect that moves the token into an HttpOnly cookie, runs the page's
//! script, and the rendered DOM must show a running scan's id and its datasets, one group
//! per account (moto's base account, where the scan runs, and a role's account, scanned
//! just before), and a chart of every quota key's recent admissions in its account's
//! group; and the latest stored changes, one group per account, each resource's id a
//! link to its history.

use crate::service_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use service_support::inventory::{table_modified_between_two_scans, REGION};
use service_support::{http, Dirs, Serve};
use tollgate_testkit::moto::{moto, DedicatedMoto, Moto, MOTO_ACCOUNT};
use tollgate_testkit::unique_prefix;

/// One DynamoDB control-plane call every two seconds: the scan stays running while the
/// browser starts and renders.
const SLOW_DYNAMODB: &str = r#"{"dynamodb:control-plane-read":{"ratePerSecond":0.5,"burst":1}}"#;

/// A second account: moto's `AssumeRole` hands out its credentials.
const ROLE_ACCOUNT: &str = "111111111111";
const ROLE: &str = "arn:aws:iam::111111111111:role/scanner";

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

/// The DOM Chromium renders from `url` after the page's script ran (5 s of virtual time:
/// a few polls).
fn dump_dom(browser: &Path, tmp: &Path, url: &str) -> String {
    let profile = tmp.join("chromium-profile");
    let out = Command::new(browser)
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
        .arg(url)
        .output()
        .expect("running chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The part of `dom` from `start` (which must be there) to the end of its element
/// `tag` (the first closing tag: the elements looked at do not nest their own kind).
fn element<'a>(dom: &'a str, start: &str, tag: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("{start} in the page:\n{dom}"));
    let end = dom[at..]
        .find(&format!("</{tag}>"))
        .map_or(dom.len(), |e| at + e);
    &dom[at..end]
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
    // The role's account first: a quick scan that leaves its quota keys behind.
    let role_body = format!(
        r#"{{"regions":["us-east-1"],"datasets":["lambda-functions"],"endpoint_url":"{}","role_arn":"{ROLE}"}}"#,
        moto.url
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&role_body));
    assert_eq!(code, 202, "{answer}");
    let role_scan = answer["scan_id"].as_str().unwrap().to_string();
    let finished = serve.wait_for(
        &role_scan,
        &["complete", "partial", "failed"],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(finished, "complete");
    let body = format!(
        r#"{{"regions":["us-east-1"],"datasets":["dynamodb-tables"],"endpoint_url":"{}","timeout":"100s"}}"#,
        moto.url
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let scan_id = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(serve.status_of(&scan_id), "running");

    // Wait until the running scan has been admitted once: its account is known then.
    let mut known = serde_json::Value::Null;
    for _ in 0..100 {
        known = serve.json("GET", &format!("/v1/scans/{scan_id}"), None).1;
        if known["accounts"] == serde_json::json!([MOTO_ACCOUNT]) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        known["accounts"],
        serde_json::json!([MOTO_ACCOUNT]),
        "{known}"
    );
    assert_eq!(known["account"], MOTO_ACCOUNT, "{known}");
    let (code, quotas) = serve.json("GET", "/v1/quotas", None);
    assert_eq!(code, 200, "{quotas}");
    let keys: Vec<(String, String)> = quotas["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["account"].as_str().unwrap().to_string(),
                k["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for account in [MOTO_ACCOUNT, ROLE_ACCOUNT] {
        assert!(
            keys.iter().any(|(a, _)| a == account),
            "{account} has quota keys: {quotas}"
        );
    }
    assert!(
        quotas["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["activity"]["admitted"]
                .as_array()
                .is_some_and(|a| a.iter().any(|n| n.as_u64() > Some(0)))),
        "some key has recent admissions: {quotas}"
    );

    // Without the token the page is refused.
    assert_eq!(http(&serve.addr, "GET", "/", None, None).0, 401);

    let dom = dump_dom(
        &browser,
        tmp.path(),
        &format!("http://{}/?token={}", serve.addr, serve.token),
    );
    assert!(
        dom.contains(&format!("data-scan-id=\"{scan_id}\"")),
        "the running scan is shown:\n{dom}"
    );
    assert!(
        dom.contains("data-dataset=\"dynamodb-tables\""),
        "its dataset is shown:\n{dom}"
    );
    // One group per account, the running scan in its account's group, and a chart per
    // quota key inside its account's group.
    let group_of = |account: &str| {
        let start = dom
            .find(&format!(
                "<section class=\"account\" data-account=\"{account}\">"
            ))
            .unwrap_or_else(|| panic!("a group for account {account}:\n{dom}"));
        let end = dom[start..]
            .find("</section>")
            .map_or(dom.len(), |e| start + e);
        &dom[start..end]
    };
    assert!(
        group_of(MOTO_ACCOUNT).contains(&format!("data-scan-id=\"{scan_id}\"")),
        "the running scan is in its account's group:\n{dom}"
    );
    for (account, key) in &keys {
        assert!(
            group_of(account).contains(&format!("<svg class=\"chart\" data-key=\"{key}\"")),
            "a chart for {key} in {account}'s group:\n{dom}"
        );
    }
    assert!(dom.contains("<polyline class=\"admitted\""), "{dom}");
    assert!(
        !dom.contains(&serve.token),
        "the token does not stay in the page"
    );
    serve.json("DELETE", &format!("/v1/scans/{scan_id}"), None);
}

#[test]
fn a_stored_change_appears_under_its_account_and_its_link_shows_the_resource_history() {
    let browser = chromium();
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let (first, second) = table_modified_between_two_scans(&serve, &moto, "page-history");

    // The link the page gives the table's id (URLSearchParams's encoding, `:` as %3A),
    // followed as a click follows it: the page loads with it as its address.
    let link = format!(
        "#history?account={MOTO_ACCOUNT}&resource_type=AWS%3A%3ADynamoDB%3A%3ATable&region={REGION}&id=page-history"
    );
    let dom = dump_dom(
        &browser,
        tmp.path(),
        &format!("http://{}/?token={}{link}", serve.addr, serve.token),
    );
    let group = element(
        &dom,
        &format!("<section class=\"changes-account\" data-account=\"{MOTO_ACCOUNT}\">"),
        "section",
    );
    let change = element(
        group,
        "<tr class=\"change\" data-kind=\"modified\" data-id=\"page-history\">",
        "tr",
    );
    assert!(
        change.contains("tags.env"),
        "the change's detail:\n{change}"
    );
    assert!(
        change.contains(&format!(
            "<a class=\"history-link\" href=\"{}\">page-history</a>",
            link.replace('&', "&amp;")
        )),
        "the id links to its history:\n{change}"
    );
    let history = element(&dom, "<div data-resource-id=\"page-history\">", "div");
    let newest = history
        .find(&format!("<tr class=\"version\" data-scan=\"{second}\">"))
        .unwrap_or_else(|| panic!("the second version:\n{history}"));
    let oldest = history
        .find(&format!("<tr class=\"version\" data-scan=\"{first}\">"))
        .unwrap_or_else(|| panic!("the first version:\n{history}"));
    assert!(newest < oldest, "newest first:\n{history}");
    assert!(history[newest..oldest].contains("tags.env"), "{history}");
    assert!(history[oldest..].contains("first version"), "{history}");
    assert!(
        history.contains("staging") && history.contains("prod"),
        "{history}"
    );
}

#[test]
fn with_the_store_off_the_page_says_there_are_no_changes_to_show() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(&config, "[service]\nstore = \"off\"\n").unwrap();
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", config.to_str().unwrap()],
        &[],
    );
    let dom = dump_dom(
        &browser,
        tmp.path(),
        &format!("http://{}/?token={}", serve.addr, serve.token),
    );
    let said = element(&dom, "<p class=\"store-off\">", "p");
    assert!(said.contains("stores no inventory"), "{said}");
    assert!(
        element(&dom, "<p id=\"error\">", "p") == "<p id=\"error\">",
        "no error on the page:\n{dom}"
    );
}
