//! Organization scans in paused time (DESIGN §7 tier 2): the real supervisor, the
//! organization run, the gate and quota actors over the fixture simulator's in-process
//! transport, whose scenario declares an organization (a management account and members,
//! each with its own inventory, regions and server quotas).
//!
//! - A member whose role refuses AssumeRole is skipped with the reason (naming the role
//!   ARN) and the others complete: the scan is partial (`discover` exits 2).
//! - `--regions all` follows each account's ListRegions; a refusal is one reason naming
//!   the API and the error, and the fallback regions are scanned.
//! - The hub's STS quota, shared by every member's credentials (first fetch and refresh),
//!   is never exceeded, and concurrent clients share one AssumeRole.
//! - Cancellation mid-organization delivers the partial report; a deadline leaves the
//!   accounts it did not reach reported as such.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use aws_credential_types::Credentials;
use tollgate_actors::{paused_system, start_in_current_system, RuntimeConfig, TokioClock};
use tollgate_collectors::output::RegionsSource;
use tollgate_collectors::DatasetStatus;
use tollgate_engine::aws::{
    sdk_config_with_credentials, AssumeRole, AwsGate, CallContext, CallerIdentity, MemoryTelemetry,
    ScanId,
};
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::key::{AccountId, Partition};
use tollgate_quota::{Owner, PolicyTable, Timestamp};
use tollgate_scan::organization::credentials::RoleCredentials;
use tollgate_scan::organization::{
    AccountPhase, OrganizationProgress, OrganizationRequest, SkipReason,
};
use tollgate_scan::request::RegionSource;
use tollgate_scan::supervisor::{StartOrganizationScan, Supervisor, SupervisorDeps};
use tollgate_scan::{DiscoveryRequest, OrganizationHandle, OrganizationReport};
use tollgate_sim::scenario::Quota;
use tollgate_sim::token_bucket::TokenBucket;
use tollgate_sim::{bundled, Scenario, Simulator};

const START: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const ENDPOINT: &str = "http://simulator.invalid";

fn management_credentials() -> Credentials {
    Credentials::new("AKIDSIM", "sim-secret", None, None, "simulation")
}

/// A supervisor over `sim` with `policies`, in the current (paused) system.
fn supervisor(
    sim: &Simulator,
    policies: PolicyTable,
) -> (actix::Addr<Supervisor>, MemoryTelemetry) {
    let clock = Arc::new(TokioClock::starting_at(START));
    let admission = start_in_current_system(
        RuntimeConfig::simulated(Owner {
            pid: std::process::id(),
            generation: 1,
        }),
        clock,
    );
    let telemetry = MemoryTelemetry::new();
    let supervisor = Supervisor::new(SupervisorDeps {
        admission,
        policies,
        telemetry: ScanTelemetry::new(Arc::new(telemetry.clone())),
        http: sim.http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    })
    .start();
    sim.reset();
    (supervisor, telemetry)
}

/// An organization request over the simulator: the management account's credentials,
/// `regions`, a long deadline.
fn request(regions: &[&str]) -> OrganizationRequest {
    OrganizationRequest::new(DiscoveryRequest {
        regions: regions.iter().map(|r| r.to_string()).collect(),
        endpoint_url: Some(ENDPOINT.into()),
        timeout: Duration::from_secs(3_600),
        credentials: Some(management_credentials()),
        ..Default::default()
    })
}

/// [`request`] in us-east-1 for the DynamoDB tables alone (the wide organizations' one
/// dataset).
fn tables_request() -> OrganizationRequest {
    let mut req = request(&["us-east-1"]);
    req.scan.datasets = vec![tollgate_collectors::Dataset::DynamoDbTables];
    req
}

async fn start(
    supervisor: &actix::Addr<Supervisor>,
    request: OrganizationRequest,
) -> OrganizationHandle {
    supervisor
        .send(StartOrganizationScan(request))
        .await
        .expect("the supervisor answers")
        .expect("a valid request")
}

async fn scan(
    sim: &Simulator,
    request: OrganizationRequest,
    policies: PolicyTable,
) -> OrganizationReport {
    let (supervisor, _) = supervisor(sim, policies);
    let report = start(&supervisor, request)
        .await
        .report()
        .await
        .expect("a report");
    crate::assert_valid_report(&report);
    report
}

/// Items per account and dataset.
fn items(report: &OrganizationReport) -> BTreeMap<String, BTreeMap<String, usize>> {
    report
        .accounts
        .iter()
        .map(Result::unwrap)
        .map(|a| {
            (
                a.account.clone().unwrap(),
                a.datasets
                    .iter()
                    .map(|(d, r)| (d.clone(), r.items.len()))
                    .collect(),
            )
        })
        .collect()
}

fn org_scenario() -> Scenario {
    Scenario::parse(bundled::ORG, "fixtures/scenarios/org.toml").unwrap()
}

#[test]
fn a_refused_role_is_skipped_with_its_arn_and_the_other_accounts_complete() {
    let scenario = org_scenario();
    let sim = Simulator::new(scenario.clone());
    let report = paused_system().block_on(scan(
        &sim,
        request(&["eu-west-1", "us-east-1", "us-west-2"]),
        PolicyTable::defaults(),
    ));
    let org = &report.organization;
    assert_eq!(org.management_account.as_deref(), Some("111111111111"));
    assert_eq!(org.caller_account.as_deref(), Some("111111111111"));
    assert_eq!((org.listed, org.scanned), (5, 3), "{org:#?}");
    let refused = report.skipped("444444444444").expect("the refused member");
    assert_eq!(refused.reason, SkipReason::RoleNotAssumable);
    assert_eq!(refused.code.as_deref(), Some("AccessDenied"));
    assert!(
        refused
            .message
            .contains("arn:aws:iam::444444444444:role/OrganizationAccountAccessRole"),
        "{}",
        refused.message
    );
    assert_eq!(
        report.skipped("555555555555").unwrap().reason,
        SkipReason::Suspended
    );
    // The others complete, each from its own inventory.
    for account in report.accounts.iter().map(Result::unwrap) {
        for (name, dataset) in &account.datasets {
            assert_eq!(
                dataset.status,
                DatasetStatus::Complete,
                "{:?} {name}",
                account.account
            );
        }
        let id = account.account.as_deref().unwrap();
        let counts = scenario.account_scenario(id).unwrap().inventory_counts();
        let got = &items(&report)[id];
        assert_eq!(got["s3-buckets"] as u64, counts.buckets, "{id}");
        assert_eq!(got["lambda-functions"] as u64, counts.functions, "{id}");
        assert_eq!(got["dynamodb-tables"] as u64, counts.tables, "{id}");
        assert_eq!(got["kms-keys"] as u64, counts.keys, "{id}");
    }
    // Partial: `discover` exits 2.
    assert_eq!(report.overall_status(), DatasetStatus::Partial);
    // One AssumeRole per member tried (two scanned, one refused): none for the caller.
    assert_eq!(sim.stats().per_operation["sts:AssumeRole"].served, 3);
}

/// Each account's item identifiers in `dataset`, sorted.
fn ids(report: &OrganizationReport, account: &str, dataset: &str) -> Vec<String> {
    let account = report.account(account).unwrap().unwrap();
    let mut ids: Vec<String> = account.datasets[dataset]
        .items
        .iter()
        .map(|i| i.resource().id.clone())
        .collect();
    ids.sort();
    ids
}

#[test]
fn members_sharing_the_organizations_clients_each_list_their_own_inventory_with_their_own_keys() {
    // The members scanned through a role share one SDK client per service and region,
    // concurrently; each request must be signed as its own member (the simulator answers
    // from the inventory of the account its access key names), while the caller's own
    // account keeps its own clients and credentials.
    let scenario = org_scenario();
    let sim = Simulator::new(scenario.clone());
    let mut req = request(&["eu-west-1", "us-east-1", "us-west-2"]);
    req.max_accounts_in_flight = NonZeroUsize::new(4).unwrap();
    let report = paused_system().block_on(scan(&sim, req, PolicyTable::defaults()));
    let buckets = ids(&report, "222222222222", "s3-buckets");
    assert_eq!(buckets.len(), 12);
    assert!(
        buckets.iter().all(|b| b.starts_with("prod-assets-")),
        "{buckets:?}"
    );
    let functions = ids(&report, "222222222222", "lambda-functions");
    assert_eq!(functions.len(), 6);
    assert!(
        functions.iter().all(|f| f.starts_with("prod-api-")),
        "{functions:?}"
    );
    assert_eq!(
        ids(&report, "222222222222", "dynamodb-tables"),
        ["prod-orders"]
    );
    assert_eq!(ids(&report, "222222222222", "kms-keys").len(), 4);
    assert_eq!(
        ids(&report, "333333333333", "dynamodb-tables"),
        ["staging-sessions"]
    );
    assert!(ids(&report, "333333333333", "s3-buckets").is_empty());
    assert!(ids(&report, "333333333333", "kms-keys").is_empty());
    assert_eq!(
        ids(&report, "111111111111", "s3-buckets"),
        ["mgmt-cloudtrail-logs"]
    );
    assert_eq!(
        ids(&report, "111111111111", "dynamodb-tables"),
        ["mgmt-accounts"]
    );
    // Every ARN an account reports, its tag sweep's included, names that account (S3's
    // name none).
    let mut arns = 0;
    for account in report.accounts.iter().map(Result::unwrap) {
        let id = account.account.as_deref().unwrap();
        for item in account.datasets.values().flat_map(|d| &d.items) {
            let Some(arn) = item.resource().arn.as_deref() else {
                continue;
            };
            if !arn.starts_with("arn:aws:s3:::") {
                assert!(arn.contains(&format!(":{id}:")), "{id}: {arn}");
                arns += 1;
            }
        }
    }
    assert!(arns > 10, "{arns} ARNs checked");
    // Still one AssumeRole per member tried: the shared clients ask each member's cached
    // role credentials, never STS again.
    assert_eq!(sim.stats().per_operation["sts:AssumeRole"].served, 3);
}

#[test]
fn regions_all_follows_list_regions_per_account_and_a_refusal_falls_back_with_a_reason() {
    let sim = Simulator::new(org_scenario());
    let mut req = request(&[]);
    req.scan.region_source = RegionSource::Enabled {
        fallback: vec!["us-west-2".into()],
    };
    let report = paused_system().block_on(scan(&sim, req, PolicyTable::defaults()));
    let regions: BTreeMap<String, Vec<String>> = report
        .accounts
        .iter()
        .map(Result::unwrap)
        .map(|a| (a.account.clone().unwrap(), a.regions.clone()))
        .collect();
    assert_eq!(
        regions,
        BTreeMap::from([
            ("111111111111".to_string(), vec!["us-east-1".to_string()]),
            (
                "222222222222".into(),
                vec!["eu-west-1".into(), "us-east-1".into()]
            ),
            ("333333333333".into(), vec!["us-west-2".into()]),
        ])
    );
    let fallback = report.account("333333333333").unwrap().unwrap();
    let reason = fallback
        .regions_reason
        .as_ref()
        .expect("a reason for the fallback");
    assert_eq!(reason.operation, "account:ListRegions");
    assert_eq!(reason.code.as_deref(), Some("AccessDeniedException"));
    assert!(reason.message.contains("us-west-2"), "{}", reason.message);
    // Scanned in the fallback region: its table is there.
    assert_eq!(items(&report)["333333333333"]["dynamodb-tables"], 1);
    for account in ["111111111111", "222222222222"] {
        assert_eq!(
            report.account(account).unwrap().unwrap().regions_reason,
            None
        );
    }
    // One ListRegions per scanned account; DescribeRegions only where it was refused.
    assert_eq!(sim.stats().per_operation["account:ListRegions"].received, 3);
    assert_eq!(sim.stats().per_operation["ec2:DescribeRegions"].received, 1);
    assert!(
        reason.message.contains("ec2:DescribeRegions")
            && reason.message.contains("UnauthorizedOperation"),
        "{}",
        reason.message
    );
    let source = |account: &str| report.account(account).unwrap().unwrap().regions_source;
    assert_eq!(source("111111111111"), Some(RegionsSource::ListRegions));
    assert_eq!(source("222222222222"), Some(RegionsSource::ListRegions));
    assert_eq!(source("333333333333"), Some(RegionsSource::Fallback));
}

#[test]
fn regions_all_takes_describe_regions_where_list_regions_is_refused_and_says_so() {
    // The member refusing ListRegions answers EC2 DescribeRegions (as member accounts
    // without `account:ListRegions` do): its enabled regions, not the fallback.
    let text = bundled::ORG.replace("describe_regions = \"deny\"\n", "");
    assert_ne!(
        text,
        bundled::ORG,
        "the scenario's member refuses DescribeRegions"
    );
    let sim = Simulator::new(Scenario::parse(&text, "org.toml, DescribeRegions allowed").unwrap());
    let mut req = request(&[]);
    req.scan.region_source = RegionSource::Enabled {
        fallback: vec!["eu-central-1".into()],
    };
    let report = paused_system().block_on(scan(&sim, req, PolicyTable::defaults()));
    let member = report.account("333333333333").unwrap().unwrap();
    assert_eq!(member.regions, ["us-west-2"]);
    assert_eq!(member.regions_source, Some(RegionsSource::DescribeRegions));
    assert_eq!(member.regions_reason, None);
    assert_eq!(items(&report)["333333333333"]["dynamodb-tables"], 1);
    let stats = sim.stats();
    assert_eq!(stats.per_operation["account:ListRegions"].received, 3);
    assert_eq!(stats.per_operation["ec2:DescribeRegions"].served, 1);
}

/// An organization of `members` members, one table each, with a hub STS quota of 2/s.
fn wide_organization(members: usize, latency_ms: u64) -> Scenario {
    wide_organization_with(members, latency_ms, "")
}

/// [`wide_organization`] with more lines of server quotas (`"service:Op" = {..}`).
fn wide_organization_with(members: usize, latency_ms: u64, quotas: &str) -> Scenario {
    let mut text = format!(
        "account = \"100000000000\"\nregions = [\"us-east-1\"]\n\
         [latency]\ndefault = {{ kind = \"fixed\", ms = {latency_ms} }}\n\
         [quotas.operations]\n\"sts:AssumeRole\" = {{ rate_per_second = 2.0, burst = 1 }}\n{quotas}\
         [organization]\nlist_accounts_page = 5\n"
    );
    for i in 0..members {
        text.push_str(&format!(
            "[[organization.members]]\naccount = \"{:012}\"\nregions = [\"us-east-1\"]\n\
             [[organization.members.inventory.tables]]\nname = \"t{i}\"\nregion = \"us-east-1\"\n\
             item_count = 1\nsize_bytes = 1\n",
            200_000_000_000u64 + i as u64
        ));
    }
    Scenario::parse(&text, "<wide organization>").unwrap()
}

/// `accounts` accounts scanned, every dataset of every one complete.
fn assert_every_account_complete(report: &OrganizationReport, accounts: u64) {
    assert_eq!(
        report.organization.scanned, accounts,
        "{:#?}",
        report.organization
    );
    assert_eq!(report.overall_status(), DatasetStatus::Complete);
}

/// Tollgate's policy for the hub's AssumeRole, matching the server quota.
fn hub_policy() -> PolicyTable {
    PolicyTable::with_overrides(
        r#"{"sts:AssumeRole":{"ratePerSecond":2,"burst":1}}"#,
        "test",
    )
    .unwrap()
}

#[test]
fn the_hub_sts_quota_shared_by_every_members_credentials_is_never_exceeded() {
    let sim = Simulator::new(wide_organization(12, 20));
    let mut req = tables_request();
    req.max_accounts_in_flight = NonZeroUsize::new(12).unwrap();
    let report = paused_system().block_on(scan(&sim, req, hub_policy()));
    assert_every_account_complete(&report, 13);
    let stats = sim.stats();
    let assume = &stats.per_operation["sts:AssumeRole"];
    assert_eq!((assume.received, assume.throttled), (12, 0), "{assume:?}");
    let mut server = TokenBucket::new(Quota {
        rate_per_second: 2.0,
        burst: 1,
    });
    for a in sim
        .arrivals()
        .iter()
        .filter(|a| a.operation == "sts:AssumeRole")
    {
        assert!(
            server.take(a.at),
            "AssumeRole at {:?} exceeds 2/s burst 1",
            a.at
        );
    }
}

#[test]
fn member_credentials_are_fetched_once_for_concurrent_clients_and_refreshed_through_the_gate() {
    let sim = Simulator::new(wide_organization(2, 20));
    paused_system().block_on(async {
        let (_supervisor, telemetry) = supervisor(&sim, hub_policy());
        let sdk = sdk_config_with_credentials(
            sim.http_client(),
            None,
            Some("us-east-1"),
            Some(ENDPOINT),
            Some(management_credentials()),
        )
        .await;
        let clock = Arc::new(TokioClock::starting_at(START));
        let admission = start_in_current_system(
            RuntimeConfig::simulated(Owner {
                pid: std::process::id(),
                generation: 2,
            }),
            clock,
        );
        let identity = CallerIdentity::resolved(
            Partition::aws(),
            AccountId::new("100000000000").unwrap(),
            None,
        );
        let gate = AwsGate::new(admission, hub_policy(), &identity, sim.http_client())
            .with_telemetry(Arc::new(telemetry.clone()));
        let ctx = CallContext {
            scan_id: ScanId(7),
            collector: "organization",
            datasets: Vec::new(),
            deadline: tollgate_actors::clock::monotonic_now() + Duration::from_secs(10_000),
            cancel: Default::default(),
        };
        let sts = aws_sdk_sts::Client::from_conf(
            aws_sdk_sts::config::Builder::from(&sdk)
                .region(aws_config::Region::new("us-east-1"))
                .build(),
        );
        let credentials = RoleCredentials::new(
            gate,
            ctx,
            sts,
            "us-east-1".into(),
            AssumeRole::new("arn:aws:iam::200000000000:role/OrganizationAccountAccessRole"),
        );
        // Eight clients ask at once: one AssumeRole.
        let all = futures_util::future::join_all((0..8).map(|_| credentials.fetch())).await;
        for c in &all {
            assert_eq!(c.as_ref().unwrap().access_key_id(), "ASIASIM200000000000");
        }
        assert_eq!(credentials.assume_role_calls(), 1);
        // Within the session: still cached.
        tokio::time::sleep(Duration::from_secs(50 * 60)).await;
        credentials.fetch().await.unwrap();
        assert_eq!(credentials.assume_role_calls(), 1);
        // Five minutes before the hour: refreshed, through the gate (the server saw it).
        tokio::time::sleep(Duration::from_secs(6 * 60)).await;
        let all = futures_util::future::join_all((0..4).map(|_| credentials.fetch())).await;
        assert!(all.iter().all(Result::is_ok));
        assert_eq!(credentials.assume_role_calls(), 2);
        assert_eq!(sim.stats().per_operation["sts:AssumeRole"].served, 2);
        let gated: Vec<_> = telemetry
            .events()
            .into_iter()
            .filter(|e| e.operation == "AssumeRole")
            .collect();
        assert_eq!(gated.len(), 2, "{gated:#?}");
        assert!(gated
            .iter()
            .all(|e| e.quota.as_deref() == Some("aws/100000000000/us-east-1/sts:AssumeRole")));
    });
}

/// Whether an account of `progress` is scanning.
fn scanning(progress: &OrganizationProgress) -> bool {
    progress
        .accounts
        .iter()
        .any(|a| a.phase == AccountPhase::Scanning)
}

/// Run `req` over `sim` in paused time, cancel it as soon as `ready` holds of its
/// progress (checked every 100 ms), and return its report. A second cancel is a no-op.
fn cancelled_once(
    sim: &Simulator,
    req: OrganizationRequest,
    ready: impl Fn(&OrganizationProgress) -> bool,
) -> OrganizationReport {
    paused_system().block_on(async {
        let (supervisor, _) = supervisor(sim, hub_policy());
        let handle = start(&supervisor, req).await;
        while !ready(&handle.progress()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(handle.cancel());
        assert!(!handle.cancel(), "a second cancel is a no-op");
        let report = handle.report().await.unwrap();
        crate::assert_valid_report(&report);
        report
    })
}

#[test]
fn cancelling_mid_organization_delivers_what_was_collected() {
    // 1 s per answer, two accounts at a time: cancelled, once the listing is over, while
    // the first ones scan.
    let sim = Simulator::new(wide_organization(6, 1_000));
    let mut req = tables_request();
    req.max_accounts_in_flight = NonZeroUsize::new(2).unwrap();
    let report = cancelled_once(&sim, req, |progress| {
        progress.listed.is_some() && scanning(progress)
    });
    let org = &report.organization;
    assert_eq!(org.listed, 7);
    assert_eq!(org.scanned as usize + org.skipped.len(), 7, "{org:#?}");
    let queued: Vec<_> = org
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Cancelled)
        .collect();
    assert!(
        queued.len() >= 4,
        "the queued accounts are skipped as cancelled: {org:#?}"
    );
    assert!(
        !report.accounts.is_empty(),
        "the running accounts' reports are kept"
    );
    assert_eq!(report.overall_status(), DatasetStatus::Cancelled);
}

#[test]
fn a_deadline_reports_the_accounts_it_did_not_reach() {
    let sim = Simulator::new(wide_organization(6, 1_000));
    let mut req = tables_request();
    // 1 s per answer, one account at a time: the caller and two pages by 4 s, the
    // management account scanned by 5 s, each member 3 s more (AssumeRole, the listing,
    // the description); at 10.5 s the second member is cut in its description (partial)
    // and the others were never reached.
    req.scan.timeout = Duration::from_millis(10_500);
    req.max_accounts_in_flight = NonZeroUsize::new(1).unwrap();
    let report = paused_system().block_on(scan(&sim, req, hub_policy()));
    let org = &report.organization;
    assert_eq!(org.scanned as usize + org.skipped.len(), 7, "{org:#?}");
    let unreached: Vec<_> = org
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Deadline)
        .collect();
    assert!(!unreached.is_empty(), "{org:#?}");
    assert!(
        unreached[0].message.contains("deadline"),
        "{}",
        unreached[0].message
    );
    assert!(org.scanned >= 1, "{org:#?}");
    assert_eq!(report.overall_status(), DatasetStatus::Partial, "{org:#?}");
}

#[test]
fn a_caller_outside_an_organization_fails_the_scan_naming_list_accounts() {
    let sim =
        Simulator::new(Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml").unwrap());
    let report =
        paused_system().block_on(scan(&sim, request(&["us-east-1"]), PolicyTable::defaults()));
    let error = report
        .organization
        .error
        .as_ref()
        .expect("the listing's error");
    assert_eq!(error.operation, "organizations:ListAccounts");
    assert_eq!(
        error.code.as_deref(),
        Some("AWSOrganizationsNotInUseException")
    );
    assert!(
        error.message.contains("management account"),
        "{}",
        error.message
    );
    assert!(report.accounts.is_empty());
    assert_eq!(report.overall_status(), DatasetStatus::Failed);
}

/// Tollgate's hub policies of [`hub_policy`], with the listing paced at one page a
/// second.
fn slow_listing_policy() -> PolicyTable {
    PolicyTable::with_overrides(
        r#"{"sts:AssumeRole":{"ratePerSecond":2,"burst":1},
            "organizations:ListAccounts":{"ratePerSecond":1,"burst":1}}"#,
        "test",
    )
    .unwrap()
}

#[test]
fn the_first_pages_accounts_are_assumed_while_the_next_pages_are_listed() {
    // 13 accounts in pages of 5 (3 pages, one a second): the first page's members are
    // assumed and scanned before the last page is asked for.
    let sim = Simulator::new(wide_organization(12, 20));
    let req = tables_request();
    let report = paused_system().block_on(scan(&sim, req, slow_listing_policy()));
    assert_eq!(report.organization.listed, 13, "{:#?}", report.organization);
    assert_every_account_complete(&report, 13);
    let arrivals = sim.arrivals();
    let at = |operation: &str| -> Vec<Duration> {
        arrivals
            .iter()
            .filter(|a| a.operation == operation)
            .map(|a| a.at)
            .collect()
    };
    let (pages, assumed) = (at("organizations:ListAccounts"), at("sts:AssumeRole"));
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert_eq!(assumed.len(), 12, "{assumed:?}");
    assert!(
        pages[2] - pages[0] >= Duration::from_millis(1_900),
        "the pages are paced at 1/s: {pages:?}"
    );
    assert!(
        assumed[0] < pages[1],
        "the first AssumeRole ({:?}) waits for no page but the first ({pages:?})",
        assumed[0]
    );
    let before_last_page = assumed.iter().filter(|t| **t < pages[2]).count();
    assert!(
        before_last_page >= 3,
        "at 2/s, members are assumed while the pages are listed: {before_last_page} before the last page ({assumed:?}, {pages:?})"
    );
}

#[test]
fn a_page_that_fails_after_the_first_leaves_the_listed_accounts_scanned_and_the_scan_failed() {
    // The server allows one ListAccounts request (the first page) and throttles every
    // later one; tollgate is told a policy far above it, so the second page is throttled
    // past its retries.
    let sim = Simulator::new(wide_organization_with(
        7,
        20,
        "\"organizations:ListAccounts\" = { rate_per_second = 0.001, burst = 1 }\n",
    ));
    let req = tables_request();
    let policies = PolicyTable::with_overrides(
        r#"{"sts:AssumeRole":{"ratePerSecond":2,"burst":1},
            "organizations:ListAccounts":{"ratePerSecond":100,"burst":10}}"#,
        "test",
    )
    .unwrap();
    let report = paused_system().block_on(scan(&sim, req, policies));
    let org = &report.organization;
    let error = org.error.as_ref().expect("the second page's failure");
    assert_eq!(error.operation, "organizations:ListAccounts");
    assert!(
        error.message.contains("stopped after 5 accounts"),
        "{}",
        error.message
    );
    assert_eq!(org.listed, 5, "{org:#?}");
    assert_eq!(
        org.scanned, 5,
        "the first page's accounts are scanned: {org:#?}"
    );
    assert!(report
        .accounts
        .iter()
        .map(Result::unwrap)
        .all(|a| a.overall_status() == DatasetStatus::Complete));
    assert_eq!(report.overall_status(), DatasetStatus::Failed);
}

#[test]
fn cancelling_while_the_organization_is_listed_scans_no_more_and_says_so() {
    // 1 s per answer: the management account scans from the first page on (3 s), while
    // the second page is asked for; the scan is cancelled then.
    let sim = Simulator::new(wide_organization(6, 1_000));
    let req = tables_request();
    let report = cancelled_once(&sim, req, |progress| {
        let ready = scanning(progress);
        if ready {
            assert_eq!(progress.listed, None, "the second page is still out");
        }
        ready
    });
    let org = &report.organization;
    let error = org.error.as_ref().expect("the listing was cut short");
    assert_eq!(error.operation, "organizations:ListAccounts");
    assert!(
        error.message.contains("cancelled while listing")
            && error.message.contains("stopped after 5 accounts"),
        "{}",
        error.message
    );
    assert_eq!(org.listed, 5, "{org:#?}");
    assert_eq!(org.scanned as usize + org.skipped.len(), 5, "{org:#?}");
    assert!(org
        .skipped
        .iter()
        .all(|s| s.reason == SkipReason::Cancelled));
    assert_eq!(report.overall_status(), DatasetStatus::Cancelled);
}
