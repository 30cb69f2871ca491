//! `tollgate discover --organization` against moto over real HTTP (issue 21's must-show):
//! an organization built with the SDK calls boto3 would make (CreateOrganization,
//! CreateAccount × 3, resources in each member created with that member's AssumeRole
//! credentials), then the real binary scans it: every account's resources exactly,
//! `--exclude-accounts` honoured, and exactly one AssumeRole per member account.
//!
//! moto keys its backends by the signing access key: AssumeRole's credentials map to the
//! role's account, so the member's resources are answered from that account. Each test
//! runs its own moto (moto's default account manages one organization at most).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use tollgate_testkit::moto::{DedicatedMoto, MOTO_ACCOUNT};

const REGIONS: [&str; 2] = ["us-east-1", "eu-west-1"];
const ROLE: &str = "OrganizationAccountAccessRole";

/// What the test put in each account: tables per region, buckets.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Inventory {
    tables: BTreeSet<(String, String)>,
    buckets: BTreeSet<String>,
}

async fn config(url: &str, credentials: Credentials, region: &str) -> aws_config::SdkConfig {
    // The engine's inner HTTP client (the SDK crates are built without a default one).
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new(region.to_owned()))
        .credentials_provider(credentials)
        .load()
        .await
}

fn caller() -> Credentials {
    Credentials::new("testing", "testing", None, None, "test")
}

/// CreateOrganization, three CreateAccount, and per account (the management account
/// with its own credentials, each member through AssumeRole) its own tables and buckets.
async fn build_organization(url: &str) -> (Vec<String>, BTreeMap<String, Inventory>) {
    let hub = config(url, caller(), "us-east-1").await;
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
        let id = status
            .create_account_status()
            .and_then(|s| s.account_id())
            .expect("an account id")
            .to_owned();
        members.push(id);
    }
    let sts = aws_sdk_sts::Client::new(&hub);
    let mut inventory = BTreeMap::new();
    let accounts = std::iter::once(MOTO_ACCOUNT.to_owned()).chain(members.iter().cloned());
    for (n, account) in accounts.enumerate() {
        let credentials = if account == MOTO_ACCOUNT {
            caller()
        } else {
            let out = sts
                .assume_role()
                .role_arn(format!("arn:aws:iam::{account}:role/{ROLE}"))
                .role_session_name("setup")
                .send()
                .await
                .expect("AssumeRole");
            let c = out.credentials().expect("credentials");
            Credentials::new(
                c.access_key_id(),
                c.secret_access_key(),
                Some(c.session_token().to_owned()),
                None,
                "setup",
            )
        };
        let mut mine = Inventory::default();
        // Account n gets n + 1 tables in us-east-1 and n in eu-west-1, and n + 1 buckets.
        for (region, count) in [(REGIONS[0], n + 1), (REGIONS[1], n)] {
            let sdk = config(url, credentials.clone(), region).await;
            let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
            for t in 0..count {
                let name = format!("a{n}-{region}-t{t}");
                use aws_sdk_dynamodb::types::*;
                dynamodb
                    .create_table()
                    .table_name(&name)
                    .attribute_definitions(
                        AttributeDefinition::builder()
                            .attribute_name("pk")
                            .attribute_type(ScalarAttributeType::S)
                            .build()
                            .unwrap(),
                    )
                    .key_schema(
                        KeySchemaElement::builder()
                            .attribute_name("pk")
                            .key_type(KeyType::Hash)
                            .build()
                            .unwrap(),
                    )
                    .billing_mode(BillingMode::PayPerRequest)
                    .send()
                    .await
                    .expect("CreateTable");
                mine.tables.insert((name, region.to_owned()));
            }
        }
        let sdk = config(url, credentials.clone(), "us-east-1").await;
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&sdk)
                .force_path_style(true)
                .build(),
        );
        for b in 0..=n {
            let name = format!("org-a{n}-b{b}-{}", &account[..6]);
            s3.create_bucket()
                .bucket(&name)
                .send()
                .await
                .expect("CreateBucket");
            mine.buckets.insert(name);
        }
        inventory.insert(account, mine);
    }
    (members, inventory)
}

fn discover(url: &str, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("discover")
        .args(["--organization", "--endpoint-url", url])
        .args(["--regions", "us-east-1,eu-west-1"])
        .args([
            "--datasets",
            "dynamodb-tables,s3-buckets",
            "--timeout",
            "120s",
        ])
        .args(args)
        .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"));
    tollgate_testkit::cli::output(tollgate_testkit::emulator_env(&mut cmd))
}

/// The account's inventory as its report has it.
fn found(account: &serde_json::Value) -> Inventory {
    let datasets = &account["datasets"];
    let mut out = Inventory::default();
    for t in datasets["dynamodb-tables"]["items"].as_array().unwrap() {
        out.tables.insert((
            t["table_name"].as_str().unwrap().to_owned(),
            t["region"].as_str().unwrap().to_owned(),
        ));
    }
    for b in datasets["s3-buckets"]["items"].as_array().unwrap() {
        out.buckets.insert(b["name"].as_str().unwrap().to_owned());
    }
    out
}

/// AssumeRole attempts in a telemetry file.
fn assume_role_attempts(telemetry: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(telemetry)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["operation"] == "AssumeRole")
        .collect()
}

#[test]
fn an_organization_scan_reports_every_accounts_resources_exactly_with_one_assume_role_each() {
    let moto = DedicatedMoto::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (members, inventory) = rt.block_on(build_organization(&moto.url));
    let tmp = tempfile::tempdir().unwrap();

    // The whole organization.
    let report_path = tmp.path().join("org.json");
    let telemetry = tmp.path().join("attempts.jsonl");
    let out = discover(
        &moto.url,
        tmp.path(),
        &[
            "--output",
            report_path.to_str().unwrap(),
            "--telemetry",
            telemetry.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let org = &report["organization"];
    assert_eq!(org["management_account"], MOTO_ACCOUNT, "{org}");
    assert_eq!(org["caller_account"], MOTO_ACCOUNT);
    assert_eq!(org["listed"], 4, "{org}");
    assert_eq!(org["scanned"], 4, "{org}");
    assert_eq!(org["skipped"], serde_json::json!([]), "{org}");
    let accounts = report["accounts"].as_array().unwrap();
    let by_id: BTreeMap<String, &serde_json::Value> = accounts
        .iter()
        .map(|a| (a["account"].as_str().unwrap().to_owned(), a))
        .collect();
    assert_eq!(
        by_id.keys().collect::<Vec<_>>(),
        inventory.keys().collect::<Vec<_>>()
    );
    for (account, expected) in &inventory {
        let got = by_id[account];
        assert_eq!(
            got["regions"],
            serde_json::json!(["eu-west-1", "us-east-1"])
        );
        for dataset in ["dynamodb-tables", "s3-buckets"] {
            assert_eq!(
                got["datasets"][dataset]["status"], "complete",
                "{account} {dataset}"
            );
        }
        assert_eq!(&found(got), expected, "account {account}");
    }
    // Exactly one AssumeRole per member (the caller's own account uses its own
    // credentials): as many calls as members, each member scanned, so one each. Each is
    // charged to the caller's STS key in the hub region (the scan's first region, as a
    // single-account scan's GetCallerIdentity).
    let attempts = assume_role_attempts(&telemetry);
    assert_eq!(attempts.len(), members.len(), "{attempts:#?}");
    for a in &attempts {
        assert_eq!(a["outcome"], "success", "{a}");
        assert_eq!(
            a["quota"],
            format!("aws/{MOTO_ACCOUNT}/eu-west-1/sts:AssumeRole")
        );
        assert_eq!(a["attribution"]["account"], MOTO_ACCOUNT);
        assert_eq!(a["attribution"]["scanId"], report["scan_id"]);
    }
    // Every other call is attributed to, and keyed by, its own account.
    let text = std::fs::read_to_string(&telemetry).unwrap();
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(quota) = e["quota"].as_str() else {
            continue;
        };
        let account = e["attribution"]["account"].as_str().unwrap();
        assert!(quota.starts_with(&format!("aws/{account}/")), "{e}");
    }
    // The summary: one line per account plus totals.
    for account in inventory.keys() {
        assert!(stderr.contains(account.as_str()), "{stderr}");
    }
    assert!(stderr.contains("total: 4 accounts scanned"), "{stderr}");

    // --exclude-accounts: one member and the caller's own account left out.
    let excluded = members[1].clone();
    let report_path = tmp.path().join("excluded.json");
    let telemetry = tmp.path().join("excluded.jsonl");
    let out = discover(
        &moto.url,
        tmp.path(),
        &[
            "--exclude-accounts",
            &format!("{excluded},{MOTO_ACCOUNT}"),
            "--output",
            report_path.to_str().unwrap(),
            "--telemetry",
            telemetry.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let org = &report["organization"];
    assert_eq!(org["scanned"], 2, "{org}");
    let skipped: BTreeMap<&str, &str> = org["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["account"].as_str().unwrap(),
                s["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        BTreeMap::from([(excluded.as_str(), "excluded"), (MOTO_ACCOUNT, "excluded")])
    );
    let scanned: BTreeSet<&str> = report["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account"].as_str().unwrap())
        .collect();
    let expected: BTreeSet<&str> = members
        .iter()
        .filter(|m| **m != excluded)
        .map(String::as_str)
        .collect();
    assert_eq!(scanned, expected);
    for account in &expected {
        let got = report["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["account"] == *account)
            .unwrap();
        assert_eq!(&found(got), &inventory[*account]);
    }
    assert_eq!(assume_role_attempts(&telemetry).len(), 2);
}
