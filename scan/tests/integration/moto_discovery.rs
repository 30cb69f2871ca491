//! Discovery end to end against moto's server (DESIGN §7 tier 3): the real AWS SDK, the
//! real gate and admission on a temporary directory, collectors as actors under the
//! supervisor.
//!
//! The test creates buckets (some with lifecycle rules), Lambda functions with published
//! versions, DynamoDB tables and KMS keys through the SDK, runs a discovery and checks
//! every dataset item by item. moto answers ListBucketIntelligentTieringConfigurations
//! with a bucket listing and GetKeyLastUsage with an HTML 500: those fields must come back
//! `null` with a reason, and everything else must still be right.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ProvisionedThroughput, ScalarAttributeType,
};
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, ExpirationStatus, LifecycleExpiration, LifecycleRule,
    LifecycleRuleFilter,
};
use tollgate_collectors::output::{DynamoDbTable, KmsKey, LambdaFunction, ReasonKind, S3Bucket};
use tollgate_collectors::{Dataset, DatasetStatus, DiscoveryReport, Item};
use tollgate_engine::aws::telemetry::{AttemptOutcome, MemoryTelemetry};
use tollgate_engine::{Engine, EngineConfig};
use tollgate_quota::PolicyTable;
use tollgate_scan::{DiscoveryRequest, EngineDiscovery};
use tollgate_storage::DirEnv;
use tollgate_testkit::moto::{moto, Moto, KMS_ONE_RETRY, MOTO_ACCOUNT};
use tollgate_testkit::unique_prefix;

pub(crate) const REGION: &str = "us-east-1";

/// An empty zip archive (just the end-of-central-directory record) whose archive comment
/// is `revision`, so each revision is different code: moto stores the bytes and never
/// runs the function, and (like AWS) PublishVersion of unchanged code publishes nothing new.
pub(crate) fn empty_zip(revision: u8) -> Vec<u8> {
    let mut zip = vec![
        0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    zip.extend_from_slice(&1u16.to_le_bytes());
    zip.push(b'0' + revision);
    zip
}

pub(crate) async fn sdk_config(moto: &Moto) -> aws_config::SdkConfig {
    // Test setup sends ungated, through the engine's inner client (the SDK crates are
    // built without their default HTTP client).
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .region(aws_config::Region::new(REGION))
        .endpoint_url(&moto.url)
        .credentials_provider(aws_credential_types::Credentials::for_tests_with_session_token())
        .load()
        .await
}

pub(crate) fn engine_config(dir: &std::path::Path, overrides: Option<&str>) -> EngineConfig {
    EngineConfig {
        dir_env: DirEnv {
            explicit: Some(dir.to_path_buf()),
            xdg_cache_home: None,
            home: None,
            temp_dir: std::env::temp_dir(),
            uid: tollgate_storage::current_uid(),
        },
        policies: match overrides {
            Some(json) => PolicyTable::from_env(Some(json)).unwrap(),
            None => PolicyTable::defaults(),
        },
        fleet: None,
    }
}

/// One discovery of `request` on a fresh engine over a temporary admission directory
/// (policy `overrides` as `TOLLGATE_QUOTA_OVERRIDES` would give them): its report,
/// validated against the schema, and the gate's attempt events.
pub(crate) async fn discover_once(
    overrides: Option<&str>,
    request: DiscoveryRequest,
) -> (DiscoveryReport, MemoryTelemetry) {
    let tmp = tempfile::tempdir().unwrap();
    let engine = Engine::open(engine_config(&tmp.path().join("admission"), overrides)).unwrap();
    let telemetry = MemoryTelemetry::new();
    let discovery = engine.discovery(Some(Arc::new(telemetry.clone())));
    let report = discovery.discover(request).await.unwrap();
    crate::assert_valid_report(&report);
    discovery.shutdown();
    engine.close().await.unwrap();
    (report, telemetry)
}

/// What the test created, to compare with the report.
struct Fixture {
    buckets: Vec<S3Bucket>,
    functions: Vec<LambdaFunction>,
    tables: Vec<DynamoDbTable>,
    keys: Vec<KmsKey>,
}

async fn create_fixture(moto: &Moto, prefix: &str) -> Fixture {
    let sdk = sdk_config(moto).await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .build(),
    );
    let mut buckets = Vec::new();
    for (suffix, rules) in [("plain", 0u32), ("one-rule", 1), ("two-rules", 2)] {
        let name = format!("{prefix}{suffix}");
        s3.create_bucket().bucket(&name).send().await.unwrap();
        if rules > 0 {
            let mut config = BucketLifecycleConfiguration::builder();
            for i in 0..rules {
                config = config.rules(
                    LifecycleRule::builder()
                        .id(format!("expire-{i}"))
                        .filter(
                            LifecycleRuleFilter::builder()
                                .prefix(format!("logs{i}/"))
                                .build(),
                        )
                        .status(ExpirationStatus::Enabled)
                        .expiration(LifecycleExpiration::builder().days(30 + i as i32).build())
                        .build()
                        .unwrap(),
                );
            }
            s3.put_bucket_lifecycle_configuration()
                .bucket(&name)
                .lifecycle_configuration(config.build().unwrap())
                .send()
                .await
                .unwrap();
        }
        buckets.push(S3Bucket {
            resource: model(
                "AWS::S3::Bucket",
                &name,
                format!("arn:aws:s3:::{name}"),
                &[("BucketName", name.as_str().into())],
            ),
            name,
            lifecycle_rule_count: Some(rules),
            // moto does not answer ListBucketIntelligentTieringConfigurations.
            intelligent_tiering_configuration_count: None,
            activity: None,
        });
    }

    let role = moto.create_lambda_role(&format!("{prefix}role"));
    let lambda = aws_sdk_lambda::Client::new(&sdk);
    let mut functions = Vec::new();
    for (suffix, published) in [("unpublished", 0u32), ("published", 2)] {
        let name = format!("{prefix}{suffix}");
        lambda
            .create_function()
            .function_name(&name)
            .runtime(aws_sdk_lambda::types::Runtime::Python312)
            .role(&role)
            .handler("index.handler")
            .code(
                aws_sdk_lambda::types::FunctionCode::builder()
                    .zip_file(aws_smithy_types::Blob::new(empty_zip(0)))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        for i in 0..published {
            if i > 0 {
                lambda
                    .update_function_code()
                    .function_name(&name)
                    .zip_file(aws_smithy_types::Blob::new(empty_zip(i as u8)))
                    .send()
                    .await
                    .unwrap();
            }
            let version = lambda
                .publish_version()
                .function_name(&name)
                .description(format!("v{i}"))
                .send()
                .await
                .unwrap();
            assert_eq!(version.version(), Some((i + 1).to_string().as_str()));
        }
        functions.push(LambdaFunction {
            resource: model(
                "AWS::Lambda::Function",
                &name,
                format!("arn:aws:lambda:{REGION}:{MOTO_ACCOUNT}:function:{name}"),
                &[
                    ("FunctionName", name.as_str().into()),
                    ("Runtime", "python3.12".into()),
                ],
            ),
            function_name: name,
            runtime: Some("python3.12".into()),
            version_count: Some(published),
            activity: None,
        });
    }

    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let mut tables = Vec::new();
    for (suffix, on_demand, items) in [("on-demand", true, 2i64), ("provisioned", false, 0)] {
        let name = format!("{prefix}{suffix}");
        let mut create = dynamodb
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
            );
        create = if on_demand {
            create.billing_mode(BillingMode::PayPerRequest)
        } else {
            create
                .billing_mode(BillingMode::Provisioned)
                .provisioned_throughput(
                    ProvisionedThroughput::builder()
                        .read_capacity_units(1)
                        .write_capacity_units(1)
                        .build()
                        .unwrap(),
                )
        };
        create.send().await.unwrap();
        for i in 0..items {
            dynamodb
                .put_item()
                .table_name(&name)
                .item("pk", AttributeValue::S(format!("item-{i}")))
                .send()
                .await
                .unwrap();
        }
        tables.push(DynamoDbTable {
            resource: model(
                "AWS::DynamoDB::Table",
                &name,
                format!("arn:aws:dynamodb:{REGION}:{MOTO_ACCOUNT}:table/{name}"),
                &[
                    ("TableName", name.as_str().into()),
                    (
                        "BillingMode",
                        if on_demand {
                            "PAY_PER_REQUEST"
                        } else {
                            "PROVISIONED"
                        }
                        .into(),
                    ),
                ],
            ),
            table_name: name,
            billing_mode: Some(
                if on_demand {
                    "PAY_PER_REQUEST"
                } else {
                    "PROVISIONED"
                }
                .into(),
            ),
            item_count: Some(items),
            activity: None,
        });
    }

    let kms = aws_sdk_kms::Client::new(&sdk);
    let mut keys = Vec::new();
    for i in 0..2 {
        let created = kms
            .create_key()
            .description(format!("{prefix}key-{i}"))
            .send()
            .await
            .unwrap();
        let id = created.key_metadata().unwrap().key_id().to_string();
        keys.push(KmsKey {
            resource: model(
                "AWS::KMS::Key",
                &id,
                format!("arn:aws:kms:{REGION}:{MOTO_ACCOUNT}:key/{id}"),
                &[("KeyId", id.as_str().into())],
            ),
            key_id: id,
            key_manager: Some("CUSTOMER".into()),
            key_state: Some("Enabled".into()),
            // moto answers GetKeyLastUsage with an HTML 500.
            last_used_at: None,
        });
    }
    Fixture {
        buckets,
        functions,
        tables,
        keys,
    }
}

/// The resource model's fields of a fixture item in moto's account and [`REGION`]:
/// `properties` are `props` plus the ARN as `Arn`, as the collectors write them.
fn model(
    resource_type: &str,
    id: &str,
    arn: String,
    props: &[(&str, serde_json::Value)],
) -> tollgate_collectors::Resource {
    let mut resource = tollgate_collectors::Resource::new(resource_type, id.to_string())
        .account(Some(MOTO_ACCOUNT.to_string()))
        .region(Some(REGION.to_string()))
        .arn(Some(arn.clone()));
    for (name, value) in props {
        resource = resource.property(name, value.clone());
    }
    resource.property("Arn", arn)
}

/// The report's items of one dataset whose name starts with `prefix` (tests share moto).
fn mine<'a, T>(
    report: &'a DiscoveryReport,
    dataset: Dataset,
    pick: impl Fn(&'a Item) -> Option<&'a T>,
    keep: impl Fn(&T) -> bool,
) -> Vec<&'a T> {
    report
        .dataset(dataset)
        .unwrap_or_else(|| panic!("{dataset} missing from the report"))
        .items
        .iter()
        .filter_map(pick)
        .filter(|t| keep(t))
        .collect()
}

fn reason_for<'a>(
    report: &'a DiscoveryReport,
    dataset: Dataset,
    operation: &str,
) -> &'a tollgate_collectors::output::Reason {
    let d = report.dataset(dataset).unwrap();
    d.reasons
        .iter()
        .find(|r| r.operation == operation)
        .unwrap_or_else(|| panic!("no reason for {operation} in {dataset}: {:#?}", d.reasons))
}

#[tokio::test]
async fn discovers_every_dataset_item_by_item() {
    let moto = moto();
    let prefix = unique_prefix("all");
    let fixture = create_fixture(&moto, &prefix).await;

    let (report, telemetry) = discover_once(
        Some(KMS_ONE_RETRY),
        DiscoveryRequest {
            regions: vec![REGION.into()],
            endpoint_url: Some(moto.url.clone()),
            timeout: Duration::from_secs(120),
            ..Default::default()
        },
    )
    .await;

    // The envelope.
    assert_eq!(report.account.as_deref(), Some(MOTO_ACCOUNT));
    assert_eq!(report.partition, "aws");
    assert_eq!(report.regions, [REGION]);
    assert!(report.scan_id.starts_with("scan-"));
    assert!(report.started_at <= report.finished_at);
    // Every native type (the four first datasets, EC2's seventeen: moto's default VPC,
    // subnets and security groups are there, and the other services' eleven) and the
    // tagging sweep's `tags-only` entry.
    assert_eq!(report.datasets.len(), Dataset::defaults().len() + 1);
    assert_eq!(Dataset::defaults().len(), 4 + 17 + 11);

    // s3-buckets: counts right, Intelligent-Tiering null with one counted reason.
    let mut buckets = mine(
        &report,
        Dataset::S3Buckets,
        |i| match i {
            Item::S3Bucket(b) => Some(b),
            _ => None,
        },
        |b| b.name.starts_with(&prefix),
    );
    buckets.sort_by(|a, b| a.name.cmp(&b.name));
    let mut want: Vec<_> = fixture.buckets.iter().collect();
    want.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(buckets, want);
    let s3 = report.dataset(Dataset::S3Buckets).unwrap();
    assert_eq!(s3.status, DatasetStatus::Complete, "{:#?}", s3.reasons);
    let tiering = reason_for(
        &report,
        Dataset::S3Buckets,
        "s3:ListBucketIntelligentTieringConfigurations",
    );
    assert_eq!(tiering.kind, ReasonKind::Unavailable);
    assert_eq!(
        tiering.field.as_deref(),
        Some("intelligent_tiering_configuration_count")
    );
    assert!(
        tiering.count >= 3,
        "one reason counted per bucket: {tiering:?}"
    );
    assert_eq!(s3.reasons.len(), 1, "{:#?}", s3.reasons);

    // lambda-functions: published versions only.
    let mut functions = mine(
        &report,
        Dataset::LambdaFunctions,
        |i| match i {
            Item::LambdaFunction(f) => Some(f),
            _ => None,
        },
        |f| f.function_name.starts_with(&prefix),
    );
    functions.sort_by(|a, b| a.function_name.cmp(&b.function_name));
    let mut want: Vec<_> = fixture.functions.iter().collect();
    want.sort_by(|a, b| a.function_name.cmp(&b.function_name));
    assert_eq!(functions, want);
    let lambda = report.dataset(Dataset::LambdaFunctions).unwrap();
    assert_eq!(
        lambda.status,
        DatasetStatus::Complete,
        "{:#?}",
        lambda.reasons
    );
    assert!(lambda.reasons.is_empty());

    // dynamodb-tables.
    let mut tables = mine(
        &report,
        Dataset::DynamoDbTables,
        |i| match i {
            Item::DynamoDbTable(t) => Some(t),
            _ => None,
        },
        |t| t.table_name.starts_with(&prefix),
    );
    tables.sort_by(|a, b| a.table_name.cmp(&b.table_name));
    let mut want: Vec<_> = fixture.tables.iter().collect();
    want.sort_by(|a, b| a.table_name.cmp(&b.table_name));
    assert_eq!(tables, want);
    let dynamodb = report.dataset(Dataset::DynamoDbTables).unwrap();
    assert_eq!(
        dynamodb.status,
        DatasetStatus::Complete,
        "{:#?}",
        dynamodb.reasons
    );

    // kms-keys: metadata right, last use null with a reason; the lost reads make the
    // dataset partial (moto's 500 is a transient failure, retried and given up), never a
    // silently complete list.
    let ids: Vec<&str> = fixture.keys.iter().map(|k| k.key_id.as_str()).collect();
    let mut keys = mine(
        &report,
        Dataset::KmsKeys,
        |i| match i {
            Item::KmsKey(k) => Some(k),
            _ => None,
        },
        |k| ids.contains(&k.key_id.as_str()),
    );
    keys.sort_by(|a, b| a.key_id.cmp(&b.key_id));
    let mut want: Vec<_> = fixture.keys.iter().collect();
    want.sort_by(|a, b| a.key_id.cmp(&b.key_id));
    assert_eq!(keys, want);
    let last_use = reason_for(&report, Dataset::KmsKeys, "kms:GetKeyLastUsage");
    assert_eq!(last_use.field.as_deref(), Some("last_used_at"));
    assert!(last_use.count >= 2, "{last_use:?}");
    let kms = report.dataset(Dataset::KmsKeys).unwrap();
    match last_use.kind {
        ReasonKind::Unavailable => assert_eq!(kms.status, DatasetStatus::Complete),
        _ => assert_eq!(kms.status, DatasetStatus::Partial, "{:#?}", kms.reasons),
    }

    // Every physical attempt passed the gate and is attributed to this scan.
    let events = telemetry.events();
    assert!(!events.is_empty());
    for event in events.iter().filter(|e| e.quota.is_some()) {
        assert_eq!(event.attribution.scan_id, report.scan_id);
        assert_eq!(event.attribution.datasets.len(), 1, "{event:?}");
    }
    for op in [
        "ListBuckets",
        "GetBucketLifecycleConfiguration",
        "ListBucketIntelligentTieringConfigurations",
        "ListFunctions",
        "ListVersionsByFunction",
        "ListTables",
        "DescribeTable",
        "ListKeys",
        "DescribeKey",
        "GetKeyLastUsage",
    ] {
        assert!(
            events.iter().any(|e| e.operation == op && e.dispatched),
            "no dispatched attempt of {op}"
        );
    }
    // moto's 500 was retried (the one retry the capacity allows), not only given up.
    assert!(
        events
            .iter()
            .any(|e| e.operation == "GetKeyLastUsage" && e.dispatched && e.attempt >= 2),
        "no retried GetKeyLastUsage attempt"
    );
    // The report is JSON with the documented envelope.
    let json = serde_json::to_value(&report).unwrap();
    for field in [
        "scan_id",
        "partition",
        "account",
        "regions",
        "started_at",
        "finished_at",
        "datasets",
        "throttling",
    ] {
        assert!(json.get(field).is_some(), "{field} missing");
    }
    assert!(json["datasets"]["s3-buckets"]["items"][0]
        .get("intelligent_tiering_configuration_count")
        .is_some());
}

/// A scan slowed to a crawl (S3 configuration reads at 1 every 2 s) and cancelled after
/// its first bucket: the report still arrives, `s3-buckets` is `cancelled` with what was
/// collected, and no queued read dispatches after the cancellation.
#[tokio::test]
async fn a_cancelled_scan_reports_what_it_collected() {
    let moto = moto();
    let prefix = unique_prefix("cancel");
    let sdk = sdk_config(&moto).await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .build(),
    );
    for i in 0..4 {
        s3.create_bucket()
            .bucket(format!("{prefix}{i}"))
            .send()
            .await
            .unwrap();
    }
    let slow = r#"{"s3:GetBucketLifecycleConfiguration":{"ratePerSecond":0.5,"burst":1}}"#;
    let tmp = tempfile::tempdir().unwrap();
    let engine = Engine::open(engine_config(&tmp.path().join("admission"), Some(slow))).unwrap();
    let telemetry = MemoryTelemetry::new();
    let discovery = engine.discovery(Some(Arc::new(telemetry.clone())));
    let scan = discovery
        .start_scan(DiscoveryRequest {
            regions: vec![REGION.into()],
            datasets: vec![Dataset::S3Buckets],
            endpoint_url: Some(moto.url.clone()),
            timeout: Duration::from_secs(120),
            ..Default::default()
        })
        .await
        .unwrap();
    // Wait until the listing is done and the first configuration read has answered.
    let mut waited = 0;
    while scan.progress()[0].done < 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
        assert!(
            waited < 3_000,
            "the scan made no progress: {:?}",
            scan.progress()
        );
    }
    assert!(scan.cancel().await.unwrap());
    let cancelled_at_events = telemetry.events().len();
    let report = scan.report().await.unwrap();
    crate::assert_valid_report(&report);
    assert!(
        !scan.cancel().await.unwrap(),
        "a finished scan cannot be cancelled"
    );
    discovery.shutdown();
    engine.close().await.unwrap();

    let s3 = report.dataset(Dataset::S3Buckets).unwrap();
    assert_eq!(s3.status, DatasetStatus::Cancelled, "{:#?}", s3.reasons);
    assert!(s3.items.len() < 4 + 100, "items are what was collected");
    let late: Vec<_> = telemetry.events()[cancelled_at_events..]
        .iter()
        // An attempt in flight at the cancellation is aborted (outcome `cancelled`); none
        // may be sent afterwards.
        .filter(|e| {
            e.operation == "GetBucketLifecycleConfiguration"
                && e.dispatched
                && e.outcome != AttemptOutcome::Cancelled
        })
        .cloned()
        .collect();
    assert!(late.is_empty(), "reads dispatched after cancel: {late:#?}");
}

/// `--regions all` against moto, which has no Account `ListRegions`: the scan takes the
/// account's regions from EC2 `DescribeRegions` (through the gate, under
/// `ec2:DescribeRegions`), says so in `regions_source`, and scans them all rather than the
/// fallback.
#[tokio::test]
async fn regions_all_takes_describe_regions_where_moto_has_no_list_regions() {
    let moto = moto();
    let sdk = sdk_config(&moto).await;
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let mut expected: Vec<String> = ec2
        .describe_regions()
        .send()
        .await
        .unwrap()
        .regions()
        .iter()
        .filter_map(|r| r.region_name().map(str::to_owned))
        .collect();
    expected.sort();
    assert!(expected.len() > 1, "{expected:?}");

    let (report, telemetry) = discover_once(
        None,
        DiscoveryRequest {
            regions: vec![REGION.into()],
            datasets: vec![Dataset::DynamoDbTables],
            region_source: tollgate_scan::regions::RegionSource::Enabled {
                fallback: vec!["eu-west-3".into()],
            },
            endpoint_url: Some(moto.url.clone()),
            timeout: Duration::from_secs(120),
            ..Default::default()
        },
    )
    .await;

    assert_eq!(
        report.regions_source,
        Some(tollgate_collectors::output::RegionsSource::DescribeRegions)
    );
    assert_eq!(report.regions, expected);
    assert_eq!(report.regions_reason, None);
    let tables = report.dataset(Dataset::DynamoDbTables).unwrap();
    assert_eq!(
        tables.status,
        DatasetStatus::Complete,
        "{:#?}",
        tables.reasons
    );
    let events = telemetry.events();
    let asked = |operation: &str| events.iter().filter(|e| e.operation == operation).count();
    assert!(asked("ListRegions") >= 1, "ListRegions was tried first");
    assert_eq!(asked("DescribeRegions"), 1);
    assert_eq!(
        asked("ListTables"),
        expected.len(),
        "one listing per region"
    );
}
