//! `tollgate discover` as a user runs it, against moto's server: the real binary, the
//! default credential chain from the environment, a temporary admission directory, the
//! report on stdout or in `--output`, telemetry in `--telemetry`, and the exit codes.

use std::path::Path;
use std::process::{Command, Output};

use tollgate_testkit::moto::{moto, Moto, KMS_ONE_RETRY, MOTO_ACCOUNT};
use tollgate_testkit::unique_prefix;

fn discover(moto: &Moto, admission: &Path, args: &[&str]) -> Output {
    discover_in("us-east-1", moto, admission, args, &[])
}

/// [`discover`] of `region`, with extra environment variables.
fn discover_in(
    region: &str,
    moto: &Moto,
    admission: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("discover")
        .args(["--endpoint-url", &moto.url, "--regions", region])
        .args(args)
        .env("TOLLGATE_ADMISSION_DIR", admission)
        .envs(env.iter().copied());
    tollgate_testkit::cli::output(tollgate_testkit::emulator_env(&mut cmd))
}

#[test]
fn a_complete_scan_exits_0_and_writes_report_and_telemetry() {
    let moto = moto();
    let prefix = unique_prefix("cli");
    let table = format!("{prefix}table");
    moto.create_table(&table);
    let tmp = tempfile::tempdir().unwrap();
    let report_path = tmp.path().join("report.json");
    let telemetry_path = tmp.path().join("attempts.jsonl");
    let out = discover(
        &moto,
        &tmp.path().join("admission"),
        &[
            "--datasets",
            "dynamodb-tables,lambda-functions",
            "--timeout",
            "60s",
            "--output",
            report_path.to_str().unwrap(),
            "--telemetry",
            telemetry_path.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out.stdout.is_empty(), "the report went to --output");
    // Not a terminal: plain progress lines, then the summary table.
    assert!(stderr.contains("dynamodb-tables: complete"), "{stderr}");
    assert!(
        stderr.contains("dataset") && stderr.contains("status"),
        "{stderr}"
    );

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    assert_eq!(report["account"], MOTO_ACCOUNT);
    assert_eq!(report["regions"], serde_json::json!(["us-east-1"]));
    let datasets = report["datasets"].as_object().unwrap();
    assert_eq!(
        datasets.keys().collect::<Vec<_>>(),
        ["dynamodb-tables", "lambda-functions", "tags-only"]
    );
    // moto holds other tests' tagged resources (buckets, keys, ...): a selection keeps
    // the tagging sweep's tags-only items to the selected types.
    for item in datasets["tags-only"]["items"].as_array().unwrap() {
        assert!(
            ["AWS::DynamoDB::Table", "AWS::Lambda::Function"]
                .contains(&item["resource_type"].as_str().unwrap()),
            "{item}"
        );
    }
    assert!(datasets["tags-only"]["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["resource_type"] == "AWS::ResourceGroupsTagging::Sweep"));
    let tables = datasets["dynamodb-tables"]["items"].as_array().unwrap();
    let mine = tables
        .iter()
        .find(|t| t["table_name"] == table.as_str())
        .expect("the table is in the report");
    assert_eq!(mine["billing_mode"], "PAY_PER_REQUEST");
    assert_eq!(mine["item_count"], 0);
    assert_eq!(datasets["dynamodb-tables"]["status"], "complete");

    let scan_id = report["scan_id"].as_str().unwrap();
    let lines = std::fs::read_to_string(&telemetry_path).unwrap();
    let events: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["operation"] == "DescribeTable"));
    for e in &events {
        assert_eq!(e["attribution"]["scanId"], scan_id, "{e}");
    }
}

#[test]
fn a_scan_with_values_lost_to_failures_exits_2_with_the_report_on_stdout() {
    let moto = moto();
    let prefix = unique_prefix("cli-kms");
    // A region no other test uses: the scan lists every key of the region, and each
    // key's GetKeyLastUsage fails, so other tests' keys would make this one slower.
    let region = "ca-central-1";
    let key = moto
        .json_call_in(
            region,
            "kms",
            "TrentService.CreateKey",
            &format!(r#"{{"Description":"{prefix}key"}}"#),
        )
        .json();
    let key_id = key["KeyMetadata"]["KeyId"].as_str().unwrap().to_string();

    let tmp = tempfile::tempdir().unwrap();
    let telemetry_path = tmp.path().join("attempts.jsonl");
    // One retry of the 500, not six attempts through real breaker openings (see
    // KMS_ONE_RETRY for why and for the paused-time tests of those rules).
    let out = discover_in(
        region,
        &moto,
        &tmp.path().join("admission"),
        &[
            "--datasets",
            "kms-keys",
            "--telemetry",
            telemetry_path.to_str().unwrap(),
        ],
        &[("TOLLGATE_QUOTA_OVERRIDES", KMS_ONE_RETRY)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // moto answers GetKeyLastUsage with a 500: retried, given up, the dataset partial.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let kms = &report["datasets"]["kms-keys"];
    assert_eq!(kms["status"], "partial");
    let item = kms["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key_id"] == key_id.as_str())
        .expect("the key is in the report");
    assert_eq!(item["key_state"], "Enabled");
    assert_eq!(item["key_manager"], "CUSTOMER");
    assert!(item["last_used_at"].is_null());
    let reasons = kms["reasons"].as_array().unwrap();
    assert!(
        reasons
            .iter()
            .any(|r| r["operation"] == "kms:GetKeyLastUsage" && r["field"] == "last_used_at"),
        "{reasons:?}"
    );
    assert!(
        report["throttling"]["keys"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.ends_with("kms:GetKeyLastUsage")),
        "the given-up calls show in the throttled gaps: {}",
        report["throttling"]
    );
    let lines = std::fs::read_to_string(&telemetry_path).unwrap();
    assert!(
        lines
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .any(|e| e["operation"] == "GetKeyLastUsage"
                && e["dispatched"] == true
                && e["attempt"].as_u64() >= Some(2)),
        "the 500 was retried, not only given up: {lines}"
    );
}

#[test]
fn usage_errors_exit_1_not_the_partial_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["discover", "--datasets", "ec2-instances"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"unknown type "ec2-instances""#),
        "{stderr}"
    );
    assert!(
        stderr.contains("tollgate types"),
        "says where the names are: {stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["discover", "--types", "AWS::Nope::*"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"unknown type "AWS::Nope::*""#),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["discover", "--timeout", "0s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// Ctrl-C (SIGINT) during a slowed scan: the report of what was collected is still
/// written, the dataset is `cancelled`, and the exit code is 130.
#[test]
fn ctrl_c_cancels_writes_the_report_and_exits_130() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;

    let moto = moto();
    let prefix = unique_prefix("cli-int");
    for i in 0..3 {
        moto.create_bucket(&format!("{prefix}{i}"));
    }
    let tmp = tempfile::tempdir().unwrap();
    let telemetry_path = tmp.path().join("attempts.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("discover")
        .args(["--endpoint-url", &moto.url, "--regions", "us-east-1"])
        .args(["--datasets", "s3-buckets"])
        .arg("--telemetry")
        .arg(&telemetry_path)
        .env("TOLLGATE_ADMISSION_DIR", tmp.path().join("admission"))
        .env(
            "TOLLGATE_QUOTA_OVERRIDES",
            r#"{"s3:GetBucketLifecycleConfiguration":{"ratePerSecond":0.2,"burst":1}}"#,
        );
    let mut child = tollgate_testkit::emulator_env(&mut cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("s3-buckets: started") {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no start line: {seen}"
        );
        seen.push_str(&line);
    }
    // The listing is done and the paced reads queue up once the first read (the burst
    // of one) has answered: its attempt is in the telemetry (one line per attempt,
    // written at its end). The next read waits 5 s for the key, so the scan is then
    // still running. (A fixed 1.5 s sleep stood here.)
    let mut polls = 0;
    while !std::fs::read_to_string(&telemetry_path)
        .is_ok_and(|t| t.contains(r#""operation":"GetBucketLifecycleConfiguration""#))
    {
        polls += 1;
        assert!(polls < 3_000, "no lifecycle read within 60 s: {seen}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let stdout = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("cancelling"), "{rest}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    assert_eq!(
        report["datasets"]["s3-buckets"]["status"], "cancelled",
        "{report}"
    );
}

/// Nothing listens at the endpoint: the caller stays unresolved (account null, a note,
/// isolated admission), every listing fails within the deadline, the report is still
/// written, and the exit code is 1.
#[test]
fn an_unreachable_endpoint_fails_every_dataset_and_exits_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .arg("discover")
        .args(["--endpoint-url", &format!("http://127.0.0.1:{port}")])
        .args([
            "--regions",
            "eu-west-1",
            "--datasets",
            "dynamodb-tables,kms-keys",
        ])
        .args(["--timeout", "4s"])
        .env("TOLLGATE_ADMISSION_DIR", tmp.path().join("admission"))
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    assert!(report["account"].is_null(), "{report}");
    assert!(
        report["identity_note"]
            .as_str()
            .is_some_and(|n| n.contains("isolated")),
        "{report}"
    );
    for name in ["dynamodb-tables", "kms-keys"] {
        let dataset = &report["datasets"][name];
        assert_eq!(dataset["status"], "failed", "{dataset}");
        assert!(!dataset["reasons"].as_array().unwrap().is_empty());
        assert!(dataset["items"].as_array().unwrap().is_empty());
    }
}
