//! The service and the inventory store (issue 34): every finished scan is written to the
//! store (by default `inventory.sqlite` in the state directory), `GET /v1/scans/{id}`
//! says whether and where, and `GET /v1/resources` / `GET /v1/changes` read it back with
//! the CLI's filters, one bounded page at a time; `GET /v1/resources/history` is one
//! resource's versions.

use crate::service_support;

use std::time::Duration;

use serde_json::{json, Value};
use service_support::inventory::{table_modified_between_two_scans, REGION};
use service_support::{Dirs, Serve};
use tollgate_testkit::moto::{DedicatedMoto, Moto, MOTO_ACCOUNT};

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

#[test]
fn a_resource_modified_between_two_scans_has_two_versions_in_its_history() {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let (first, second) = table_modified_between_two_scans(&serve, &moto, "svc-history");
    let key = format!(
        "account={MOTO_ACCOUNT}&resource_type=AWS::DynamoDB::Table&region={REGION}&id=svc-history"
    );
    let (code, history) = serve.json("GET", &format!("/v1/resources/history?{key}"), None);
    assert_eq!(code, 200, "{history}");
    assert_eq!(history["resource"]["id"], "svc-history", "{history}");
    assert_eq!(history["resource"]["tags"], json!({"env": "staging"}));
    let versions: Vec<(i64, &Value, &Value)> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["scan"].as_i64().unwrap(), &v["tags"], &v["changed"]))
        .collect();
    assert_eq!(
        versions,
        [
            (first, &json!({"env": "prod"}), &json!([])),
            (second, &json!({"env": "staging"}), &json!(["tags.env"])),
        ],
        "{history:#}"
    );
    for v in history["versions"].as_array().unwrap() {
        assert!(v["seen_at"].is_string() && v["arn"].is_string(), "{v}");
        assert!(v["properties"].is_object(), "{v}");
    }

    // A missing, empty, repeated, unknown or pattern parameter is a 400 naming it.
    let path = "/v1/resources/history";
    let without_id =
        format!("{path}?account={MOTO_ACCOUNT}&resource_type=AWS::DynamoDB::Table&region={REGION}");
    for (query, named) in [
        (without_id.clone(), "id"),
        (format!("{without_id}&id="), "id"),
        (format!("{path}?{key}&account=1"), "account"),
        (format!("{path}?{key}&colour=blue"), "colour"),
        (
            format!("{path}?account=1&resource_type=AWS::S3::*&region=r&id=x"),
            "resource_type",
        ),
    ] {
        let (code, body) = serve.json("GET", &query, None);
        assert_eq!(code, 400, "{query}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("{named}:")), "{query}: {error}");
    }
    // An unknown resource is a 404 that says what was asked.
    let (code, body) = serve.json(
        "GET",
        &format!("{path}?account={MOTO_ACCOUNT}&resource_type=AWS::DynamoDB::Table&region={REGION}&id=never-stored"),
        None,
    );
    assert_eq!(code, 404, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("never-stored"),
        "{body}"
    );
    // Newest first, as the live page reads them: the retag leads.
    let (code, page) = serve.json("GET", "/v1/changes?order=newest&limit=1", None);
    assert_eq!(code, 200, "{page}");
    assert_eq!(page["changes"][0]["kind"], "modified", "{page}");
    assert_eq!(page["changes"][0]["scan"], second, "{page}");
    // The token is required, as on every /v1 route.
    let (code, _) = service_support::http(&serve.addr, "GET", &format!("{path}?{key}"), None, None);
    assert_eq!(code, 401);
}

#[test]
fn with_the_store_off_the_history_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(&config, "[service]\nstore = \"off\"\n").unwrap();
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
        &["--config", config.to_str().unwrap()],
        &[],
    );
    let (code, body) = serve.json(
        "GET",
        "/v1/resources/history?account=1&resource_type=AWS::S3::Bucket&region=r&id=x",
        None,
    );
    assert_eq!(code, 404, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("service.store = \"off\""),
        "{body}"
    );
    let (code, resources) = serve.json("GET", "/v1/resources", None);
    assert_eq!(
        (code, &resources),
        (404, &body),
        "the answer of the other endpoints"
    );
}
