//! `AWS::ECS::ContainerInstance` (a name in CloudFormation's style: CloudFormation has no
//! such type): the EC2 instances registered to every cluster of the region, from
//! `ListContainerInstances` (100 ARNs a page, per cluster) and
//! `DescribeContainerInstances` (100 a call, with tags), on `ecs:cluster-resource-read`.
//!
//! `id` and `arn` are the container instance's ARN. Properties: `ContainerInstanceArn`,
//! `Cluster` (its ARN), `Ec2InstanceId`, `Status`, `AgentConnected`,
//! `RunningTasksCount`, `PendingTasksCount`, `RegisteredAt` (an instance running no task
//! is a cost finding).

use aws_sdk_ecs::operation::describe_container_instances::DescribeContainerInstancesOutput;
use aws_sdk_ecs::operation::list_container_instances::ListContainerInstancesOutput;
use aws_sdk_ecs::types::{ContainerInstance, ContainerInstanceField};

use super::{per_cluster, resource, tags, Children, LIST_CLUSTERS};
use crate::dataset::ServiceType;
use crate::ec2::model::time;
use crate::ec2::page::Page;
use crate::ec2::Call;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const LIST_CONTAINER_INSTANCES: Operation = operation!("ecs", "ListContainerInstances");
const DESCRIBE_CONTAINER_INSTANCES: Operation = operation!("ecs", "DescribeContainerInstances");

/// `ListContainerInstances`' largest page, and `DescribeContainerInstances`' limit.
const PAGE: i32 = 100;
const BATCH: usize = 100;

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: LIST_CLUSTERS,
        parameters: "maxResults=100",
        per: "region",
    },
    Call {
        operation: LIST_CONTAINER_INSTANCES,
        parameters: "cluster=<cluster>&maxResults=100",
        per: "cluster",
    },
    Call {
        operation: DESCRIBE_CONTAINER_INSTANCES,
        parameters: "cluster=<cluster>&containerInstances=<up to 100>&include=TAGS",
        per: "100 container instances",
    },
];

impl Page for ListContainerInstancesOutput {
    fn count(&self) -> usize {
        self.container_instance_arns().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_token()
    }
}

/// Every container instance of every cluster of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ecs::Client>(region);
    let children = Children {
        list: (LIST_CONTAINER_INSTANCES, |cluster: &str, token| {
            client
                .list_container_instances()
                .cluster(cluster)
                .max_results(PAGE)
                .set_next_token(token)
                .send()
        }),
        describe: (
            DESCRIBE_CONTAINER_INSTANCES,
            BATCH,
            |cluster: &str, arns| {
                client
                    .describe_container_instances()
                    .cluster(cluster)
                    .set_container_instances(Some(arns))
                    .include(ContainerInstanceField::Tags)
                    .send()
            },
        ),
    };
    per_cluster(
        run,
        region,
        children,
        |page: &ListContainerInstancesOutput| page.container_instance_arns(),
        |cluster, answer: &DescribeContainerInstancesOutput| {
            let instances = answer.container_instances().iter();
            instances
                .filter_map(|i| item(run, region, cluster, i))
                .collect()
        },
    )
    .await
}

fn item(
    run: &CollectorRun,
    region: &str,
    cluster: &str,
    i: &ContainerInstance,
) -> Option<Resource> {
    let arn = i.container_instance_arn()?;
    let ty = ServiceType::EcsContainerInstance.resource_type();
    let resource = resource(run, ty, region, arn.to_string(), arn)
        .tags(tags(i.tags()))
        .property("ContainerInstanceArn", arn)
        .property("Cluster", cluster)
        .property("Ec2InstanceId", i.ec2_instance_id())
        .property("Status", i.status())
        .property("AgentConnected", i.agent_connected())
        .property("RunningTasksCount", i.running_tasks_count())
        .property("PendingTasksCount", i.pending_tasks_count())
        .property("RegisteredAt", time(i.registered_at()));
    Some(resource)
}
