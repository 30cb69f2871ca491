//! `dynamodb-tables`: every table per region with its billing mode and item count.
//!
//! ListTables (paginated by `LastEvaluatedTableName`) per region, then DescribeTable per
//! table, [`BATCH`] at a time. A table without a billing mode summary was created before
//! on-demand capacity existed and is `PROVISIONED`. A table deleted between the listing
//! and its description (`ResourceNotFoundException`) is left out: it no longer exists.

use crate::join::join_in_order;

use crate::operation;
use crate::output::{DatasetReport, DynamoDbTable, Item};
use crate::{CollectorRun, Operation, ReportBuilder};

/// The resource type of the items.
pub const TYPE: &str = crate::dataset::Dataset::DynamoDbTables.native_type();

/// Tables described at once.
pub const BATCH: usize = 10;

const LIST_TABLES: Operation = operation!("dynamodb", "ListTables");
const DESCRIBE_TABLE: Operation = operation!("dynamodb", "DescribeTable");

/// Every operation the collector calls (`tollgate types`).
pub const OPERATIONS: &[Operation] = &[LIST_TABLES, DESCRIBE_TABLE];

/// The billing mode of tables that predate on-demand capacity.
const DEFAULT_BILLING_MODE: &str = "PROVISIONED";

/// Collect the dataset over every region of the scan.
pub async fn collect(run: &CollectorRun) -> DatasetReport {
    run.per_region(TYPE, collect_region).await
}

async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_dynamodb::Client>(region);
    let mut tables = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let page = run
            .call(LIST_TABLES, region, || {
                client
                    .list_tables()
                    .set_exclusive_start_table_name(start.clone())
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.listing_failed(LIST_TABLES, &e);
                break;
            }
        };
        tables.extend(page.table_names().iter().cloned());
        run.progress.listed_more(page.table_names().len());
        run.progress.plan_more(page.table_names().len());
        start = page.last_evaluated_table_name().map(str::to_string);
        if start.is_none() {
            break;
        }
    }
    for batch in tables.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let client = &client;
        let described = join_in_order(batch.iter().map(|name| async move {
            let answer = run
                .call_item(DESCRIBE_TABLE, region, || {
                    client.describe_table().table_name(name).send()
                })
                .await;
            answer
        }))
        .await;
        let before = out.len();
        for (name, answer) in batch.iter().zip(described) {
            let (billing_mode, item_count, arn) = match answer {
                Ok(answer) => {
                    let table = answer.table();
                    let arn = table.and_then(|t| t.table_arn()).map(str::to_string);
                    let billing_mode = table.map(|t| {
                        t.billing_mode_summary()
                            .and_then(|s| s.billing_mode())
                            .map(|m| m.as_str().to_string())
                            .unwrap_or_else(|| DEFAULT_BILLING_MODE.to_string())
                    });
                    (billing_mode, table.and_then(|t| t.item_count()), arn)
                }
                Err(e) if e.code() == Some("ResourceNotFoundException") => continue,
                Err(e) => {
                    out.value_missing(DESCRIBE_TABLE, "billing_mode, item_count", &e);
                    (None, None, None)
                }
            };
            let arn = arn.unwrap_or_else(|| run.arn("dynamodb", region, &format!("table/{name}")));
            let resource = run
                .resource(TYPE, name, Some(region))
                .arn(Some(arn.clone()))
                .property("TableName", name.as_str())
                .property("BillingMode", billing_mode.clone())
                .property("Arn", arn);
            out.push(Item::DynamoDbTable(DynamoDbTable {
                resource,
                table_name: name.clone(),
                billing_mode,
                item_count,
                activity: None,
            }));
        }
        run.progress.items_more(out.len() - before);
    }
    out
}
