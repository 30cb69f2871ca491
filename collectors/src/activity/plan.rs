//! The activity plan, pure: which series every item needs, over which window, and how
//! one region's queries of every dataset are cut into GetMetricData requests.
//!
//! Why one plan across datasets? CloudWatch's request quota and datapoint budgets are
//! per account and region, not per dataset; a function's two series and a table's two
//! series fit in the same request, so packing every dataset's queries into requests of
//! up to [`MAX_QUERIES`] makes fewer, fuller requests (seed 000: a shared attempt is one
//! event listing every dataset it serves).

use std::collections::BTreeMap;

use tollgate_quota::Timestamp;

use crate::dataset::Dataset;
use crate::output::{DatasetReport, Item};

/// The most `MetricDataQueries` in one GetMetricData request (AWS's limit).
pub const MAX_QUERIES: usize = 500;
/// Every series is daily.
pub const PERIOD_S: u32 = 86_400;
/// Complete UTC days read, ending at midnight UTC of the scan's day.
pub const DAYS: i64 = 14;

const DAY_MS: i64 = 86_400_000;

/// One metric an item's activity holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    /// CloudWatch namespace.
    pub namespace: &'static str,
    /// Metric name (also the key in the item's `activity.series`).
    pub metric: &'static str,
    /// The statistic read.
    pub stat: &'static str,
    /// The dimension naming the resource.
    pub dimension: &'static str,
    /// A second, fixed dimension (S3's `StorageType`).
    pub fixed: Option<(&'static str, &'static str)>,
}

const fn spec(
    namespace: &'static str,
    metric: &'static str,
    stat: &'static str,
    dimension: &'static str,
    fixed: Option<(&'static str, &'static str)>,
) -> MetricSpec {
    MetricSpec {
        namespace,
        metric,
        stat,
        dimension,
        fixed,
    }
}

/// Lambda functions: invocations and errors, daily sums.
pub const LAMBDA: [MetricSpec; 2] = [
    spec("AWS/Lambda", "Invocations", "Sum", "FunctionName", None),
    spec("AWS/Lambda", "Errors", "Sum", "FunctionName", None),
];
/// DynamoDB tables: consumed read and write capacity, daily sums.
pub const DYNAMODB: [MetricSpec; 2] = [
    spec(
        "AWS/DynamoDB",
        "ConsumedReadCapacityUnits",
        "Sum",
        "TableName",
        None,
    ),
    spec(
        "AWS/DynamoDB",
        "ConsumedWriteCapacityUnits",
        "Sum",
        "TableName",
        None,
    ),
];
/// S3 buckets: standard-storage size and all-storage object count, daily averages.
pub const S3: [MetricSpec; 2] = [
    spec(
        "AWS/S3",
        "BucketSizeBytes",
        "Average",
        "BucketName",
        Some(("StorageType", "StandardStorage")),
    ),
    spec(
        "AWS/S3",
        "NumberOfObjects",
        "Average",
        "BucketName",
        Some(("StorageType", "AllStorageTypes")),
    ),
];

/// The window every series covers: `[start, end)` in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Window {
    /// The last [`DAYS`] complete UTC days before `now` (a Unix-epoch timestamp): from
    /// midnight UTC 14 days before today's to today's (exclusive).
    pub fn last_complete_days(now: Timestamp) -> Window {
        let now_ms = (now.as_micros() / 1_000) as i64;
        let end_ms = now_ms - now_ms.rem_euclid(DAY_MS);
        Window {
            start_ms: end_ms - DAYS * DAY_MS,
            end_ms,
        }
    }
}

/// One series to read: which item of which dataset, which metric, for what resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedQuery {
    pub dataset: Dataset,
    /// The item's index in its dataset's `items`.
    pub item: usize,
    pub spec: &'static MetricSpec,
    /// The resource's name (the dimension's value).
    pub resource: String,
}

/// One GetMetricData request's queries (all its pages share them), in one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub region: String,
    pub queries: Vec<PlannedQuery>,
}

impl Batch {
    /// The datasets this request serves, sorted and deduplicated (telemetry attribution).
    pub fn datasets(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .queries
            .iter()
            .map(|q| q.dataset.name().to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The specs of an item, with its region and resource name; `None` for items without
/// activity (KMS keys) or without a known region (a bucket whose location failed).
pub fn specs_of(item: &Item) -> Option<(&'static [MetricSpec], &str, &str)> {
    match item {
        Item::LambdaFunction(f) => Some((
            &LAMBDA,
            f.resource.region.as_deref()?,
            f.function_name.as_str(),
        )),
        Item::DynamoDbTable(t) => Some((
            &DYNAMODB,
            t.resource.region.as_deref()?,
            t.table_name.as_str(),
        )),
        Item::S3Bucket(b) => Some((&S3, b.resource.region.as_deref()?, b.name.as_str())),
        Item::KmsKey(_) | Item::Resource(_) => None,
    }
}

/// Every series the reports' items need, per region (one planner each), cut into
/// requests of at most [`MAX_QUERIES`]: datasets in report order, items in their order,
/// so a request may span the end of one dataset and the start of the next.
pub fn plan(reports: &BTreeMap<Dataset, DatasetReport>) -> Vec<Batch> {
    let mut per_region: BTreeMap<String, Vec<PlannedQuery>> = BTreeMap::new();
    for (dataset, report) in reports {
        for (i, item) in report.items.iter().enumerate() {
            let Some((specs, region, resource)) = specs_of(item) else {
                continue;
            };
            for spec in specs {
                per_region
                    .entry(region.to_string())
                    .or_default()
                    .push(PlannedQuery {
                        dataset: *dataset,
                        item: i,
                        spec,
                        resource: resource.to_string(),
                    });
            }
        }
    }
    let mut batches = Vec::new();
    for (region, queries) in per_region {
        for chunk in queries.chunks(MAX_QUERIES) {
            batches.push(Batch {
                region: region.clone(),
                queries: chunk.to_vec(),
            });
        }
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{DatasetStatus, DynamoDbTable, KmsKey, LambdaFunction, S3Bucket};
    use crate::resource::Resource;

    fn report(items: Vec<Item>) -> DatasetReport {
        DatasetReport {
            status: DatasetStatus::Complete,
            reasons: Vec::new(),
            items,
            coverage: Vec::new(),
        }
    }

    fn function(name: &str, region: &str) -> Item {
        Item::LambdaFunction(LambdaFunction {
            resource: Resource::new("AWS::Lambda::Function", name.into())
                .region(Some(region.into())),
            function_name: name.into(),
            runtime: None,
            version_count: Some(0),
            activity: None,
        })
    }

    fn table(name: &str) -> Item {
        Item::DynamoDbTable(DynamoDbTable {
            resource: Resource::new("AWS::DynamoDB::Table", name.into())
                .region(Some("us-east-1".into())),
            table_name: name.into(),
            billing_mode: None,
            item_count: None,
            activity: None,
        })
    }

    #[test]
    fn the_window_is_the_fourteen_complete_utc_days_before_the_scan() {
        // 2026-12-01T16:20:00.123Z
        let now = Timestamp::from_millis(1_796_142_000_123);
        let w = Window::last_complete_days(now);
        assert_eq!(w.end_ms, 1_796_083_200_000, "2026-12-01T00:00:00Z");
        assert_eq!(w.end_ms - w.start_ms, 14 * DAY_MS);
        // Exactly midnight: today is not complete, so it is the end.
        assert_eq!(
            Window::last_complete_days(Timestamp::from_millis(1_796_083_200_000)),
            w
        );
    }

    #[test]
    fn every_dataset_shares_requests_of_at_most_500_queries_per_region() {
        let mut reports = BTreeMap::new();
        // 260 functions (520 queries) in us-east-1, 1 in eu-west-1; 10 tables; a key
        // and a bucket without a region have no activity.
        let mut functions: Vec<Item> = (0..260)
            .map(|i| function(&format!("f{i}"), "us-east-1"))
            .collect();
        functions.push(function("elsewhere", "eu-west-1"));
        reports.insert(Dataset::LambdaFunctions, report(functions));
        reports.insert(
            Dataset::DynamoDbTables,
            report((0..10).map(|i| table(&format!("t{i}"))).collect()),
        );
        reports.insert(
            Dataset::S3Buckets,
            report(vec![Item::S3Bucket(S3Bucket {
                resource: crate::resource::Resource::new("AWS::S3::Bucket", "lost".into())
                    .region(None),
                name: "lost".into(),
                lifecycle_rule_count: None,
                intelligent_tiering_configuration_count: None,
                activity: None,
            })]),
        );
        reports.insert(
            Dataset::KmsKeys,
            report(vec![Item::KmsKey(KmsKey {
                resource: crate::resource::Resource::new("AWS::KMS::Key", "k".into())
                    .region(Some("us-east-1".into())),
                key_id: "k".into(),
                key_manager: None,
                key_state: None,
                last_used_at: None,
            })]),
        );
        let batches = plan(&reports);
        let shape: Vec<(&str, usize, Vec<String>)> = batches
            .iter()
            .map(|b| (b.region.as_str(), b.queries.len(), b.datasets()))
            .collect();
        assert_eq!(
            shape,
            [
                ("eu-west-1", 2, vec!["lambda-functions".to_string()]),
                ("us-east-1", 500, vec!["lambda-functions".to_string()]),
                (
                    "us-east-1",
                    40,
                    vec![
                        "dynamodb-tables".to_string(),
                        "lambda-functions".to_string()
                    ]
                ),
            ]
        );
        let last = &batches[2].queries;
        assert_eq!(
            (last[0].resource.as_str(), last[0].spec.metric),
            ("f250", "Invocations")
        );
        assert_eq!(
            (last[39].resource.as_str(), last[39].spec.metric),
            ("t9", "ConsumedWriteCapacityUnits")
        );
    }
}
