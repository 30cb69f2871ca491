//! ELBv2 (the 2015-12-01 API), natively: application, network and gateway load balancers
//! ([`load_balancers`]), target groups ([`target_groups`]) and the listeners of every load
//! balancer ([`listeners`]), per region, every call on the v2 API's own budget
//! `elasticloadbalancingv2:all-requests` (10/s, seed 000; the classic API's is separate).
//!
//! Listings page with `PageSize=400` and `Marker`. `id` and `arn` are the resource's ARN
//! (CloudFormation's primary identifier of all three). The answers carry no tags: the
//! tagging sweep's merge by ARN brings them.

pub mod listeners;
pub mod load_balancers;
pub mod target_groups;

use aws_sdk_elasticloadbalancingv2::operation::describe_load_balancers::DescribeLoadBalancersOutput;

use crate::ec2::page::Page;
use crate::{operation, CollectorRun, Operation, Resource};

/// The load balancer listing (also the listeners' parents).
pub const DESCRIBE_LOAD_BALANCERS: Operation =
    operation!("elasticloadbalancingv2", "DescribeLoadBalancers");

/// The actions' largest page.
pub const PAGE: i32 = 400;

impl Page for DescribeLoadBalancersOutput {
    fn count(&self) -> usize {
        self.load_balancers().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_marker()
    }
}

/// An ELBv2 item of `resource_type` in `region` identified by its ARN (the account its
/// ARN names, else the scan's).
pub fn resource(run: &CollectorRun, resource_type: &str, region: &str, arn: &str) -> Resource {
    Resource::new(resource_type, arn.to_string())
        .arn(Some(arn.to_string()))
        .account(super::ecs::account_of(arn).or_else(|| run.account()))
        .region(Some(region.to_string()))
}
