//! `AWS::ElasticLoadBalancingV2::LoadBalancer`: from `DescribeLoadBalancers`.
//!
//! Properties (CloudFormation's names): `LoadBalancerArn`, `LoadBalancerName`, `DNSName`,
//! `CanonicalHostedZoneID`, `Type`, `Scheme`, `IpAddressType`, `SecurityGroups`,
//! `Subnets` (from the answer's availability zones); and `VpcId`, `State`, `CreatedTime`
//! from the answer.

use aws_sdk_elasticloadbalancingv2::types::LoadBalancer;

use super::{resource, DESCRIBE_LOAD_BALANCERS, PAGE};
use crate::dataset::ServiceType;
use crate::ec2::model::{strings, text, time};
use crate::ec2::page::listing;
use crate::ec2::Call;
use crate::{CollectorRun, ReportBuilder, Resource};

/// What the collector calls.
pub const CALLS: &[Call] = &[Call {
    operation: DESCRIBE_LOAD_BALANCERS,
    parameters: "PageSize=400",
    per: "region",
}];

/// Every v2 load balancer of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_elasticloadbalancingv2::Client>(region);
    let send = |marker| {
        client
            .describe_load_balancers()
            .page_size(PAGE)
            .set_marker(marker)
            .send()
    };
    listing(
        run,
        DESCRIBE_LOAD_BALANCERS,
        region,
        send,
        |p| p.load_balancers(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, lb: &LoadBalancer) -> Option<Resource> {
    let arn = lb.load_balancer_arn()?;
    let ty = ServiceType::Elbv2LoadBalancer.resource_type();
    let zones = lb.availability_zones();
    let resource = resource(run, ty, region, arn)
        .property("LoadBalancerArn", arn)
        .property("LoadBalancerName", lb.load_balancer_name())
        .property("DNSName", lb.dns_name())
        .property("CanonicalHostedZoneID", lb.canonical_hosted_zone_id())
        .property("Type", text(lb.r#type()))
        .property("Scheme", text(lb.scheme()))
        .property("IpAddressType", text(lb.ip_address_type()))
        .property(
            "SecurityGroups",
            strings(lb.security_groups().iter().map(String::as_str)),
        )
        .property(
            "Subnets",
            strings(zones.iter().filter_map(|z| z.subnet_id())),
        )
        .property("VpcId", lb.vpc_id())
        .property("State", text(lb.state().and_then(|s| s.code())))
        .property("CreatedTime", time(lb.created_time()));
    Some(resource)
}
