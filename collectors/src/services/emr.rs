//! `AWS::EMR::Cluster`: the clusters of the region not yet terminated, with their
//! instances, from `ListClusters` (`ClusterStates` = starting, bootstrapping, running,
//! waiting, terminating; following `Marker`), then per cluster one `DescribeCluster` and
//! every page of `ListInstances`, each on its own budget: `emr:DescribeCluster` 1/s and
//! `emr:ListInstances` 0.5/s (seed 000), `emr:ListClusters` the fallback's (unverified).
//!
//! Why only live clusters: EMR keeps terminated clusters listable for two months; they
//! cost nothing and are not resources any more. Clusters are read one after the other:
//! the budgets, not the latency, bound the pace (a region with 10 clusters takes about
//! 20 s at 0.5 `ListInstances` a second).
//!
//! `id` is the cluster's id (`j-...`), `arn` its ARN. Properties: `Id`, `Name`,
//! `ReleaseLabel`, `Applications`, `LogUri`, `ServiceRole`, `MasterPublicDNS` (from
//! `DescribeCluster`; CloudFormation's names), `State`, `NormalizedInstanceHours`,
//! `AutoTerminate`, `TerminationProtected`, and `Instances` (each `Id`,
//! `Ec2InstanceId`, `InstanceType`, `Market`, `State`, `InstanceGroupId`). A failed
//! `DescribeCluster` keeps the listing's fields and says so; a failed `ListInstances`
//! leaves `Instances` out with a reason.

use aws_sdk_emr::operation::list_clusters::ListClustersOutput;
use aws_sdk_emr::operation::list_instances::ListInstancesOutput;
use aws_sdk_emr::types::{Cluster, ClusterState, ClusterSummary, Instance};
use serde_json::Value;
use tollgate_engine::aws::CallError;

use crate::dataset::ServiceType;
use crate::ec2::model::{list_or_null, object, text};
use crate::ec2::page::{pages, Page};
use crate::ec2::Call;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const LIST_CLUSTERS: Operation = operation!("emr", "ListClusters");
const DESCRIBE_CLUSTER: Operation = operation!("emr", "DescribeCluster");
const LIST_INSTANCES: Operation = operation!("emr", "ListInstances");

/// The states of a cluster that still exists.
const LIVE: [ClusterState; 5] = [
    ClusterState::Starting,
    ClusterState::Bootstrapping,
    ClusterState::Running,
    ClusterState::Waiting,
    ClusterState::Terminating,
];

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: LIST_CLUSTERS,
        parameters: "ClusterStates=STARTING,BOOTSTRAPPING,RUNNING,WAITING,TERMINATING",
        per: "region",
    },
    Call {
        operation: DESCRIBE_CLUSTER,
        parameters: "ClusterId=<cluster>",
        per: "cluster",
    },
    Call {
        operation: LIST_INSTANCES,
        parameters: "ClusterId=<cluster>",
        per: "cluster",
    },
];

impl Page for ListClustersOutput {
    fn count(&self) -> usize {
        self.clusters().len()
    }
    fn next(&self) -> Option<&str> {
        self.marker()
    }
}

impl Page for ListInstancesOutput {
    fn count(&self) -> usize {
        self.instances().len()
    }
    fn next(&self) -> Option<&str> {
        self.marker()
    }
}

/// Every live cluster of `region`, described, with its instances.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_emr::Client>(region);
    let send = |marker| {
        client
            .list_clusters()
            .set_cluster_states(Some(LIVE.to_vec()))
            .set_marker(marker)
            .send()
    };
    let listed = pages(run, LIST_CLUSTERS, region, &mut out, send).await;
    let clusters: Vec<&ClusterSummary> = listed.iter().flat_map(|p| p.clusters()).collect();
    run.progress.plan_more(clusters.len());
    for summary in clusters {
        let Some(id) = summary.id() else { continue };
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let described = match describe(run, region, id).await {
            Ok(cluster) => cluster,
            Err(e) => {
                out.value_missing(DESCRIBE_CLUSTER, "properties.ReleaseLabel", &e);
                None
            }
        };
        let instances = match instances(run, region, id, &mut out).await {
            Some(list) => list,
            None => Value::Null,
        };
        run.progress.done(1);
        out.push(Item::Resource(item(
            run,
            region,
            summary,
            described.as_ref(),
            instances,
        )));
        run.progress.items_more(1);
    }
    out
}

/// One cluster as `DescribeCluster` answers it (`None`: gone since the listing).
async fn describe(
    run: &CollectorRun,
    region: &str,
    id: &str,
) -> Result<Option<Cluster>, CallError> {
    let client = run.client::<aws_sdk_emr::Client>(region);
    let answer = run
        .call(DESCRIBE_CLUSTER, region, || {
            client.describe_cluster().cluster_id(id).send()
        })
        .await?;
    Ok(answer.cluster().cloned())
}

/// Every instance of cluster `id` (`None`: a page failed, recorded in `out` as a missing
/// value).
async fn instances(
    run: &CollectorRun,
    region: &str,
    id: &str,
    out: &mut ReportBuilder,
) -> Option<Value> {
    let client = run.client::<aws_sdk_emr::Client>(region);
    let mut token: Option<String> = None;
    let mut list = Vec::new();
    loop {
        let sent = token.clone();
        let page = run
            .call(LIST_INSTANCES, region, || {
                client
                    .list_instances()
                    .cluster_id(id)
                    .set_marker(sent.clone())
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.value_missing(LIST_INSTANCES, "properties.Instances", &e);
                return None;
            }
        };
        list.extend(page.instances().iter().map(instance));
        let next = page.next().filter(|t| !t.is_empty()).map(str::to_string);
        if next.is_none() || next == token {
            return Some(Value::Array(list));
        }
        token = next;
    }
}

/// One instance of a cluster.
fn instance(i: &Instance) -> Value {
    object([
        ("Id", i.id().into()),
        ("Ec2InstanceId", i.ec2_instance_id().into()),
        ("InstanceType", i.instance_type().into()),
        ("Market", text(i.market())),
        ("State", text(i.status().and_then(|s| s.state()))),
        ("InstanceGroupId", i.instance_group_id().into()),
    ])
}

fn item(
    run: &CollectorRun,
    region: &str,
    summary: &ClusterSummary,
    described: Option<&Cluster>,
    instances: Value,
) -> Resource {
    let id = summary.id().unwrap_or_default();
    let ty = ServiceType::EmrCluster.resource_type();
    let arn = summary.cluster_arn().map(str::to_string);
    let account = arn.as_deref().and_then(super::ecs::account_of);
    let state = summary.status().and_then(|s| s.state());
    let mut resource = run
        .resource(ty, id, Some(region))
        .account(account.or_else(|| run.account()))
        .arn(arn)
        .property("Id", id)
        .property("Name", summary.name())
        .property("State", text(state))
        .property(
            "NormalizedInstanceHours",
            summary.normalized_instance_hours(),
        )
        .property("Instances", instances);
    if let Some(c) = described {
        let applications: Vec<Value> = c
            .applications()
            .iter()
            .map(|a| object([("Name", a.name().into()), ("Version", a.version().into())]))
            .collect();
        resource = resource
            .tags(
                c.tags()
                    .iter()
                    .filter_map(|t| {
                        Some((
                            t.key()?.to_string(),
                            t.value().unwrap_or_default().to_string(),
                        ))
                    })
                    .collect(),
            )
            .property("ReleaseLabel", c.release_label())
            .property("Applications", list_or_null(applications))
            .property("LogUri", c.log_uri())
            .property("ServiceRole", c.service_role())
            .property("MasterPublicDNS", c.master_public_dns_name())
            .property("AutoTerminate", c.auto_terminate())
            .property("TerminationProtected", c.termination_protected());
    }
    resource
}
