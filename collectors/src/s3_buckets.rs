//! `s3-buckets`: every bucket with its region, lifecycle rule count and Intelligent-Tiering
//! configuration count.
//!
//! ListBuckets (paginated by continuation token) runs once, in the scan's first region.
//! A bucket's region comes from the listing's `BucketRegion` when AWS sends it, else from
//! GetBucketLocation. Buckets outside the scan's regions are left out. The two
//! configuration reads then run per bucket, in batches of [`BATCH`] buckets with both
//! reads of a bucket in parallel (seed 000's large-account fixture), each against the
//! bucket's own region.
//!
//! `NoSuchLifecycleConfiguration` means zero rules, not an error. Any other fatal answer
//! (access denied, an endpoint that does not implement the operation) leaves the count
//! `null` and says why in `reasons`.

use crate::join::join_in_order;

use crate::operation;
use crate::output::{DatasetReport, Item, S3Bucket};
use crate::resource::Resource;
use crate::{CollectorRun, Operation, ReportBuilder};
use tollgate_engine::aws::{CallError, CallErrorKind};

/// The resource type of the items.
pub const TYPE: &str = crate::dataset::Dataset::S3Buckets.native_type();

/// Buckets whose configuration reads run at once.
pub const BATCH: usize = 10;

const LIST_BUCKETS: Operation = operation!("s3", "ListBuckets");
const GET_LOCATION: Operation = operation!("s3", "GetBucketLocation");
const GET_LIFECYCLE: Operation = operation!("s3", "GetBucketLifecycleConfiguration");
const LIST_TIERING: Operation = operation!("s3", "ListBucketIntelligentTieringConfigurations");

/// Every operation the collector calls (`tollgate types`).
pub const OPERATIONS: &[Operation] = &[LIST_BUCKETS, GET_LOCATION, GET_LIFECYCLE, LIST_TIERING];

/// The answer S3 gives a bucket without lifecycle rules.
const NO_LIFECYCLE: &str = "NoSuchLifecycleConfiguration";

/// One listed bucket before its configuration reads.
struct Listed {
    name: String,
    region: Option<String>,
}

/// Collect the dataset.
pub async fn collect(run: &CollectorRun) -> DatasetReport {
    let mut out = ReportBuilder::new();
    let home = run.home_region().to_string();
    let client = run.client::<aws_sdk_s3::Client>(&home);

    // 1. The listing.
    let mut listed = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = run
            .call(LIST_BUCKETS, &home, || {
                client
                    .list_buckets()
                    .set_continuation_token(token.clone())
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.listing_failed(LIST_BUCKETS, &e);
                return finish(run, out);
            }
        };
        for bucket in page.buckets() {
            let Some(name) = bucket.name() else { continue };
            listed.push(Listed {
                name: name.to_string(),
                region: bucket.bucket_region().map(str::to_string),
            });
        }
        run.progress.listed_more(page.buckets().len());
        token = page.continuation_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    // Location (when the listing did not say) + 2 configuration reads per bucket.
    let missing_region = listed.iter().filter(|b| b.region.is_none()).count();
    run.progress.plan_more(missing_region + 2 * listed.len());

    // 2. Per bucket, in batches.
    for batch in listed.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let results = join_in_order(batch.iter().map(|b| describe(run, &home, b))).await;
        let before = out.len();
        for described in results {
            let Some(described) = described else { continue };
            for (operation, field, error) in &described.failures {
                out.value_missing(operation, field, error);
            }
            if let Some(item) = described.item {
                out.push(Item::S3Bucket(item));
            }
        }
        run.progress.items_more(out.len() - before);
    }
    if run.is_cancelled() {
        out.cancelled();
    }
    finish(run, out)
}

/// The report, with one coverage entry per scanned region: the one global listing
/// covers them all, each counting the buckets in it.
fn finish(run: &CollectorRun, mut out: ReportBuilder) -> DatasetReport {
    let account = run.account();
    let entries: Vec<_> = run
        .regions
        .iter()
        .map(|region| {
            let count = out
                .items()
                .iter()
                .filter(|i| i.resource().region.as_deref() == Some(region.as_str()))
                .count();
            out.coverage_entry(TYPE, account.as_deref(), region, count as u64)
        })
        .collect();
    for entry in entries {
        out.covered(entry);
    }
    out.finish()
}

/// One bucket's item and the reads that failed.
struct Described {
    item: Option<S3Bucket>,
    failures: Vec<(Operation, &'static str, CallError)>,
}

/// Region, then both configuration reads in parallel. `None` when the bucket is outside
/// the scan's regions.
async fn describe(run: &CollectorRun, home: &str, bucket: &Listed) -> Option<Described> {
    let mut failures = Vec::new();
    let region = match &bucket.region {
        Some(region) => Some(region.clone()),
        None => match location(run, home, &bucket.name).await {
            Ok(region) => Some(region),
            Err(e) => {
                failures.push((GET_LOCATION, "region", e));
                None
            }
        },
    };
    if let Some(region) = &region {
        if !run.regions.iter().any(|r| r == region) {
            // Out of the scan's regions: its two planned reads will not happen.
            run.progress.done(2);
            return None;
        }
    }
    let Some(region) = region else {
        // Without a region the configuration reads cannot be addressed.
        run.progress.done(2);
        return Some(Described {
            item: Some(S3Bucket {
                resource: bucket_resource(run, &bucket.name, None),
                name: bucket.name.clone(),
                lifecycle_rule_count: None,
                intelligent_tiering_configuration_count: None,
                activity: None,
            }),
            failures,
        });
    };
    let (lifecycle, tiering) = futures_util::future::join(
        lifecycle_rules(run, &region, &bucket.name),
        tiering_configurations(run, &region, &bucket.name),
    )
    .await;
    let lifecycle_rule_count = lifecycle
        .map_err(|e| failures.push((GET_LIFECYCLE, "lifecycle_rule_count", e)))
        .ok();
    let intelligent_tiering_configuration_count = tiering
        .map_err(|e| failures.push((LIST_TIERING, "intelligent_tiering_configuration_count", e)))
        .ok();
    Some(Described {
        item: Some(S3Bucket {
            resource: bucket_resource(run, &bucket.name, Some(&region)),
            name: bucket.name.clone(),
            lifecycle_rule_count,
            intelligent_tiering_configuration_count,
            activity: None,
        }),
        failures,
    })
}

/// A bucket's common fields (`region`: `None` when its location could not be read).
fn bucket_resource(run: &CollectorRun, name: &str, region: Option<&str>) -> Resource {
    let arn = format!("arn:{}:s3:::{name}", run.gate.partition().as_str());
    run.resource(TYPE, name, region)
        .arn(Some(arn.clone()))
        .property("BucketName", name)
        .property("Arn", arn)
}

/// GetBucketLocation: an empty constraint is us-east-1, the legacy `EU` is eu-west-1.
async fn location(run: &CollectorRun, home: &str, bucket: &str) -> Result<String, CallError> {
    let client = run.client::<aws_sdk_s3::Client>(home);
    let answer = run
        .call_item(GET_LOCATION, home, || {
            client.get_bucket_location().bucket(bucket).send()
        })
        .await;
    let constraint = answer?
        .location_constraint()
        .map(|c| c.as_str().to_string())
        .unwrap_or_default();
    Ok(match constraint.as_str() {
        "" => "us-east-1".to_string(),
        "EU" => "eu-west-1".to_string(),
        other => other.to_string(),
    })
}

async fn lifecycle_rules(run: &CollectorRun, region: &str, bucket: &str) -> Result<u32, CallError> {
    let client = run.client::<aws_sdk_s3::Client>(region);
    let answer = run
        .call_item(GET_LIFECYCLE, region, || {
            client
                .get_bucket_lifecycle_configuration()
                .bucket(bucket)
                .send()
        })
        .await;
    match answer {
        Ok(config) => Ok(config.rules().len() as u32),
        Err(e) if e.kind() == CallErrorKind::Fatal && e.code() == Some(NO_LIFECYCLE) => Ok(0),
        Err(e) => Err(e),
    }
}

async fn tiering_configurations(
    run: &CollectorRun,
    region: &str,
    bucket: &str,
) -> Result<u32, CallError> {
    let client = run.client::<aws_sdk_s3::Client>(region);
    let mut count = 0u32;
    let mut token: Option<String> = None;
    loop {
        let page = run
            .call(LIST_TIERING, region, || {
                client
                    .list_bucket_intelligent_tiering_configurations()
                    .bucket(bucket)
                    .set_continuation_token(token.clone())
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                run.progress.done(1);
                return Err(e);
            }
        };
        count += page.intelligent_tiering_configuration_list().len() as u32;
        token = page
            .next_continuation_token()
            .filter(|_| page.is_truncated() == Some(true))
            .map(str::to_string);
        if token.is_none() {
            run.progress.done(1);
            return Ok(count);
        }
    }
}
