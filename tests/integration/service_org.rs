//! Organization scans in the service, over real HTTP against moto (issue 21's must-show):
//! an organization built with the calls boto3 would make (CreateOrganization, three
//! CreateAccount), then `tollgate serve` as a child process:
//!
//! - a scheduled `organization = true` target runs, and `GET /v1/scans/{id}` shows every
//!   member account (and the caller's own) with its state and datasets done/total;
//! - a POSTed organization scan with `exclude_accounts` skips that account `excluded`
//!   and scans the others.
//!
//! Each test runs its own moto (moto's default account manages one organization at most).

use crate::service_support;

use std::time::Duration;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use service_support::{Dirs, Serve};
use tollgate_quota::schedule::WallClock;
use tollgate_service::scheduler::CursorStore;
use tollgate_service::{History, ServiceConfig, StateDir};
use tollgate_testkit::moto::{DedicatedMoto, MOTO_ACCOUNT};

const LIMIT: Duration = Duration::from_secs(150);

/// CreateOrganization and three CreateAccount; the member ids.
async fn build_organization(url: &str) -> Vec<String> {
    let hub = aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
        .load()
        .await;
    let orgs = aws_sdk_organizations::Client::new(&hub);
    orgs.create_organization()
        .feature_set(aws_sdk_organizations::types::OrganizationFeatureSet::All)
        .send()
        .await
        .expect("CreateOrganization");
    let mut members = Vec::new();
    for i in 0..3 {
        let status = orgs
            .create_account()
            .email(format!("member{i}@example.com"))
            .account_name(format!("member-{i}"))
            .send()
            .await
            .expect("CreateAccount");
        members.push(
            status
                .create_account_status()
                .and_then(|s| s.account_id())
                .expect("an account id")
                .to_owned(),
        );
    }
    members
}

/// The `organization.accounts` entry of `account` in a scan's detail.
fn account<'a>(detail: &'a serde_json::Value, account: &str) -> &'a serde_json::Value {
    detail["organization"]["accounts"]
        .as_array()
        .unwrap_or_else(|| panic!("no organization.accounts in {detail}"))
        .iter()
        .find(|a| a["account"] == account)
        .unwrap_or_else(|| panic!("no account {account} in {detail}"))
}

#[test]
fn a_scheduled_organization_target_shows_every_member_accounts_progress() {
    let moto = DedicatedMoto::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let members = rt.block_on(build_organization(&moto.url));
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(
        &config,
        format!(
            "[[target]]\nname = \"org\"\norganization = true\nregions = [\"us-east-1\"]\n\
             datasets = [\"s3-buckets\", \"dynamodb-tables\"]\nendpoint_url = \"{}\"\n\
             max_accounts_in_flight = 2\ntimeout = \"120s\"\n\n[[schedule]]\ntarget = \"org\"\n\
             cron = \"* * * * *\"\ntimezone = \"UTC\"\n",
            moto.url
        ),
    )
    .unwrap();
    // The schedule last fired long ago: one missed instant, run at start-up (catch_up).
    let dirs = Dirs::new(tmp.path());
    let schedules = ServiceConfig::load(&config).unwrap().schedules;
    let history =
        History::open(&StateDir::open(dirs.state.clone()).unwrap().history_path()).unwrap();
    let long_ago = WallClock::parse_rfc3339("2026-01-05T00:00:00.000Z").unwrap();
    history.set_cursor(
        &schedules[0].id,
        long_ago.to_timestamp(WallClock::UNIX_EPOCH),
    );
    drop(history);
    let serve = Serve::start(&dirs, &["--config", config.to_str().unwrap()], &[]);
    let mut scan_id = None;
    for _ in 0..150 {
        let (code, list) = serve.json("GET", "/v1/scans", None);
        assert_eq!(code, 200, "{list}");
        if let Some(id) = list["scans"]
            .as_array()
            .and_then(|s| s.first())
            .and_then(|s| s["scan_id"].as_str())
        {
            scan_id = Some(id.to_string());
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let scan_id = scan_id.expect("the missed schedule fired within 75 s of the start");
    // While it runs, the detail has an organization block (accounts appear once listed).
    let (code, live) = serve.json("GET", &format!("/v1/scans/{scan_id}"), None);
    assert_eq!(code, 200, "{live}");
    assert_eq!(live["target"], "org", "{live}");
    assert!(live["organization"].is_object(), "{live}");
    assert_eq!(serve.wait_for(&scan_id, &["complete"], LIMIT), "complete");
    let (code, done) = serve.json("GET", &format!("/v1/scans/{scan_id}"), None);
    assert_eq!(code, 200, "{done}");
    assert_eq!(done["organization"]["listed"], 4, "{done}");
    for id in members.iter().map(String::as_str).chain([MOTO_ACCOUNT]) {
        let a = account(&done, id);
        assert_eq!(a["state"], "done", "{a}");
        assert_eq!(a["status"], "complete", "{a}");
        assert_eq!(a["datasets_total"], 2, "{a}");
        assert_eq!(a["datasets_done"], 2, "{a}");
    }
    let (code, report) = serve.json("GET", &format!("/v1/scans/{scan_id}/report"), None);
    assert_eq!(code, 200, "{report}");
    assert_eq!(report["organization"]["scanned"], 4, "{report}");
    assert_eq!(report["accounts"].as_array().unwrap().len(), 4, "{report}");
}

#[test]
fn a_posted_organization_scan_honours_exclude_accounts() {
    let moto = DedicatedMoto::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let members = rt.block_on(build_organization(&moto.url));
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let body = format!(
        r#"{{"organization":true,"regions":["us-east-1"],"datasets":["s3-buckets"],"endpoint_url":"{}","exclude_accounts":["{}"]}}"#,
        moto.url, members[1]
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let scan_id = answer["scan_id"].as_str().unwrap().to_string();
    assert_eq!(serve.wait_for(&scan_id, &["complete"], LIMIT), "complete");
    let (code, done) = serve.json("GET", &format!("/v1/scans/{scan_id}"), None);
    assert_eq!(code, 200, "{done}");
    let excluded = account(&done, &members[1]);
    assert_eq!(excluded["state"], "skipped", "{excluded}");
    assert_eq!(excluded["reason"], "excluded", "{excluded}");
    for id in [members[0].as_str(), members[2].as_str(), MOTO_ACCOUNT] {
        assert_eq!(account(&done, id)["state"], "done", "{done}");
    }
    let (code, report) = serve.json("GET", &format!("/v1/scans/{scan_id}/report"), None);
    assert_eq!(code, 200, "{report}");
    let scanned: Vec<&str> = report["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["account"].as_str())
        .collect();
    assert!(!scanned.contains(&members[1].as_str()), "{report}");
    assert_eq!(scanned.len(), 3, "{report}");
}
