//! EC2, collected natively (issue 33, item 2; transit gateways: issue 36): seventeen types, one file each, every call
//! through the gate on its own action's key, per region.
//!
//! Why natively rather than through the Cloud Control sweep? EC2 is the estate's centre
//! (instances, volumes, networks), its actions are throttled each on its own bucket,
//! and a native listing reads a whole page of 1,000 resources per call where Cloud
//! Control pages 25 and spends the same EC2 quota underneath.
//!
//! Each type's listing is one Describe action per region, paginated with
//! `MaxResults`/`NextToken` wherever the action allows it ([`page`]), so no listing
//! ever reaches the actions' smaller unfiltered budgets (`ec2:<Action>:unfiltered`,
//! which the gate charges to a request sent with neither a filter nor pagination).
//! `DescribeAddresses` and `DescribeKeyPairs` do not paginate: one call each. AMIs add
//! one `DescribeImageAttribute` (`launchPermission`) per image. [`OPERATIONS`] lists
//! every call and its parameters; `tollgate types` shows them.
//!
//! Items use the resource model ([`model`]): `resource_type` the CloudFormation type
//! (`AWS::EC2::Snapshot` and `AWS::EC2::Image` are names in its style), `id` the
//! CloudFormation primary identifier (the EIP's `PublicIp|AllocationId`), `arn` EC2's
//! ARN as the Resource Groups Tagging API writes it (so the tagging sweep's tags merge
//! by ARN), `account` the resource's owner where the answer names one (a subnet shared
//! from another account is that account's), `tags` from the answer's `Tags`, and
//! `properties` under the CloudFormation schema's property names, those Cloud Control
//! would return for the type (the tags are in `tags`, not repeated there).
//!
//! A failed listing fails its type in that region (what was listed stays); a failed
//! launch-permission read leaves that image's `LaunchPermissions` out with a reason.

mod addresses;
mod images;
mod instances;
mod internet_gateways;
mod key_pairs;
mod launch_templates;
pub mod model;
mod nat_gateways;
mod network_interfaces;
pub mod page;
mod route_tables;
mod security_groups;
mod snapshots;
mod subnets;
mod transit_gateway_attachments;
mod transit_gateways;
mod volumes;
mod vpc_endpoints;
mod vpcs;

use crate::dataset::Ec2Type;
use crate::output::DatasetReport;
use crate::{CollectorRun, Operation, ReportBuilder};

/// The telemetry collector of every EC2 call (`Dataset::collector` of the EC2 datasets).
pub const COLLECTOR: &str = "ec2";

/// Collect `ty` over every region of the scan.
pub async fn collect(run: &CollectorRun, ty: Ec2Type) -> DatasetReport {
    run.per_region(ty.resource_type(), |run, region| {
        collect_region(run, ty, region)
    })
    .await
}

async fn collect_region(run: &CollectorRun, ty: Ec2Type, region: &str) -> ReportBuilder {
    match ty {
        Ec2Type::Eip => addresses::collect_region(run, region).await,
        Ec2Type::Image => images::collect_region(run, region).await,
        Ec2Type::Instance => instances::collect_region(run, region).await,
        Ec2Type::InternetGateway => internet_gateways::collect_region(run, region).await,
        Ec2Type::KeyPair => key_pairs::collect_region(run, region).await,
        Ec2Type::LaunchTemplate => launch_templates::collect_region(run, region).await,
        Ec2Type::NatGateway => nat_gateways::collect_region(run, region).await,
        Ec2Type::NetworkInterface => network_interfaces::collect_region(run, region).await,
        Ec2Type::RouteTable => route_tables::collect_region(run, region).await,
        Ec2Type::SecurityGroup => security_groups::collect_region(run, region).await,
        Ec2Type::Snapshot => snapshots::collect_region(run, region).await,
        Ec2Type::Subnet => subnets::collect_region(run, region).await,
        Ec2Type::TransitGateway => transit_gateways::collect_region(run, region).await,
        Ec2Type::TransitGatewayAttachment => {
            transit_gateway_attachments::collect_region(run, region).await
        }
        Ec2Type::Vpc => vpcs::collect_region(run, region).await,
        Ec2Type::VpcEndpoint => vpc_endpoints::collect_region(run, region).await,
        Ec2Type::Volume => volumes::collect_region(run, region).await,
    }
}

/// One EC2 call a collector makes, with the parameters it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The action (its quota key's operation).
    pub operation: Operation,
    /// What it sends besides `NextToken`: `MaxResults=1000`, `Owner.1=self`, ...
    pub parameters: &'static str,
    /// How often: per region (following `NextToken`), or per listed resource.
    pub per: &'static str,
}

/// The calls `ty`'s collector makes, in order.
pub fn calls(ty: Ec2Type) -> &'static [Call] {
    match ty {
        Ec2Type::Eip => addresses::CALLS,
        Ec2Type::Image => images::CALLS,
        Ec2Type::Instance => instances::CALLS,
        Ec2Type::InternetGateway => internet_gateways::CALLS,
        Ec2Type::KeyPair => key_pairs::CALLS,
        Ec2Type::LaunchTemplate => launch_templates::CALLS,
        Ec2Type::NatGateway => nat_gateways::CALLS,
        Ec2Type::NetworkInterface => network_interfaces::CALLS,
        Ec2Type::RouteTable => route_tables::CALLS,
        Ec2Type::SecurityGroup => security_groups::CALLS,
        Ec2Type::Snapshot => snapshots::CALLS,
        Ec2Type::Subnet => subnets::CALLS,
        Ec2Type::TransitGateway => transit_gateways::CALLS,
        Ec2Type::TransitGatewayAttachment => transit_gateway_attachments::CALLS,
        Ec2Type::Vpc => vpcs::CALLS,
        Ec2Type::VpcEndpoint => vpc_endpoints::CALLS,
        Ec2Type::Volume => volumes::CALLS,
    }
}

/// Every EC2 operation any collector calls (the IAM permissions a scan needs:
/// `ec2:Describe*` covers them all), deduplicated, in type order.
pub fn operations() -> Vec<Operation> {
    let mut all: Vec<Operation> = Vec::new();
    for ty in Ec2Type::ALL {
        for call in calls(ty) {
            if !all.contains(&call.operation) {
                all.push(call.operation);
            }
        }
    }
    all
}

/// A per-region listing call.
const fn per_region(operation: Operation, parameters: &'static str) -> Call {
    Call {
        operation,
        parameters,
        per: "region",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listing_paginates_but_the_two_actions_that_cannot_and_none_reaches_the_unfiltered_budget(
    ) {
        for ty in Ec2Type::ALL {
            let calls = calls(ty);
            assert!(!calls.is_empty(), "{ty:?}");
            let listing = calls[0];
            assert_eq!(listing.per, "region", "{ty:?}");
            let unpaginated = ["DescribeAddresses", "DescribeKeyPairs"];
            let paginated = listing.parameters.contains("MaxResults=");
            assert_eq!(
                paginated,
                !unpaginated.contains(&listing.operation.name()),
                "{ty:?}: {}",
                listing.parameters
            );
            for call in calls {
                assert_eq!(call.operation.service(), "ec2");
                let shape = tollgate_quota::RequestShape::from_query(call.parameters);
                assert_eq!(
                    tollgate_quota::read_budget("ec2", call.operation.name(), shape),
                    tollgate_quota::ReadBudget::Action,
                    "{ty:?}: {} {}",
                    call.operation,
                    call.parameters
                );
            }
        }
        assert_eq!(
            operations().len(),
            18,
            "17 listings and DescribeImageAttribute"
        );
    }
}
