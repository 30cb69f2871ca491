//! `AWS::ECS::Cluster`: every cluster of the region, from `ListClusters` and
//! `DescribeClusters` (100 a call, with tags).
//!
//! `id` is the cluster's name (CloudFormation's primary identifier), `arn` its ARN.
//! Properties: `ClusterName`, `Arn`, `CapacityProviders` (CloudFormation's names), and
//! `Status`, `RegisteredContainerInstancesCount`, `RunningTasksCount`,
//! `PendingTasksCount`, `ActiveServicesCount` from the answer (an idle cluster is a
//! hygiene finding).

use aws_sdk_ecs::types::{Cluster, ClusterField};

use super::{cluster_arns, resource, tags, LIST_CLUSTERS};
use crate::dataset::ServiceType;
use crate::ec2::model::strings;
use crate::ec2::Call;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_CLUSTERS: Operation = operation!("ecs", "DescribeClusters");

/// Clusters one `DescribeClusters` reads.
const BATCH: usize = 100;

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: LIST_CLUSTERS,
        parameters: "maxResults=100",
        per: "region",
    },
    Call {
        operation: DESCRIBE_CLUSTERS,
        parameters: "clusters=<up to 100>&include=TAGS",
        per: "100 clusters",
    },
];

/// Every cluster of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let arns = cluster_arns(run, region, &mut out).await;
    run.progress.plan_more(arns.len().div_ceil(BATCH));
    let client = run.client::<aws_sdk_ecs::Client>(region);
    for batch in arns.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let answer = run
            .call_item(DESCRIBE_CLUSTERS, region, || {
                client
                    .describe_clusters()
                    .set_clusters(Some(batch.to_vec()))
                    .include(ClusterField::Tags)
                    .send()
            })
            .await;
        match answer {
            Ok(answer) => {
                let before = out.len();
                for c in answer.clusters() {
                    if let Some(r) = item(run, region, c) {
                        out.push(Item::Resource(r));
                    }
                }
                run.progress.items_more(out.len() - before);
            }
            Err(e) => {
                out.listing_failed(DESCRIBE_CLUSTERS, &e);
                break;
            }
        }
    }
    out
}

fn item(run: &CollectorRun, region: &str, c: &Cluster) -> Option<Resource> {
    let name = c.cluster_name()?;
    let arn = c.cluster_arn()?;
    let ty = ServiceType::EcsCluster.resource_type();
    let resource = resource(run, ty, region, name.to_string(), arn)
        .tags(tags(c.tags()))
        .property("ClusterName", name)
        .property("Arn", arn)
        .property(
            "CapacityProviders",
            strings(c.capacity_providers().iter().map(String::as_str)),
        )
        .property("Status", c.status())
        .property(
            "RegisteredContainerInstancesCount",
            c.registered_container_instances_count(),
        )
        .property("RunningTasksCount", c.running_tasks_count())
        .property("PendingTasksCount", c.pending_tasks_count())
        .property("ActiveServicesCount", c.active_services_count());
    Some(resource)
}
