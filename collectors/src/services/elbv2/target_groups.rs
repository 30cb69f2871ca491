//! `AWS::ElasticLoadBalancingV2::TargetGroup`: from `DescribeTargetGroups`.
//!
//! Properties (CloudFormation's names): `TargetGroupArn`, `TargetGroupName`, `Protocol`,
//! `Port`, `VpcId`, `TargetType`, `LoadBalancerArns` (none: a target group no load
//! balancer uses), `HealthCheckProtocol`, `HealthCheckPath`, `HealthCheckEnabled`.

use aws_sdk_elasticloadbalancingv2::operation::describe_target_groups::DescribeTargetGroupsOutput;
use aws_sdk_elasticloadbalancingv2::types::TargetGroup;
use serde_json::Value;

use super::{resource, PAGE};
use crate::dataset::ServiceType;
use crate::ec2::model::text;
use crate::ec2::page::{listing, Page};
use crate::ec2::Call;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_TARGET_GROUPS: Operation =
    operation!("elasticloadbalancingv2", "DescribeTargetGroups");

/// What the collector calls.
pub const CALLS: &[Call] = &[Call {
    operation: DESCRIBE_TARGET_GROUPS,
    parameters: "PageSize=400",
    per: "region",
}];

impl Page for DescribeTargetGroupsOutput {
    fn count(&self) -> usize {
        self.target_groups().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_marker()
    }
}

/// Every target group of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_elasticloadbalancingv2::Client>(region);
    let send = |marker| {
        client
            .describe_target_groups()
            .page_size(PAGE)
            .set_marker(marker)
            .send()
    };
    listing(
        run,
        DESCRIBE_TARGET_GROUPS,
        region,
        send,
        |p| p.target_groups(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, tg: &TargetGroup) -> Option<Resource> {
    let arn = tg.target_group_arn()?;
    let ty = ServiceType::Elbv2TargetGroup.resource_type();
    let lbs = tg
        .load_balancer_arns()
        .iter()
        .map(|a| Value::from(a.as_str()));
    let resource = resource(run, ty, region, arn)
        .property("TargetGroupArn", arn)
        .property("TargetGroupName", tg.target_group_name())
        .property("Protocol", text(tg.protocol()))
        .property("Port", tg.port())
        .property("VpcId", tg.vpc_id())
        .property("TargetType", text(tg.target_type()))
        .property("LoadBalancerArns", Value::Array(lbs.collect()))
        .property("HealthCheckProtocol", text(tg.health_check_protocol()))
        .property("HealthCheckPath", tg.health_check_path())
        .property("HealthCheckEnabled", tg.health_check_enabled());
    Some(resource)
}
