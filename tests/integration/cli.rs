//! The CLI as a user runs it: the real binary, real environment variables, a real
//! admission directory.

use std::process::{Command, Output};

use tollgate_quota::defaults::DEFAULT_ROWS;
use tollgate_testkit::cli;

fn tollgate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cli::output(cmd.args(args).envs(env.iter().copied()))
}

#[test]
fn policies_json_lists_every_default_row() {
    let out = tollgate(&["policies", "--json"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for row in DEFAULT_ROWS {
        let found = rows
            .iter()
            .find(|r| r["service"] == row.service && r["group"] == row.group);
        let found = found.unwrap_or_else(|| panic!("{}:{} missing", row.service, row.group));
        assert_eq!(
            found["policy"]["ratePerSecond"].as_f64(),
            Some(row.rate_per_second)
        );
        assert_eq!(found["policy"]["burst"].as_f64(), Some(row.burst));
        assert_eq!(found["policy"]["concurrency"], 10);
        assert_eq!(found["policy"]["retryCapacity"], 20);
        assert_eq!(found["origin"], "default");
        assert_eq!(
            found["verified"],
            row.verified.label(),
            "{}:{}",
            row.service,
            row.group
        );
    }
}

#[test]
fn policies_say_which_defaults_are_not_verified_aws_quotas() {
    let out = tollgate(&["policies"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap();
    assert!(header.ends_with("origin    verified"), "{header}");
    let mark = |name: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing: {text}"));
        line.split_whitespace().last().unwrap().to_owned()
    };
    assert_eq!(mark("s3:GetBucketLifecycleConfiguration"), "no");
    assert_eq!(mark("sts:GetCallerIdentity"), "no");
    assert_eq!(mark("kms:GetKeyLastUsage"), "aws-docs");
}

#[test]
fn types_json_lists_every_native_and_cloudcontrol_type_and_discover_refuses_an_unknown_one() {
    let out = tollgate(&["types", "--json"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |t: &str| {
        rows.iter()
            .find(|r| r["resource_type"] == t)
            .unwrap_or_else(|| panic!("{t} missing"))
    };
    assert_eq!(row("AWS::S3::Bucket")["alias"], "s3-buckets");
    assert_eq!(row("AWS::S3::Bucket")["collected_by"], "native");
    assert_eq!(row("AWS::SQS::Queue")["collected_by"], "cloudcontrol");
    assert_eq!(row("AWS::SQS::Queue")["default_sweep"], true);
    assert_eq!(
        row("AWS::IAM::Role")["charges"],
        serde_json::json!(["iam:ListRoles"])
    );
    assert_eq!(row("AWS::IAM::Role")["global"], true);
    assert_eq!(row("AWS::IAM::Role")["parent"], serde_json::Value::Null);
    // A child type: selectable, with its parent type.
    assert_eq!(row("AWS::EKS::Nodegroup")["collected_by"], "cloudcontrol");
    assert_eq!(row("AWS::EKS::Nodegroup")["parent"], "AWS::EKS::Cluster");
    assert_eq!(
        row("AWS::EKS::Nodegroup")["read_charges"],
        serde_json::json!(["eks:DescribeNodegroup"])
    );
    assert_eq!(row("AWS::Lambda::Alias")["parent"], "AWS::Lambda::Function");
    // A type CloudFormation lacks, collected natively under a name in its style.
    assert_eq!(row("AWS::EC2::Snapshot")["collected_by"], "native");
    assert_eq!(row("AWS::EC2::Snapshot")["cloudformation"], false);
    assert_eq!(
        row("AWS::EC2::Image")["charges"],
        serde_json::json!(["ec2:DescribeImages", "ec2:DescribeImageAttribute"])
    );
    assert_eq!(row("AWS::EC2::Instance")["cloudformation"], true);
    let swept = rows
        .iter()
        .filter(|r| r["collected_by"] == "cloudcontrol")
        .count();
    assert!(
        swept > 1_000,
        "every listable type (top-level, or with a known parent type): {swept}"
    );
    // The native rows: the four first datasets, seventeen EC2 types and eleven of seed
    // 000's other services; a type tollgate does not know is refused by `--types` before
    // any credential is read.
    let native: Vec<&str> = rows
        .iter()
        .filter(|r| r["collected_by"] == "native")
        .map(|r| r["resource_type"].as_str().unwrap())
        .collect();
    assert_eq!(native.len(), 32, "{native:?}");
    assert!(native.contains(&"AWS::Route53::HostedZone"), "{native:?}");
    assert!(native.contains(&"AWS::EC2::KeyPair"), "{native:?}");
    let out = tollgate(&["discover", "--types", "AWS::Nope::Thing"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown type"), "{stderr}");
}

#[test]
fn types_prints_one_line_per_type_under_its_header() {
    let out = tollgate(&["types"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().unwrap().starts_with("type "), "{text}");
    let kms = text
        .lines()
        .find(|l| l.starts_with("AWS::KMS::Key "))
        .unwrap();
    let cells: Vec<&str> = kms.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "AWS::KMS::Key",
            "kms-keys",
            "native",
            "yes",
            "no",
            "no",
            "yes",
            "-",
            "kms:ListKeys,kms:DescribeKey,kms:GetKeyLastUsage"
        ]
    );
}

#[test]
fn override_applies_and_lowered_rate_caps_inherited_burst() {
    let out = tollgate(
        &["policies", "--json"],
        &[(
            "TOLLGATE_QUOTA_OVERRIDES",
            r#"{"ec2:DescribeInstances":{"ratePerSecond":5}}"#,
        )],
    );
    assert!(out.status.success());
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows
        .iter()
        .find(|r| r["service"] == "ec2" && r["group"] == "DescribeInstances")
        .unwrap();
    assert_eq!(row["policy"]["ratePerSecond"], 5.0);
    assert_eq!(row["policy"]["burst"], 5.0);
    assert_eq!(row["origin"], "override");
}

#[test]
fn both_datapoint_budgets_are_listed_as_verified_and_take_overrides() {
    let out = tollgate(&["policies"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for (name, rate) in [
        ("cloudwatch:GetMetricData:recent-datapoints", "180000"),
        ("cloudwatch:GetMetricData:older-datapoints", "396000"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing: {text}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[1..3], [rate, rate], "{line}");
        assert_eq!(fields.last(), Some(&"aws-docs"), "{line}");
    }
    let out = tollgate(
        &["policies", "--json"],
        &[(
            "TOLLGATE_QUOTA_OVERRIDES",
            r#"{"cloudwatch:GetMetricData:older-datapoints":{"ratePerSecond":50000},
                "cloudwatch:GetMetricData:recent-datapoints":{"burst":90000,"concurrency":4}}"#,
        )],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |group: &str| {
        rows.iter()
            .find(|r| r["service"] == "cloudwatch" && r["group"] == group)
            .unwrap_or_else(|| panic!("{group} missing"))
            .clone()
    };
    let older = row("GetMetricData:older-datapoints");
    assert_eq!(older["policy"]["ratePerSecond"], 50_000.0);
    assert_eq!(
        older["policy"]["burst"], 50_000.0,
        "a lowered rate caps the burst"
    );
    assert_eq!(older["origin"], "override");
    assert_eq!(older["verified"], "override");
    let recent = row("GetMetricData:recent-datapoints");
    assert_eq!(recent["policy"]["ratePerSecond"], 180_000.0);
    assert_eq!(recent["policy"]["burst"], 90_000.0);
    assert_eq!(recent["policy"]["concurrency"], 4);
    assert_eq!(row("GetMetricData")["origin"], "default");
    // The arrival-jitter allowance: kept by an override of other fields, and shown only
    // where it is not 0.
    assert_eq!(older["policy"]["arrivalJitterMs"], 100);
    assert_eq!(recent["policy"]["arrivalJitterMs"], 100);
    assert!(row("GetMetricData")["policy"]
        .get("arrivalJitterMs")
        .is_none());
}

#[test]
fn malformed_override_fails_naming_the_variable_without_echoing_it() {
    let secret = "AKIAEXAMPLESECRET123";
    for bad in [
        format!(r#"{{"logs:DescribeLogStreams": {{"ratePerSecond": "{secret}"}}"#),
        format!(r#"{{"logs:DescribeLogStreams": {{"ratePerSecond": -1, "note": "{secret}"}}}}"#),
        format!(r#"{{"{secret}": {{"burst": 2}}}}"#),
        format!(r#"[{secret}]"#),
    ] {
        let out = tollgate(&["policies"], &[("TOLLGATE_QUOTA_OVERRIDES", &bad)]);
        assert!(!out.status.success(), "accepted {bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("TOLLGATE_QUOTA_OVERRIDES"), "{stderr}");
        assert!(!stderr.contains(secret), "echoed the value: {stderr}");
        assert!(!stderr.contains(&bad), "echoed the JSON: {stderr}");
        assert!(out.stdout.is_empty(), "printed a table anyway");
    }
}

#[test]
fn status_of_a_fresh_directory_is_empty_and_creates_it_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("admission");
    let out = tollgate(&["status", "--json", "--dir", dir.to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["keys"], serde_json::json!([]));
    assert_eq!(report["source"], "explicit");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn unusable_explicit_directory_is_an_error_not_a_silent_switch() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = tollgate(
        &["status"],
        &[("TOLLGATE_ADMISSION_DIR", file.to_str().unwrap())],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
}

#[test]
fn an_existing_directory_that_is_not_an_admission_directory_is_refused_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("notes.txt"), b"mine").unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = tollgate(&["status", "--dir", home.path().to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not an admission directory"), "{stderr}");
    let mode = std::fs::metadata(home.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "the directory's mode was changed");
    let names: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["notes.txt"], "something was written into it");
}

#[test]
fn a_misspelt_region_and_a_huge_timeout_are_usage_errors_before_any_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("adm");
    let dir = dir.to_str().unwrap();
    // No endpoint and no credentials: anything reaching AWS would take seconds and fail
    // differently; these must fail at once, naming the problem.
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    let out = tollgate(&["discover", "--regions", "us-est-1", "--dir", dir], &env);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"us-est-1\" is not a known AWS region"),
        "{stderr}"
    );
    assert!(stderr.contains("TOLLGATE_EXTRA_REGIONS"), "{stderr}");
    assert!(out.stdout.is_empty(), "a report was written");

    for huge in ["100000000000000000000000000000h", "1e30s", "200h"] {
        let out = tollgate(&["discover", "--timeout", huge, "--dir", dir], &env);
        assert_eq!(out.status.code(), Some(1), "{huge}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--timeout"), "{huge}: {stderr}");
        assert!(!stderr.contains("panicked"), "{huge}: {stderr}");
    }
}

#[test]
fn help_lists_bench_and_no_bench_worker_is_a_tollgate_command() {
    let out = tollgate(&["--help"], &[]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("\n  bench "), "{help}");
    assert!(
        !help.contains("worker") && !help.contains("probe"),
        "{help}"
    );
    // The workers are subcommands of tollgate-bench now, not hidden ones of tollgate.
    for internal in ["bench-worker", "bench-fleet-worker", "probe-socket"] {
        let out = tollgate(&[internal, "--help"], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{internal}: {stderr}");
        assert!(stderr.contains("unrecognized subcommand"), "{stderr}");
    }
}

#[test]
fn bench_without_the_bench_executable_names_the_build_command() {
    // This binary alone in a directory, with nothing on PATH: no tollgate-bench anywhere.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let alone = tmp.path().join("tollgate");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_tollgate"), &alone).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_tollgate"), &alone).unwrap();
    }
    let out = Command::new(&alone)
        .args(["bench", "admission", "--in-process"])
        .env("PATH", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tollgate-bench"), "{stderr}");
    assert!(
        stderr.contains("cargo build -p tollgate-bench --profile bench-fast"),
        "{stderr}"
    );
}

#[test]
fn policies_at_resolves_schedules_and_allowance_periods_at_the_instant() {
    let overrides = r#"{"kms:ListKeys": {"ratePerSecond": 50, "burst": 10,
        "schedule": [{"cron": "* 9-16 * * MON-FRI", "timezone": "Europe/Berlin",
                      "ratePerSecond": 1, "burst": 1}]},
      "ce:GetCostAndUsage": {"allowance": {"amount": 20000, "resets": "0 0 * * *",
                                           "timezone": "America/New_York"}}}"#;
    let at = |instant: &str| {
        let out = tollgate(
            &["policies", "--at", instant, "--json"],
            &[("TOLLGATE_QUOTA_OVERRIDES", overrides)],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let find = |service: &str, group: &str| {
            report["keys"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["service"] == service && r["group"] == group)
                .cloned()
                .unwrap()
        };
        (find("kms", "ListKeys"), find("ce", "GetCostAndUsage"))
    };
    // Monday 08:59 in Berlin: the base, until 09:00 (08:00Z).
    let (kms, ce) = at("2026-01-05T08:59:00+01:00");
    assert_eq!(kms["policy"]["ratePerSecond"], 50.0);
    assert_eq!(kms["entry"], serde_json::Value::Null);
    assert_eq!(kms["validUntil"], "2026-01-05T08:00:00.000Z");
    assert_eq!(ce["allowance"]["amount"], 20000);
    assert_eq!(ce["allowance"]["periodStart"], "2026-01-05T05:00:00.000Z");
    assert_eq!(ce["allowance"]["resetsAt"], "2026-01-06T05:00:00.000Z");
    // 09:00: the business-hours entry until 17:00 (16:00Z).
    let (kms, _) = at("2026-01-05T09:00:00+01:00");
    assert_eq!(kms["policy"]["ratePerSecond"], 1.0);
    assert_eq!(kms["entry"], 0);
    assert_eq!(kms["validUntil"], "2026-01-05T16:00:00.000Z");
    // A bad instant is a usage error that does not echo the text.
    let out = tollgate(&["policies", "--at", "tuesday-SECRET"], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--at") && !err.contains("SECRET"), "{err}");
}

#[test]
fn a_policy_file_applies_under_the_overrides_and_its_errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("policies.toml");
    std::fs::write(
        &file,
        "[\"kms:ListKeys\"]\nratePerSecond = 7\nburst = 2\n\n[\"kms:DescribeKey\"]\nratePerSecond = 3\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out = tollgate(
        &["policies", "--json"],
        &[
            ("TOLLGATE_POLICY_FILE", path),
            (
                "TOLLGATE_QUOTA_OVERRIDES",
                r#"{"kms:DescribeKey":{"ratePerSecond":1}}"#,
            ),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let rate = |group: &str| {
        rows.iter()
            .find(|r| r["service"] == "kms" && r["group"] == group)
            .map(|r| r["policy"]["ratePerSecond"].as_f64().unwrap())
    };
    assert_eq!(rate("ListKeys"), Some(7.0), "the file applies");
    assert_eq!(
        rate("DescribeKey"),
        Some(1.0),
        "the overrides win over the file"
    );

    std::fs::write(&file, "[\"kms:ListKeys\"]\nratePerSecond = \"SECRET\"\n").unwrap();
    let out = tollgate(&["policies"], &[("TOLLGATE_POLICY_FILE", path)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policies.toml") && err.contains("kms:ListKeys"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
}
