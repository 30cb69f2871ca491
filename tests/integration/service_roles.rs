//! Multi-account scans through `role_arn`, over real HTTP: `tollgate serve` as a child
//! process against moto, whose STS `AssumeRole` hands out credentials of the account the
//! role ARN names (and whose `GetCallerIdentity` then answers with that account).
//!
//! - A scan with `role_arn` in account 111111111111 reports that account, and its quota
//!   keys carry it; a scan of the base account (moto's 123456789012) right after keeps
//!   its own keys: the two accounts' keys never mix.
//! - A malformed ARN is a 400 naming `role_arn`.
//! - A refused `AssumeRole` (a loopback STS that answers AccessDenied) is a failed scan
//!   whose reason names the role, and never the external id.

use crate::service_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use service_support::{Dirs, Serve};
use tollgate_testkit::moto::{moto, MOTO_ACCOUNT};

const ROLE_ACCOUNT: &str = "111111111111";
const ROLE: &str = "arn:aws:iam::111111111111:role/scanner";
const LIMIT: Duration = Duration::from_secs(120);
const EXTERNAL_ID: &str = "tenant-secret-4242";

fn submit(serve: &Serve, body: &str) -> String {
    let (code, answer) = serve.json("POST", "/v1/scans", Some(body));
    assert_eq!(code, 202, "{answer}");
    answer["scan_id"].as_str().unwrap().to_string()
}

fn report(serve: &Serve, scan_id: &str) -> serde_json::Value {
    let (code, report) = serve.json("GET", &format!("/v1/scans/{scan_id}/report"), None);
    assert_eq!(code, 200, "{report}");
    report
}

/// The quota keys the service's admission holds now.
fn quota_keys(serve: &Serve) -> Vec<String> {
    let (code, quotas) = serve.json("GET", "/v1/quotas", None);
    assert_eq!(code, 200, "{quotas}");
    quotas["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_role_scans_its_own_account_and_keeps_its_quota_keys_apart() {
    let moto = moto();
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let body = |role: &str| {
        format!(
            r#"{{"regions":["us-east-1"],"datasets":["lambda-functions"],"endpoint_url":"{}"{role}}}"#,
            moto.url
        )
    };

    let assumed = submit(
        &serve,
        &body(&format!(
            r#","role_arn":"{ROLE}","external_id":"{EXTERNAL_ID}","session_name":"tollgate-test""#
        )),
    );
    assert_eq!(serve.wait_for(&assumed, &["complete"], LIMIT), "complete");
    let assumed_report = report(&serve, &assumed);
    assert_eq!(assumed_report["account"], ROLE_ACCOUNT, "{assumed_report}");
    let keys = quota_keys(&serve);
    let role_keys: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with(&format!("aws/{ROLE_ACCOUNT}/")))
        .collect();
    assert!(
        role_keys.iter().any(|k| k.contains("lambda")),
        "no lambda key of the role's account in {keys:?}"
    );
    assert!(
        !keys.iter().any(|k| k.contains(MOTO_ACCOUNT)),
        "the base account was charged for the role's scan: {keys:?}"
    );

    let base = submit(&serve, &body(""));
    assert_eq!(serve.wait_for(&base, &["complete"], LIMIT), "complete");
    assert_eq!(report(&serve, &base)["account"], MOTO_ACCOUNT);
    let keys = quota_keys(&serve);
    for account in [ROLE_ACCOUNT, MOTO_ACCOUNT] {
        let prefix = format!("aws/{account}/us-east-1/lambda");
        assert!(
            keys.iter().any(|k| k.starts_with(&prefix)),
            "no {prefix}* key in {keys:?}"
        );
    }
    // The same request with and without the role are two scans, not a join.
    assert_ne!(assumed, base);
}

#[test]
fn a_malformed_role_is_refused_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    for (body, field) in [
        (
            r#"{"regions":["us-east-1"],"role_arn":"scanner"}"#,
            "role_arn:",
        ),
        (
            r#"{"regions":["us-east-1"],"role_arn":"arn:aws:iam::1111:role/x"}"#,
            "role_arn:",
        ),
        (
            r#"{"regions":["us-east-1"],"role_arn":"arn:aws:iam::111111111111:role/x","session_name":"a b"}"#,
            "session_name:",
        ),
        (
            r#"{"regions":["us-east-1"],"external_id":"abc"}"#,
            "external_id:",
        ),
    ] {
        let (code, answer) = serve.json("POST", "/v1/scans", Some(body));
        assert_eq!(code, 400, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.starts_with(field), "{body}: {error}");
    }
}

/// A loopback "STS" that refuses every request with AccessDenied (the Query protocol's
/// error document), as STS does for a role whose trust policy does not name the caller.
fn refusing_sts() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let error = "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
                <Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User: \
                arn:aws:iam::123456789012:user/base is not authorized to perform: \
                sts:AssumeRole on resource: arn:aws:iam::222222222222:role/locked</Message>\
                </Error><RequestId>0</RequestId></ErrorResponse>";
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{error}",
                error.len()
            );
        }
    });
    url
}

#[test]
fn a_refused_assume_role_fails_the_scan_naming_the_role() {
    let sts = refusing_sts();
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    let locked = "arn:aws:iam::222222222222:role/locked";
    let scan = submit(
        &serve,
        &format!(
            r#"{{"regions":["us-east-1"],"datasets":["kms-keys"],"endpoint_url":"{sts}","role_arn":"{locked}","external_id":"{EXTERNAL_ID}"}}"#
        ),
    );
    assert_eq!(serve.wait_for(&scan, &["failed"], LIMIT), "failed");
    let report = report(&serve, &scan);
    let text = report.to_string();
    let reason = report["datasets"]
        .as_array()
        .and_then(|d| d.first())
        .map(|d| d.to_string())
        .unwrap_or_else(|| text.clone());
    assert!(
        reason.contains(&format!("could not assume role {locked}")),
        "{reason}"
    );
    assert!(reason.contains("AccessDenied"), "{reason}");
    assert!(
        !text.contains(EXTERNAL_ID),
        "the external id leaked: {text}"
    );
}
