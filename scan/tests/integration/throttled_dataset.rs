//! A dataset that loses calls to throttling is `partial`, never a silently short list
//! (DESIGN §6), and the report's throttled gaps say where: the supervisor, a collector and
//! the real gate over a fake transport that throttles one table's DescribeTable forever.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpClient};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use tollgate_actors::{AdmissionRuntime, RuntimeConfig};
use tollgate_collectors::output::{DynamoDbTable, ReasonKind};
use tollgate_collectors::{Dataset, DatasetStatus, Item};
use tollgate_engine::aws::telemetry::NoTelemetry;
use tollgate_engine::throttling::ScanTelemetry;
use tollgate_quota::PolicyTable;
use tollgate_scan::supervisor::SupervisorDeps;
use tollgate_scan::{Discovery, DiscoveryRequest};
use tollgate_sim::transport::{response as reply, FakeTransport};
use tollgate_storage::MemoryStore;

/// Answers STS GetCallerIdentity, DynamoDB ListTables (`orders`, `users`) and
/// DescribeTable: `orders` normally, `users` always with a ThrottlingException.
#[derive(Debug, Clone, Default)]
struct ThrottlingDynamoDb {
    targets: Arc<Mutex<Vec<String>>>,
}

impl ThrottlingDynamoDb {
    fn http_client(&self) -> SharedHttpClient {
        let this = self.clone();
        FakeTransport::new(move |request| this.answer(&request)).http_client()
    }

    fn answer(&self, request: &HttpRequest) -> HttpConnectorFuture {
        let target = request
            .headers()
            .get("x-amz-target")
            .unwrap_or_default()
            .to_owned();
        let body = String::from_utf8_lossy(request.body().bytes().unwrap_or_default()).into_owned();
        self.targets.lock().unwrap().push(target.clone());
        const JSON: &str = "application/x-amz-json-1.0";
        let response = match target.as_str() {
            "" if body.contains("GetCallerIdentity") => reply(
                200,
                "text/xml",
                r#"<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/alice</Arn>
  <UserId>AIDATEST</UserId><Account>123456789012</Account></GetCallerIdentityResult>
</GetCallerIdentityResponse>"#,
            ),
            "DynamoDB_20120810.ListTables" => {
                reply(200, JSON, r#"{"TableNames":["orders","users"]}"#)
            }
            "DynamoDB_20120810.DescribeTable" if body.contains("orders") => reply(
                200,
                JSON,
                r#"{"Table":{"TableName":"orders","ItemCount":5,"BillingModeSummary":{"BillingMode":"PAY_PER_REQUEST"}}}"#,
            ),
            "DynamoDB_20120810.DescribeTable" => reply(
                400,
                JSON,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#,
            ),
            other => reply(
                400,
                JSON,
                format!(r#"{{"__type":"UnknownOperationException","message":"{other}"}}"#),
            ),
        };
        HttpConnectorFuture::ready(Ok(response))
    }
}

#[tokio::test]
async fn a_throttled_dataset_is_partial_and_the_gap_is_reported() {
    tollgate_testkit::emulator_credentials();
    let admission = AdmissionRuntime::start(RuntimeConfig::for_this_process(Arc::new(
        MemoryStore::new(),
    )))
    .unwrap();
    // One retry unit for DynamoDB control-plane reads (ListTables, DescribeTable share the
    // key): the throttled table gives up after a retry or two (a success may refund one).
    let policies = PolicyTable::from_env(Some(
        r#"{"dynamodb:control-plane-read":{"retryCapacity":1}}"#,
    ))
    .unwrap();
    let fake = ThrottlingDynamoDb::default();
    let discovery = Discovery::start_with(SupervisorDeps {
        admission: admission.handle(),
        policies,
        telemetry: ScanTelemetry::new(Arc::new(NoTelemetry)),
        http: fake.http_client(),
        fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes::Skip,
    });
    let report = discovery
        .discover(DiscoveryRequest {
            regions: vec!["us-east-1".into()],
            datasets: vec![Dataset::DynamoDbTables],
            endpoint_url: Some("http://dynamodb.fake.invalid".into()),
            timeout: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .unwrap();
    crate::assert_valid_report(&report);
    discovery.shutdown();
    admission.shutdown().await.unwrap();

    assert_eq!(report.account.as_deref(), Some("123456789012"));
    let tables = report.dataset(Dataset::DynamoDbTables).unwrap();
    assert_eq!(
        tables.status,
        DatasetStatus::Partial,
        "{:#?}",
        tables.reasons
    );
    // Both tables are listed; the throttled one keeps its name with null values.
    let mut items: Vec<_> = tables
        .items
        .iter()
        .map(|i| match i {
            Item::DynamoDbTable(t) => t.clone(),
            other => panic!("unexpected item {other:?}"),
        })
        .collect();
    items.sort_by(|a, b| a.table_name.cmp(&b.table_name));
    assert_eq!(
        items,
        [
            DynamoDbTable {
                resource: table_model("orders").property("BillingMode", "PAY_PER_REQUEST"),
                table_name: "orders".into(),
                billing_mode: Some("PAY_PER_REQUEST".into()),
                item_count: Some(5),
                activity: None,
            },
            DynamoDbTable {
                resource: table_model("users"),
                table_name: "users".into(),
                billing_mode: None,
                item_count: None,
                activity: None,
            },
        ]
    );
    assert_eq!(tables.reasons.len(), 1, "{:#?}", tables.reasons);
    let reason = &tables.reasons[0];
    assert_eq!(reason.operation, "dynamodb:DescribeTable");
    assert_eq!(reason.code.as_deref(), Some("ThrottlingException"));
    assert!(
        reason.kind == ReasonKind::RetriesExhausted || reason.kind == ReasonKind::Throttled,
        "{reason:?}"
    );
    let keys = report.throttling_keys();
    let gap = keys
        .get("aws/123456789012/us-east-1/dynamodb:control-plane-read")
        .unwrap_or_else(|| panic!("no gap for DescribeTable: {:?}", report.throttling));
    assert!(gap.throttled_responses >= 2, "{gap:?}");
    assert!((1..=2).contains(&gap.retries), "{gap:?}");
    assert_eq!(gap.gave_up_calls, 1, "{gap:?}");
    let describes = fake
        .targets
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.ends_with("DescribeTable"))
        .count();
    assert_eq!(
        describes, 3,
        "orders once, users twice (first attempt + one retry)"
    );
}

/// A table's common fields as the collector writes them in the test's account (the ARN
/// built from the name when DescribeTable did not answer it), without `BillingMode`.
fn table_model(name: &str) -> tollgate_collectors::Resource {
    let arn = format!("arn:aws:dynamodb:us-east-1:123456789012:table/{name}");
    tollgate_collectors::Resource::new("AWS::DynamoDB::Table", name.into())
        .account(Some("123456789012".into()))
        .region(Some("us-east-1".into()))
        .arn(Some(arn.clone()))
        .property("Arn", arn)
        .property("TableName", name)
}
