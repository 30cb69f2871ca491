//! `kms-keys`: every key per region with its manager, state and last use.
//!
//! ListKeys (paginated by marker) per region, then per key DescribeKey and
//! GetKeyLastUsage in parallel, [`BATCH`] keys at a time. `last_used_at` is the last
//! successful cryptographic use KMS recorded; `null` either because the key was not used
//! since tracking began (no reason entry) or because the read failed (a reason entry says
//! why: access denied, an endpoint without the operation, throttling).

use crate::join::join_in_order;

use crate::operation;
use crate::output::{format_date_time, DatasetReport, Item, KmsKey};
use crate::{CollectorRun, Operation, ReportBuilder};

/// Keys described at once.
pub const BATCH: usize = 10;

/// The resource type of the items.
pub const TYPE: &str = crate::dataset::Dataset::KmsKeys.native_type();

const LIST_KEYS: Operation = operation!("kms", "ListKeys");
const DESCRIBE_KEY: Operation = operation!("kms", "DescribeKey");
const GET_KEY_LAST_USAGE: Operation = operation!("kms", "GetKeyLastUsage");

/// Every operation the collector calls (`tollgate types`).
pub const OPERATIONS: &[Operation] = &[LIST_KEYS, DESCRIBE_KEY, GET_KEY_LAST_USAGE];

/// Collect the dataset over every region of the scan.
pub async fn collect(run: &CollectorRun) -> DatasetReport {
    run.per_region(TYPE, collect_region).await
}

async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_kms::Client>(region);
    let mut keys = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = run
            .call(LIST_KEYS, region, || {
                client.list_keys().set_marker(marker.clone()).send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.listing_failed(LIST_KEYS, &e);
                break;
            }
        };
        let ids: Vec<(String, Option<String>)> = page
            .keys()
            .iter()
            .filter_map(|k| {
                k.key_id()
                    .map(|id| (id.to_string(), k.key_arn().map(str::to_string)))
            })
            .collect();
        run.progress.listed_more(ids.len());
        run.progress.plan_more(2 * ids.len());
        keys.extend(ids);
        marker = page
            .next_marker()
            .filter(|_| page.truncated())
            .map(str::to_string);
        if marker.is_none() {
            break;
        }
    }
    for batch in keys.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let described = join_in_order(batch.iter().map(|id| describe(run, region, &id.0))).await;
        let before = out.len();
        for ((id, arn), (metadata, usage)) in batch.iter().zip(described) {
            let (key_manager, key_state) = match metadata {
                Ok(answer) => {
                    let meta = answer.key_metadata();
                    (
                        meta.and_then(|m| m.key_manager())
                            .map(|m| m.as_str().to_string()),
                        meta.and_then(|m| m.key_state())
                            .map(|s| s.as_str().to_string()),
                    )
                }
                Err(e) if e.code() == Some("NotFoundException") => continue,
                Err(e) => {
                    out.value_missing(DESCRIBE_KEY, "key_manager, key_state", &e);
                    (None, None)
                }
            };
            let last_used_at = match usage {
                Ok(answer) => answer
                    .key_last_usage()
                    .and_then(|u| u.timestamp())
                    .map(format_date_time),
                Err(e) => {
                    out.value_missing(GET_KEY_LAST_USAGE, "last_used_at", &e);
                    None
                }
            };
            let arn = arn
                .clone()
                .unwrap_or_else(|| run.arn("kms", region, &format!("key/{id}")));
            let resource = run
                .resource(TYPE, id, Some(region))
                .arn(Some(arn.clone()))
                .property("KeyId", id.as_str())
                .property("Arn", arn);
            out.push(Item::KmsKey(KmsKey {
                resource,
                key_id: id.clone(),
                key_manager,
                key_state,
                last_used_at,
            }));
        }
        run.progress.items_more(out.len() - before);
    }
    out
}

type Described = (
    Result<
        aws_sdk_kms::operation::describe_key::DescribeKeyOutput,
        tollgate_engine::aws::CallError,
    >,
    Result<
        aws_sdk_kms::operation::get_key_last_usage::GetKeyLastUsageOutput,
        tollgate_engine::aws::CallError,
    >,
);

/// DescribeKey and GetKeyLastUsage for one key, in parallel.
async fn describe(run: &CollectorRun, region: &str, key_id: &str) -> Described {
    let client = run.client::<aws_sdk_kms::Client>(region);
    let metadata = run.call_item(DESCRIBE_KEY, region, || {
        client.describe_key().key_id(key_id).send()
    });
    let usage = run.call_item(GET_KEY_LAST_USAGE, region, || {
        client.get_key_last_usage().key_id(key_id).send()
    });
    futures_util::future::join(metadata, usage).await
}
