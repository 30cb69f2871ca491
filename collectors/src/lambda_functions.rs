//! `lambda-functions`: every function per region with its runtime and published version
//! count.
//!
//! ListFunctions (paginated by marker) per region, then ListVersionsByFunction (paginated)
//! per function, [`BATCH`] functions at a time. `version_count` counts published versions
//! only: `$LATEST` is the unpublished working copy every function has, so counting it would
//! make "no published versions" read as 1.

use crate::join::join_in_order;

use crate::operation;
use crate::output::{DatasetReport, Item, LambdaFunction};
use crate::{CollectorRun, Operation, ReportBuilder};
use tollgate_engine::aws::CallError;

/// Functions whose version listings run at once.
pub const BATCH: usize = 10;

/// The resource type of the items.
pub const TYPE: &str = crate::dataset::Dataset::LambdaFunctions.native_type();

const LIST_FUNCTIONS: Operation = operation!("lambda", "ListFunctions");
const LIST_VERSIONS: Operation = operation!("lambda", "ListVersionsByFunction");

/// Every operation the collector calls (`tollgate types`).
pub const OPERATIONS: &[Operation] = &[LIST_FUNCTIONS, LIST_VERSIONS];

/// The unpublished working copy.
const LATEST: &str = "$LATEST";

/// Collect the dataset over every region of the scan.
pub async fn collect(run: &CollectorRun) -> DatasetReport {
    run.per_region(TYPE, collect_region).await
}

async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_lambda::Client>(region);
    let mut functions = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = run
            .call(LIST_FUNCTIONS, region, || {
                client.list_functions().set_marker(marker.clone()).send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.listing_failed(LIST_FUNCTIONS, &e);
                break;
            }
        };
        for f in page.functions() {
            let Some(name) = f.function_name() else {
                continue;
            };
            functions.push((
                name.to_string(),
                f.runtime().map(|r| r.as_str().to_string()),
                f.function_arn().map(str::to_string),
            ));
        }
        run.progress.listed_more(page.functions().len());
        run.progress.plan_more(page.functions().len());
        marker = page.next_marker().map(str::to_string);
        if marker.is_none() {
            break;
        }
    }
    for batch in functions.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let counts =
            join_in_order(batch.iter().map(|(name, _, _)| versions(run, region, name))).await;
        for ((name, runtime, arn), count) in batch.iter().zip(counts) {
            let version_count = count
                .map_err(|e| out.value_missing(LIST_VERSIONS, "version_count", &e))
                .ok();
            let arn = arn
                .clone()
                .unwrap_or_else(|| run.arn("lambda", region, &format!("function:{name}")));
            let resource = run
                .resource(TYPE, name, Some(region))
                .arn(Some(arn.clone()))
                .property("FunctionName", name.as_str())
                .property("Runtime", runtime.clone())
                .property("Arn", arn);
            out.push(Item::LambdaFunction(LambdaFunction {
                resource,
                function_name: name.clone(),
                runtime: runtime.clone(),
                version_count,
                activity: None,
            }));
        }
        run.progress.items_more(batch.len());
    }
    out
}

/// Published versions of one function (all pages).
async fn versions(run: &CollectorRun, region: &str, function: &str) -> Result<u32, CallError> {
    let client = run.client::<aws_sdk_lambda::Client>(region);
    let mut count = 0u32;
    let mut marker: Option<String> = None;
    let result = loop {
        let page = run
            .call(LIST_VERSIONS, region, || {
                client
                    .list_versions_by_function()
                    .function_name(function)
                    .set_marker(marker.clone())
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => break Err(e),
        };
        count += page
            .versions()
            .iter()
            .filter(|v| v.version() != Some(LATEST))
            .count() as u32;
        marker = page.next_marker().map(str::to_string);
        if marker.is_none() {
            break Ok(count);
        }
    };
    run.progress.done(1);
    result
}
