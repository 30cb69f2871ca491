//! ECS, natively: clusters ([`clusters`]), their services ([`services`]) and container
//! instances ([`container_instances`]), per region.
//!
//! Every type starts from the region's cluster listing (`ListClusters`, 100 ARNs a page,
//! [`cluster_arns`]), then reads in the largest batches each Describe action takes
//! (clusters and container instances 100, services 10), asking for the tags in the same
//! answer (`include=TAGS`). Cluster and container-instance reads are charged to
//! `ecs:cluster-resource-read`, service reads to `ecs:service-read` (seed 000). Each of
//! the three datasets lists the clusters itself (one call per 100 clusters and region):
//! they run as separate collectors, and sharing the listing would tie their failures
//! together.
//!
//! A Describe answer's `failures` (a resource deleted between the listing and the read)
//! are left out: what is gone is not reported.

pub mod clusters;
pub mod container_instances;
pub mod services;

use std::collections::BTreeMap;
use std::future::Future;

use aws_sdk_ecs::operation::list_clusters::ListClustersOutput;
use aws_sdk_ecs::types::Tag;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::ec2::page::{pages, Page};
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

/// The cluster listing every ECS type starts from.
pub const LIST_CLUSTERS: Operation = operation!("ecs", "ListClusters");

/// `ListClusters`' largest page.
const PAGE: i32 = 100;

impl Page for ListClustersOutput {
    fn count(&self) -> usize {
        self.cluster_arns().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_token()
    }
}

/// Every cluster ARN of `region`; a failed page is recorded in `out` (the ARNs of the
/// pages before it are returned).
pub async fn cluster_arns(
    run: &CollectorRun,
    region: &str,
    out: &mut ReportBuilder,
) -> Vec<String> {
    let client = run.client::<aws_sdk_ecs::Client>(region);
    let send = |token| {
        client
            .list_clusters()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    pages(run, LIST_CLUSTERS, region, out, send)
        .await
        .iter()
        .flat_map(|p| p.cluster_arns().iter().cloned())
        .collect()
}

/// How one cluster's children (services, container instances) are listed and read.
pub struct Children<L, D> {
    /// The listing (`ListServices`) and its sender: `list(cluster, token)`.
    pub list: (Operation, L),
    /// The batched read (`DescribeServices`), its batch size and its sender:
    /// `describe(cluster, arns)`.
    pub describe: (Operation, usize, D),
}

/// Every child of every cluster of `region`, each read answer made items by `items`
/// (`items(cluster, answer)`). The first failed call is recorded in `out` and ends the
/// region's listing (the items read before it stay).
pub async fn per_cluster<L, LFut, LOut, LErr, D, DFut, DOut, DErr>(
    run: &CollectorRun,
    region: &str,
    mut children: Children<L, D>,
    arns: impl Fn(&LOut) -> &[String],
    items: impl Fn(&str, &DOut) -> Vec<Resource>,
) -> ReportBuilder
where
    L: FnMut(&str, Option<String>) -> LFut,
    LFut: Future<Output = Result<LOut, SdkError<LErr, HttpResponse>>>,
    LOut: Page,
    LErr: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    D: FnMut(&str, Vec<String>) -> DFut,
    DFut: Future<Output = Result<DOut, SdkError<DErr, HttpResponse>>>,
    DErr: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let mut out = ReportBuilder::new();
    let (list_op, list) = &mut children.list;
    let (describe_op, batch, describe) = &mut children.describe;
    'clusters: for cluster in cluster_arns(run, region, &mut out).await {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let failed = out.status();
        let listed = pages(run, *list_op, region, &mut out, |t| list(&cluster, t)).await;
        if out.status() != failed {
            break;
        }
        let children: Vec<String> = listed
            .iter()
            .flat_map(|p| arns(p).iter().cloned())
            .collect();
        run.progress.plan_more(children.len().div_ceil(*batch));
        for chunk in children.chunks(*batch) {
            let answer = run
                .call_item(*describe_op, region, || describe(&cluster, chunk.to_vec()))
                .await;
            match answer {
                Ok(answer) => {
                    let read = items(&cluster, &answer);
                    run.progress.items_more(read.len());
                    read.into_iter().for_each(|r| out.push(Item::Resource(r)));
                }
                Err(e) => {
                    out.listing_failed(*describe_op, &e);
                    break 'clusters;
                }
            }
        }
    }
    out
}

/// An answer's tags (ECS writes `key`/`value`).
pub fn tags(tags: &[Tag]) -> BTreeMap<String, String> {
    tags.iter()
        .filter_map(|t| {
            Some((
                t.key()?.to_string(),
                t.value().unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

/// An ECS item of `resource_type` in `region`, identified by `id`, with ARN `arn`.
pub fn resource(
    run: &CollectorRun,
    resource_type: &str,
    region: &str,
    id: String,
    arn: &str,
) -> Resource {
    Resource::new(resource_type, id)
        .arn(Some(arn.to_string()))
        .account(account_of(arn).or_else(|| run.account()))
        .region(Some(region.to_string()))
}

/// The account an ARN names (`arn:aws:ecs:eu-west-1:123456789012:cluster/x`), if any.
pub fn account_of(arn: &str) -> Option<String> {
    arn.split(':')
        .nth(4)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arn_names_its_account_and_an_arn_without_one_names_none() {
        assert_eq!(
            account_of("arn:aws:ecs:eu-west-1:123456789012:cluster/a").as_deref(),
            Some("123456789012")
        );
        assert_eq!(account_of("arn:aws:ecs:eu-west-1::cluster/a"), None);
        assert_eq!(account_of("not-an-arn"), None);
    }
}
