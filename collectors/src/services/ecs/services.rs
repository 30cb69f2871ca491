//! `AWS::ECS::Service`: every service of every cluster of the region, from
//! `ListServices` (100 ARNs a page, per cluster) and `DescribeServices` (10 a call, with
//! tags), both on `ecs:service-read`.
//!
//! `id` is `ServiceArn|Cluster` (CloudFormation's primary identifier, the cluster as its
//! ARN), `arn` the service's ARN. Properties: `ServiceArn`, `ServiceName`, `Name`,
//! `Cluster`, `DesiredCount`, `LaunchType`, `TaskDefinition`, `SchedulingStrategy`,
//! `PlatformVersion` (CloudFormation's names), and `Status`, `RunningCount`,
//! `PendingCount`, `CreatedAt` from the answer.

use aws_sdk_ecs::operation::describe_services::DescribeServicesOutput;
use aws_sdk_ecs::operation::list_services::ListServicesOutput;
use aws_sdk_ecs::types::{Service, ServiceField};

use super::{per_cluster, resource, tags, Children, LIST_CLUSTERS};
use crate::dataset::ServiceType;
use crate::ec2::model::{text, time};
use crate::ec2::page::Page;
use crate::ec2::Call;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const LIST_SERVICES: Operation = operation!("ecs", "ListServices");
const DESCRIBE_SERVICES: Operation = operation!("ecs", "DescribeServices");

/// `ListServices`' largest page.
const PAGE: i32 = 100;

/// Services one `DescribeServices` reads (the action's limit).
const BATCH: usize = 10;

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: LIST_CLUSTERS,
        parameters: "maxResults=100",
        per: "region",
    },
    Call {
        operation: LIST_SERVICES,
        parameters: "cluster=<cluster>&maxResults=100",
        per: "cluster",
    },
    Call {
        operation: DESCRIBE_SERVICES,
        parameters: "cluster=<cluster>&services=<up to 10>&include=TAGS",
        per: "10 services",
    },
];

impl Page for ListServicesOutput {
    fn count(&self) -> usize {
        self.service_arns().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_token()
    }
}

/// Every service of every cluster of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ecs::Client>(region);
    let children = Children {
        list: (LIST_SERVICES, |cluster: &str, token| {
            client
                .list_services()
                .cluster(cluster)
                .max_results(PAGE)
                .set_next_token(token)
                .send()
        }),
        describe: (DESCRIBE_SERVICES, BATCH, |cluster: &str, arns| {
            client
                .describe_services()
                .cluster(cluster)
                .set_services(Some(arns))
                .include(ServiceField::Tags)
                .send()
        }),
    };
    per_cluster(
        run,
        region,
        children,
        |page: &ListServicesOutput| page.service_arns(),
        |cluster, answer: &DescribeServicesOutput| {
            let services = answer.services().iter();
            services
                .filter_map(|s| item(run, region, cluster, s))
                .collect()
        },
    )
    .await
}

fn item(run: &CollectorRun, region: &str, cluster: &str, s: &Service) -> Option<Resource> {
    let arn = s.service_arn()?;
    let cluster = s.cluster_arn().unwrap_or(cluster);
    let ty = ServiceType::EcsService.resource_type();
    let resource = resource(run, ty, region, format!("{arn}|{cluster}"), arn)
        .tags(tags(s.tags()))
        .property("ServiceArn", arn)
        .property("ServiceName", s.service_name())
        .property("Name", s.service_name())
        .property("Cluster", cluster)
        .property("DesiredCount", s.desired_count())
        .property("LaunchType", text(s.launch_type()))
        .property("TaskDefinition", s.task_definition())
        .property("SchedulingStrategy", text(s.scheduling_strategy()))
        .property("PlatformVersion", s.platform_version())
        .property("Status", s.status())
        .property("RunningCount", s.running_count())
        .property("PendingCount", s.pending_count())
        .property("CreatedAt", time(s.created_at()));
    Some(resource)
}
