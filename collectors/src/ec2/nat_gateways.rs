//! `AWS::EC2::NatGateway`: NAT gateways, from `DescribeNatGateways` (`MaxResults=1000`,
//! following `NextToken`); deleted ones while EC2 still lists them.
//!
//! Properties (CloudFormation's names): `NatGatewayId`, `SubnetId`, `VpcId`,
//! `ConnectivityType`, `AvailabilityMode`, and from its primary address `AllocationId`,
//! `PrivateIpAddress` and `EniId` (the interface); `SecondaryAllocationIds` and
//! `SecondaryPrivateIpAddresses` from the others.

use aws_sdk_ec2::types::{NatGateway, NatGatewayAddress};

use super::model::{self, strings, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_NAT_GATEWAYS: Operation = operation!("ec2", "DescribeNatGateways");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_NAT_GATEWAYS, "MaxResults=1000")];

page!(
    aws_sdk_ec2::operation::describe_nat_gateways::DescribeNatGatewaysOutput,
    nat_gateways,
    paginated
);

/// Every NAT gateway of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_nat_gateways()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_NAT_GATEWAYS,
        region,
        send,
        |p| p.nat_gateways(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, g: &NatGateway) -> Option<Resource> {
    let id = g.nat_gateway_id()?;
    let arn = model::arn(run, region, None, &format!("natgateway/{id}"));
    let addresses = g.nat_gateway_addresses();
    // The primary address: the one EC2 marks, else the first (older answers mark none).
    let primary: Option<&NatGatewayAddress> = addresses
        .iter()
        .find(|a| a.is_primary() == Some(true))
        .or_else(|| addresses.first());
    let secondary = || {
        addresses
            .iter()
            .filter(move |a| primary.is_none_or(|p| !std::ptr::eq(*a, p)))
    };
    let resource = model::resource(run, Ec2Type::NatGateway, region, id, None)
        .arn(Some(arn))
        .tags(model::tags(g.tags()))
        .property("NatGatewayId", id)
        .property("SubnetId", g.subnet_id())
        .property("VpcId", g.vpc_id())
        .property("ConnectivityType", text(g.connectivity_type()))
        .property("AvailabilityMode", text(g.availability_mode()))
        .property("AllocationId", primary.and_then(|a| a.allocation_id()))
        .property("PrivateIpAddress", primary.and_then(|a| a.private_ip()))
        .property("EniId", primary.and_then(|a| a.network_interface_id()))
        .property(
            "SecondaryAllocationIds",
            strings(secondary().filter_map(|a| a.allocation_id())),
        )
        .property(
            "SecondaryPrivateIpAddresses",
            strings(secondary().filter_map(|a| a.private_ip())),
        );
    Some(resource)
}
