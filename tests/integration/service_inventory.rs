//! The service and the inventory store (issue 34): every finished scan is written to the
//! store (by default `inventory.sqlite` in the state directory), `GET /v1/scans/{id}`
//! says whether and where, and `GET /v1/resources` / `GET /v1/changes` read it back with
//! the CLI's filters, one bounded page at a time.

use crate::service_support;

use std::time::Duration;

use service_support::{Dirs, Serve};
use tollgate_testkit::moto::{DedicatedMoto, Moto};

const LIMIT: Duration = Duration::from_secs(120);

fn scan(serve: &Serve, moto: &Moto) -> serde_json::Value {
    let body = format!(
        r#"{{"regions":["us-east-1"],"datasets":["s3-buckets"],"endpoint_url":"{}","timeout":"100s"}}"#,
        moto.url
    );
    let (code, answer) = serve.json("POST", "/v1/scans", Some(&body));
    assert_eq!(code, 202, "{answer}");
    let id = answer["scan_id"].as_str().unwrap().to_owned();
    let status = serve.wait_for(&id, &["complete", "partial", "failed"], LIMIT);
    assert_eq!(status, "complete");
    let (code, detail) = serve.json("GET", &format!("/v1/scans/{id}"), None);
    assert_eq!(code, 200, "{detail}");
    detail
}

#[test]
fn a_finished_scan_is_stored_and_read_back_page_by_page() {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    for i in 0..3 {
        moto.create_bucket(&format!("svc-inv-{i}"));
    }
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let detail = scan(&serve, &moto);
    let store = &detail["store"];
    assert_eq!(store["stored"], true, "{detail}");
    assert!(
        store["url"].as_str().unwrap().ends_with("inventory.sqlite"),
        "the default store is in the state directory: {store}"
    );
    assert_eq!(store["resources_written"], 3, "{store}");
    let (code, metrics) = service_support::http(&serve.addr, "GET", "/metrics", None, None);
    assert_eq!(code, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("tollgate_inventory_resources{")
                && l.contains("AWS::S3::Bucket")
                && l.ends_with(" 3")),
        "{metrics}"
    );

    // Three buckets, one per page, followed by the cursor.
    let mut ids = Vec::new();
    let mut path = "/v1/resources?types=AWS::S3::Bucket&limit=1".to_owned();
    loop {
        let (code, page) = serve.json("GET", &path, None);
        assert_eq!(code, 200, "{page}");
        let rows = page["resources"].as_array().unwrap();
        assert!(rows.len() <= 1, "{page}");
        ids.extend(rows.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
        match page["next"].as_str() {
            Some(next) => {
                path = format!("/v1/resources?types=AWS::S3::Bucket&limit=1&cursor={next}")
            }
            None => break,
        }
    }
    assert_eq!(ids, ["svc-inv-0", "svc-inv-1", "svc-inv-2"]);

    let (code, page) = serve.json("GET", "/v1/changes?since=0", None);
    assert_eq!(code, 200, "{page}");
    let changes = page["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3, "{page}");
    assert!(changes.iter().all(|c| c["kind"] == "added"), "{page}");

    // Bounded pages, named parameters.
    let (code, body) = serve.json("GET", "/v1/resources?limit=20000", None);
    assert_eq!(code, 400, "{body}");
    assert!(body.to_string().contains("limit"), "{body}");
    let (code, body) = serve.json("GET", "/v1/resources?colour=blue", None);
    assert_eq!(code, 400, "{body}");
    let (code, body) = serve.json("GET", "/v1/changes?since=yesterday-ish", None);
    assert_eq!(code, 400, "{body}");
}

#[test]
fn a_store_that_cannot_be_written_is_said_and_its_password_never_shown() {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    moto.create_bucket("svc-inv-unstored");
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(
        &config,
        "[service]\nstore = \"postgres://scanner:hunter2-secret@127.0.0.1:1/inventory\"\n",
    )
    .unwrap();
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", config.to_str().unwrap()],
        &[],
    );
    let detail = scan(&serve, &moto);
    assert_eq!(detail["store"]["stored"], false, "{detail}");
    assert!(detail["store"]["error"].is_string(), "{detail}");
    assert!(!detail.to_string().contains("hunter2"), "{detail}");
    let (code, body) = serve.json("GET", "/v1/resources", None);
    assert_eq!(code, 503, "{body}");
    assert!(!body.to_string().contains("hunter2"), "{body}");
    // The report is kept whatever the store did.
    let id = detail["scan_id"].as_str().unwrap();
    let (code, report) = serve.json("GET", &format!("/v1/scans/{id}/report"), None);
    assert_eq!(code, 200, "{report}");
}
