//! Seed 000's other services, collected natively (issue 36, item 3): ECS clusters,
//! services and container instances ([`ecs`]), classic load balancers ([`elb`]), v2 load
//! balancers, target groups and listeners ([`elbv2`]), log groups ([`logs`]), trails
//! ([`cloudtrail`]), hosted zones ([`route53`]) and EMR clusters with their instances
//! ([`emr`]); every call through the gate on the budget seed 000 gives it.
//!
//! The budgets (`quota/src/defaults.rs`, `quota/src/key/services.rs`): ECS reads share two
//! groups, `ecs:cluster-resource-read` (clusters, container instances) and
//! `ecs:service-read` (services), 20/s each; each load balancer API one account/region
//! budget, `elasticloadbalancing:all-requests` and `elasticloadbalancingv2:all-requests`,
//! 10/s each; `logs:DescribeLogGroups` 10/s and `logs:DescribeLogStreams` 25/s;
//! `cloudtrail:DescribeTrails` 10/s; Route 53 one global budget with no region in its key,
//! `route53:all-requests`, 5/s burst 5; EMR `DescribeCluster` 1/s and `ListInstances`
//! 0.5/s (its `ListClusters` has the fallback policy, marked unverified). [`calls`] lists
//! every call with its parameters; `tollgate types` shows them.
//!
//! Items use the resource model of every collector: `id` the CloudFormation primary
//! identifier Cloud Control writes (`ServiceArn|Cluster` for an ECS service), `arn` as the
//! Resource Groups Tagging API writes it (so the tagging sweep's tags merge by ARN: the
//! load balancer, log group, trail and hosted zone listings carry no tags of their own),
//! `properties` under the CloudFormation schema's names where it has them, and in the
//! same style for what a cost or hygiene scan needs beyond them (`StoredBytes`,
//! `ResourceRecordSetCount`, `RunningTasksCount`, an EMR cluster's `Instances`).
//!
//! A failed listing fails its type in that region (what was listed stays); a failed read
//! of one parent's children (an ECS cluster's services, a load balancer's listeners, an
//! EMR cluster's instances) keeps the other parents' and says which operation failed.

pub mod cloudtrail;
pub mod ecs;
pub mod elb;
pub mod elbv2;
pub mod emr;
pub mod logs;
pub mod route53;

use crate::dataset::ServiceType;
use crate::ec2::Call;
use crate::output::DatasetReport;
use crate::{CollectorRun, Operation, ReportBuilder};

/// Collect `ty` over every region of the scan (once, in the scan's first region, for
/// Route 53's global hosted zones).
pub async fn collect(run: &CollectorRun, ty: ServiceType) -> DatasetReport {
    if ty == ServiceType::Route53HostedZone {
        let mut out = route53::collect(run).await;
        if run.is_cancelled() {
            out.cancelled();
        }
        return out.finish();
    }
    run.per_region(ty.resource_type(), |run, region| {
        collect_region(run, ty, region)
    })
    .await
}

async fn collect_region(run: &CollectorRun, ty: ServiceType, region: &str) -> ReportBuilder {
    match ty {
        ServiceType::CloudTrailTrail => cloudtrail::collect_region(run, region).await,
        ServiceType::EcsCluster => ecs::clusters::collect_region(run, region).await,
        ServiceType::EcsContainerInstance => {
            ecs::container_instances::collect_region(run, region).await
        }
        ServiceType::EcsService => ecs::services::collect_region(run, region).await,
        ServiceType::EmrCluster => emr::collect_region(run, region).await,
        ServiceType::ElbLoadBalancer => elb::collect_region(run, region).await,
        ServiceType::Elbv2Listener => elbv2::listeners::collect_region(run, region).await,
        ServiceType::Elbv2LoadBalancer => elbv2::load_balancers::collect_region(run, region).await,
        ServiceType::Elbv2TargetGroup => elbv2::target_groups::collect_region(run, region).await,
        ServiceType::LogGroup => logs::collect_region(run, region).await,
        ServiceType::Route53HostedZone => route53::collect(run).await,
    }
}

/// The calls `ty`'s collector makes, in order.
pub fn calls(ty: ServiceType) -> &'static [Call] {
    match ty {
        ServiceType::CloudTrailTrail => cloudtrail::CALLS,
        ServiceType::EcsCluster => ecs::clusters::CALLS,
        ServiceType::EcsContainerInstance => ecs::container_instances::CALLS,
        ServiceType::EcsService => ecs::services::CALLS,
        ServiceType::EmrCluster => emr::CALLS,
        ServiceType::ElbLoadBalancer => elb::CALLS,
        ServiceType::Elbv2Listener => elbv2::listeners::CALLS,
        ServiceType::Elbv2LoadBalancer => elbv2::load_balancers::CALLS,
        ServiceType::Elbv2TargetGroup => elbv2::target_groups::CALLS,
        ServiceType::LogGroup => logs::CALLS,
        ServiceType::Route53HostedZone => route53::CALLS,
    }
}

/// The operations `ty`'s collector may call, deduplicated, in call order.
pub fn operations(ty: ServiceType) -> Vec<Operation> {
    let mut all: Vec<Operation> = Vec::new();
    for call in calls(ty) {
        if !all.contains(&call.operation) {
            all.push(call.operation);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_lands_on_the_budget_seed_000_gives_its_service() {
        let group = |op: Operation| tollgate_quota::operation_group(op.service(), op.name());
        for ty in ServiceType::ALL {
            let calls = calls(ty);
            assert!(!calls.is_empty(), "{ty:?}");
            assert_eq!(
                calls[0].per,
                if ty.is_global() { "account" } else { "region" }
            );
            for call in calls {
                let want = match call.operation.service() {
                    "ecs" if call.operation.name().contains("Service") => "service-read",
                    "ecs" => "cluster-resource-read",
                    "elasticloadbalancing" | "elasticloadbalancingv2" | "route53" => "all-requests",
                    _ => call.operation.name(),
                };
                assert_eq!(group(call.operation), want, "{ty:?}: {}", call.operation);
                assert!(
                    tollgate_quota::defaults::is_known(
                        call.operation.service(),
                        &group(call.operation)
                    ),
                    "{ty:?}: {} has a row in the defaults table",
                    call.operation
                );
            }
        }
    }
}
