//! An organization scan holds per account only what the accounts in flight need (issue
//! 21, item 6): a member's SDK configuration and its cached role credentials go when the
//! member's scan reports, and the supervisor forgets every member scan, so nothing of an
//! organization stays in a long-lived runtime once its report is in; and every finished
//! account's report is spooled to disk, not held (issue 33, item 7). Against an
//! organization in a moto of this test's own (CreateOrganization, four CreateAccount).

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use tollgate_actors::{AdmissionRuntime, RuntimeConfig};
use tollgate_collectors::Dataset;
use tollgate_engine::aws::telemetry::NoTelemetry;
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::PolicyTable;
use tollgate_scan::organization::OrganizationRequest;
use tollgate_scan::supervisor::{CountScans, ScanCount, SupervisorDeps};
use tollgate_scan::{Discovery, DiscoveryRequest};
use tollgate_storage::MemoryStore;
use tollgate_testkit::moto::DedicatedMoto;

const MEMBERS: usize = 4;
const IN_FLIGHT: usize = 2;

fn caller() -> Credentials {
    Credentials::new("testing", "testing", None, None, "test")
}

async fn create_organization(url: &str) {
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .credentials_provider(caller())
        .load()
        .await;
    let orgs = aws_sdk_organizations::Client::new(&sdk);
    orgs.create_organization()
        .feature_set(aws_sdk_organizations::types::OrganizationFeatureSet::All)
        .send()
        .await
        .expect("CreateOrganization");
    for i in 0..MEMBERS {
        orgs.create_account()
            .email(format!("member{i}@example.com"))
            .account_name(format!("member-{i}"))
            .send()
            .await
            .expect("CreateAccount");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_scan_leaves_no_member_scan_and_no_credentials_behind() {
    let moto = DedicatedMoto::start();
    create_organization(&moto.url).await;
    let admission = AdmissionRuntime::start(RuntimeConfig::for_this_process(Arc::new(
        MemoryStore::new(),
    )))
    .unwrap();
    let discovery = Discovery::start_with(SupervisorDeps {
        admission: admission.handle(),
        policies: PolicyTable::defaults(),
        telemetry: ScanTelemetry::new(Arc::new(NoTelemetry)),
        http: tollgate_engine::aws::default_http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    });
    let supervisor = discovery.supervisor();
    let mut request = OrganizationRequest::new(DiscoveryRequest {
        regions: vec!["us-east-1".into(), "eu-west-1".into()],
        datasets: vec![Dataset::KmsKeys, Dataset::DynamoDbTables],
        endpoint_url: Some(moto.url.clone()),
        timeout: Duration::from_secs(120),
        credentials: Some(caller()),
        ..Default::default()
    });
    request.max_accounts_in_flight = NonZeroUsize::new(IN_FLIGHT).unwrap();
    let scan = discovery.start_organization_scan(request).await.unwrap();
    // While it runs, only the accounts in flight hold their setup (SDK configuration,
    // role credentials, gate).
    let mut most_held = 0;
    while !scan.is_finished() {
        let count = supervisor.send(CountScans).await.unwrap();
        most_held = most_held.max(count.holding_setup);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let report = scan.report().await.unwrap();
    crate::assert_valid_report(&report);
    assert_eq!(report.accounts.len(), MEMBERS + 1, "{report:?}");
    // Issue 33, item 7: every finished account's report went to the spool file; only
    // its digest is in memory.
    assert_eq!(report.accounts.held_in_memory(), 0);
    assert_eq!(
        report.accounts.iter().filter(|r| r.is_ok()).count(),
        MEMBERS + 1
    );
    assert!(
        most_held <= IN_FLIGHT,
        "at most {IN_FLIGHT} accounts' setups at once, saw {most_held}"
    );
    assert_eq!(
        supervisor.send(CountScans).await.unwrap(),
        ScanCount::default(),
        "every member scan is forgotten, none holds its setup"
    );
    discovery.shutdown();
}
