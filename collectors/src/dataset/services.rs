//! `ServiceType`: the types of seed 000's datasets beyond the first four and EC2 (issue
//! 36, item 3), collected natively: ECS, the two load balancer APIs, CloudWatch Logs,
//! CloudTrail, Route 53 and EMR, named once, in the order the report lists them.
//!
//! Natively rather than through the Cloud Control sweep because seed 000's budgets name
//! these services' own operations (`ecs:service-read`, `emr:ListInstances`, ...), and
//! Cloud Control cannot call some of them at all (`DescribeLogStreams`, EMR's
//! `ListInstances`). The types Cloud Control also has keep its primary identifier as `id`
//! and its property names, so an item does not change shape (nor churn the inventory's
//! history) when its type moved from the sweep to a native collector.
//! `AWS::ECS::ContainerInstance` is not a CloudFormation type: a name in the same style
//! ([`crate::types::NOT_CLOUDFORMATION`]).

/// One natively collected type of seed 000's services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServiceType {
    /// `AWS::CloudTrail::Trail`: trails whose home region is the listed one.
    CloudTrailTrail,
    /// `AWS::ECS::Cluster`.
    EcsCluster,
    /// `AWS::ECS::ContainerInstance`: the EC2 instances registered to a cluster.
    EcsContainerInstance,
    /// `AWS::ECS::Service`.
    EcsService,
    /// `AWS::EMR::Cluster`: clusters not yet terminated, with their instances.
    EmrCluster,
    /// `AWS::ElasticLoadBalancing::LoadBalancer`: classic load balancers.
    ElbLoadBalancer,
    /// `AWS::ElasticLoadBalancingV2::Listener`: the listeners of every v2 load balancer.
    Elbv2Listener,
    /// `AWS::ElasticLoadBalancingV2::LoadBalancer`: application, network and gateway
    /// load balancers.
    Elbv2LoadBalancer,
    /// `AWS::ElasticLoadBalancingV2::TargetGroup`.
    Elbv2TargetGroup,
    /// `AWS::Logs::LogGroup`, with stored bytes and retention.
    LogGroup,
    /// `AWS::Route53::HostedZone`, with its record count: global.
    Route53HostedZone,
}

impl ServiceType {
    /// Every one, sorted by type name (the order of the variants).
    pub const ALL: [ServiceType; 11] = [
        ServiceType::CloudTrailTrail,
        ServiceType::EcsCluster,
        ServiceType::EcsContainerInstance,
        ServiceType::EcsService,
        ServiceType::EmrCluster,
        ServiceType::ElbLoadBalancer,
        ServiceType::Elbv2Listener,
        ServiceType::Elbv2LoadBalancer,
        ServiceType::Elbv2TargetGroup,
        ServiceType::LogGroup,
        ServiceType::Route53HostedZone,
    ];

    /// The type name of its items (`AWS::ECS::Cluster`).
    pub const fn resource_type(self) -> &'static str {
        match self {
            ServiceType::CloudTrailTrail => "AWS::CloudTrail::Trail",
            ServiceType::EcsCluster => "AWS::ECS::Cluster",
            ServiceType::EcsContainerInstance => "AWS::ECS::ContainerInstance",
            ServiceType::EcsService => "AWS::ECS::Service",
            ServiceType::EmrCluster => "AWS::EMR::Cluster",
            ServiceType::ElbLoadBalancer => "AWS::ElasticLoadBalancing::LoadBalancer",
            ServiceType::Elbv2Listener => "AWS::ElasticLoadBalancingV2::Listener",
            ServiceType::Elbv2LoadBalancer => "AWS::ElasticLoadBalancingV2::LoadBalancer",
            ServiceType::Elbv2TargetGroup => "AWS::ElasticLoadBalancingV2::TargetGroup",
            ServiceType::LogGroup => "AWS::Logs::LogGroup",
            ServiceType::Route53HostedZone => "AWS::Route53::HostedZone",
        }
    }

    /// The telemetry collector of its calls (the service's SDK name).
    pub const fn collector(self) -> &'static str {
        match self {
            ServiceType::CloudTrailTrail => "cloudtrail",
            ServiceType::EcsCluster
            | ServiceType::EcsContainerInstance
            | ServiceType::EcsService => "ecs",
            ServiceType::EmrCluster => "emr",
            ServiceType::ElbLoadBalancer => "elb",
            ServiceType::Elbv2Listener
            | ServiceType::Elbv2LoadBalancer
            | ServiceType::Elbv2TargetGroup => "elbv2",
            ServiceType::LogGroup => "logs",
            ServiceType::Route53HostedZone => "route53",
        }
    }

    /// Whether its items are global (listed once per account, region `global`, quota key
    /// without a region).
    pub const fn is_global(self) -> bool {
        matches!(self, ServiceType::Route53HostedZone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_holds_every_type_once_sorted_by_name_as_the_variants_are() {
        let names: Vec<&str> = ServiceType::ALL.iter().map(|t| t.resource_type()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        let mut variants = ServiceType::ALL;
        variants.sort();
        assert_eq!(variants, ServiceType::ALL);
        assert_eq!(
            ServiceType::ALL.iter().filter(|t| t.is_global()).count(),
            1,
            "Route 53 only"
        );
    }
}
