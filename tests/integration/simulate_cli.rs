//! `tollgate simulate` and `tollgate demo` as real processes: the listening line a bench
//! parses, the control path, SIGTERM and the count table; the demo's complete discovery
//! of the bundled scenario; a bad scenario's error naming file and field.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use tollgate_testkit::http::{self, Call};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_tollgate")
}

fn repo_file(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Stops the child if a test fails midway.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn simulate_prints_its_url_serves_stats_and_stops_on_sigterm() {
    let mut child = Child(
        Command::new(exe())
            .args([
                "simulate",
                &repo_file("fixtures/scenarios/fleet.toml"),
                "--port",
                "0",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let url = first
        .trim_end()
        .strip_prefix("tollgate simulate: listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"));
    let port: u16 = url.parse().unwrap();
    assert_ne!(port, 0);

    let addr = format!("127.0.0.1:{port}");
    let answer = http::must(&addr, Call::new("GET", "/"));
    assert_eq!(answer.status, 403, "{}", answer.text());
    let answer = http::must(&addr, Call::new("GET", "/_sim/stats")).text();
    assert!(answer.contains("\"unsigned\""), "{answer}");

    let term = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("unsigned") && rest.contains("total"),
        "{rest}"
    );
}

#[test]
fn a_bad_scenario_is_refused_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "account = \"123456789012\"\nregions = [\"us-east-1\"]\n[[faults]]\nkind = \"throttle\"\nprobability = 1.5\n",
    )
    .unwrap();
    let out = Command::new(exe())
        .args(["simulate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("faults[0].probability"),
        "{err}"
    );
}

#[test]
fn demo_discovers_the_bundled_account_completely() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = Command::new(exe())
        .args([
            "demo",
            "--dir",
            dir.path().join("admission").to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ])
        // Nothing of the user's AWS configuration may matter.
        .env("AWS_PROFILE", "tollgate-demo-test-no-such-profile")
        .env("AWS_CONFIG_FILE", dir.path().join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("simulated AWS received"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    assert_eq!(report["account"], "123456789012");
    let datasets = report["datasets"].as_object().unwrap();
    assert_eq!(
        datasets.keys().collect::<Vec<_>>(),
        [
            "AWS::CloudTrail::Trail",
            "AWS::EC2::EIP",
            "AWS::EC2::Image",
            "AWS::EC2::Instance",
            "AWS::EC2::InternetGateway",
            "AWS::EC2::KeyPair",
            "AWS::EC2::LaunchTemplate",
            "AWS::EC2::NatGateway",
            "AWS::EC2::NetworkInterface",
            "AWS::EC2::RouteTable",
            "AWS::EC2::SecurityGroup",
            "AWS::EC2::Snapshot",
            "AWS::EC2::Subnet",
            "AWS::EC2::TransitGateway",
            "AWS::EC2::TransitGatewayAttachment",
            "AWS::EC2::VPC",
            "AWS::EC2::VPCEndpoint",
            "AWS::EC2::Volume",
            "AWS::ECS::Cluster",
            "AWS::ECS::ContainerInstance",
            "AWS::ECS::Service",
            "AWS::EMR::Cluster",
            "AWS::ElasticLoadBalancing::LoadBalancer",
            "AWS::ElasticLoadBalancingV2::Listener",
            "AWS::ElasticLoadBalancingV2::LoadBalancer",
            "AWS::ElasticLoadBalancingV2::TargetGroup",
            "AWS::IAM::Role",
            "AWS::Lambda::Alias",
            "AWS::Logs::LogGroup",
            "AWS::Route53::HostedZone",
            "AWS::SNS::Topic",
            "AWS::SQS::Queue",
            "dynamodb-tables",
            "kms-keys",
            "lambda-functions",
            "s3-buckets",
            "tags-only"
        ]
    );
    for d in datasets.values() {
        assert_eq!(d["status"], "complete", "{d}");
    }
    let items: usize = [
        "dynamodb-tables",
        "kms-keys",
        "lambda-functions",
        "s3-buckets",
    ]
    .iter()
    .map(|d| datasets[*d]["items"].as_array().unwrap().len())
    .sum();
    assert_eq!(items, 44 + 12 + 8 + 10);
    // Seed 000's other services, natively: the bundled scenario's few of each.
    for (ty, want) in [
        ("AWS::ECS::Cluster", 1),
        ("AWS::ECS::Service", 2),
        ("AWS::ECS::ContainerInstance", 1),
        ("AWS::ElasticLoadBalancing::LoadBalancer", 1),
        ("AWS::ElasticLoadBalancingV2::LoadBalancer", 1),
        ("AWS::ElasticLoadBalancingV2::TargetGroup", 1),
        ("AWS::ElasticLoadBalancingV2::Listener", 1),
        ("AWS::Logs::LogGroup", 4),
        ("AWS::CloudTrail::Trail", 1),
        ("AWS::Route53::HostedZone", 2),
        ("AWS::EMR::Cluster", 1),
    ] {
        let got = datasets[ty]["items"].as_array().unwrap();
        assert_eq!(got.len(), want, "{ty}: {got:?}");
    }
    let zones = datasets["AWS::Route53::HostedZone"]["items"]
        .as_array()
        .unwrap();
    assert!(zones.iter().all(|z| z["region"] == "global"), "{zones:?}");
    // The demo prices its transit gateway from the simulator's price list: two
    // attachments at 0.05 an hour, the gateway their sum.
    let price = |ty: &str| -> Vec<f64> {
        let items = datasets[ty]["items"].as_array().unwrap();
        let prices = items
            .iter()
            .map(|i| i["properties"]["HourlyPrice"].as_f64());
        prices.map(|p| p.expect("priced")).collect()
    };
    assert_eq!(price("AWS::EC2::TransitGatewayAttachment"), [0.05, 0.05]);
    let gateway = price("AWS::EC2::TransitGateway");
    assert_eq!(gateway.len(), 1);
    assert!((gateway[0] - 0.1).abs() < 1e-9, "{gateway:?}");
    // Every scan collects EC2 natively: the bundled scenario's resources in both regions
    // (each instance's root volume and interface included; its own AMIs and snapshots).
    let scenario = tollgate_sim::Scenario::parse(tollgate_sim::bundled::DEMO, "demo.toml").unwrap();
    for (ty, want) in scenario.ec2_counts() {
        let got = datasets[ty]["items"].as_array().unwrap().len() as u64;
        assert_eq!(got, want, "{ty}");
    }
    assert_eq!(
        datasets["AWS::EC2::Instance"]["items"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    // Tagged in the scenario, the VPC's and the main instance's tags merged by ARN.
    let tagged = |ty: &str, id: &str| {
        datasets[ty]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("{ty} {id}"))["tags"]
            .clone()
    };
    assert_eq!(
        tagged("AWS::EC2::Instance", "i-0f74a01c2e5b8c34b"),
        serde_json::json!({"Name": "orders-api-1", "team": "orders"})
    );
    assert_eq!(
        tagged("AWS::EC2::VPC", "vpc-0d3a1c9e5b7f20461"),
        serde_json::json!({"Name": "orders", "team": "orders"})
    );
    // One launch-permission read per AMI: the shared one and the public one.
    let images = datasets["AWS::EC2::Image"]["items"].as_array().unwrap();
    let mut permissions: Vec<String> = images
        .iter()
        .map(|i| i["properties"]["LaunchPermissions"].to_string())
        .collect();
    permissions.sort_unstable();
    assert_eq!(
        permissions,
        [r#"[{"Group":"all"}]"#, r#"[{"UserId":"210987654321"}]"#]
    );
    let reads = stderr
        .lines()
        .find(|l| l.starts_with("ec2:DescribeImageAttribute "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(reads.split_whitespace().nth(2), Some("2"), "{reads}");
    // The demo sweeps its scenario's Cloud Control types: 2 roles (global, listed once),
    // 2 aliases (listed per function), 1 topic, 2 queues.
    let swept: Vec<(&str, usize)> = [
        "AWS::IAM::Role",
        "AWS::Lambda::Alias",
        "AWS::SNS::Topic",
        "AWS::SQS::Queue",
    ]
    .iter()
    .map(|d| (*d, datasets[*d]["items"].as_array().unwrap().len()))
    .collect();
    assert_eq!(
        swept,
        [
            ("AWS::IAM::Role", 2),
            ("AWS::Lambda::Alias", 2),
            ("AWS::SNS::Topic", 1),
            ("AWS::SQS::Queue", 2)
        ]
    );
    // The bundled account's tagged SNS topic and SQS queue are of types the sweep listed
    // completely in their regions, so they are not tags-only: only a type no collector
    // listed there would be.
    let mut tags_only: Vec<(&str, &str)> = datasets["tags-only"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["resource_type"].as_str().unwrap(),
                i["region"].as_str().unwrap(),
            )
        })
        .collect();
    tags_only.sort_unstable();
    assert_eq!(tags_only, Vec::<(&str, &str)>::new());
    // Without --details an alias holds what its listing returned: its ARN alone.
    for alias in datasets["AWS::Lambda::Alias"]["items"].as_array().unwrap() {
        let keys: Vec<&String> = alias["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["AliasArn"], "{alias}");
    }
    assert!(!stderr.contains("cloudcontrol:GetResource"), "{stderr}");
}

#[test]
fn demo_details_reads_each_alias_listed_with_its_arn_alone_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = Command::new(exe())
        .args([
            "demo",
            "--details",
            "--dir",
            dir.path().join("admission").to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ])
        .env("AWS_PROFILE", "tollgate-demo-test-no-such-profile")
        .env("AWS_CONFIG_FILE", dir.path().join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let aliases = report["datasets"]["AWS::Lambda::Alias"]["items"]
        .as_array()
        .unwrap();
    let mut names: Vec<(&str, &str)> = aliases
        .iter()
        .map(|a| {
            (
                a["properties"]["Name"].as_str().unwrap(),
                a["properties"]["FunctionVersion"].as_str().unwrap(),
            )
        })
        .collect();
    names.sort_unstable();
    assert_eq!(names, [("canary", "11"), ("live", "12")]);
    // One GetResource per alias, none for the types listed in full.
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("cloudcontrol:GetResource"))
        .unwrap_or_else(|| panic!("no GetResource row: {stderr}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[1], "2", "{line}");
}
