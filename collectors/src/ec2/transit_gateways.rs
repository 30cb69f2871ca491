//! `AWS::EC2::TransitGateway`: transit gateways, from `DescribeTransitGateways`
//! (`MaxResults=1000`, following `NextToken`); deleted ones while EC2 still lists them,
//! and gateways another account shares with this one (their `ownerId`'s).
//!
//! Properties (CloudFormation's names): `Id`, `TransitGatewayArn`, `Description`, and
//! from its options `AmazonSideAsn`, `AutoAcceptSharedAttachments`,
//! `DefaultRouteTableAssociation`, `AssociationDefaultRouteTableId`,
//! `DefaultRouteTablePropagation`, `PropagationDefaultRouteTableId`, `VpnEcmpSupport`,
//! `DnsSupport`, `MulticastSupport`, `SecurityGroupReferencingSupport`,
//! `TransitGatewayCidrBlocks`; besides them `State`, `OwnerId` and `CreationTime`. Under
//! `--pricing`, `HourlyPrice`: its attachments' sum, written once the scan's
//! attachments are in (`crate::pricing::apply::gateways`).

use aws_sdk_ec2::types::TransitGateway;

use super::model::{self, strings, text, time};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_TRANSIT_GATEWAYS: Operation = operation!("ec2", "DescribeTransitGateways");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_TRANSIT_GATEWAYS, "MaxResults=1000")];

page!(
    aws_sdk_ec2::operation::describe_transit_gateways::DescribeTransitGatewaysOutput,
    transit_gateways,
    paginated
);

/// Every transit gateway of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_transit_gateways()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_TRANSIT_GATEWAYS,
        region,
        send,
        |p| p.transit_gateways(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, g: &TransitGateway) -> Option<Resource> {
    let id = g.transit_gateway_id()?;
    let owner = g.owner_id();
    let arn = g
        .transit_gateway_arn()
        .map(str::to_string)
        .unwrap_or_else(|| model::arn(run, region, owner, &format!("transit-gateway/{id}")));
    let o = g.options();
    let resource = model::resource(run, Ec2Type::TransitGateway, region, id, owner)
        .arn(Some(arn.clone()))
        .tags(model::tags(g.tags()))
        .property("Id", id)
        .property("TransitGatewayArn", arn)
        .property("Description", g.description())
        .property("State", text(g.state()))
        .property("OwnerId", owner)
        .property("CreationTime", time(g.creation_time()))
        .property("AmazonSideAsn", o.and_then(|o| o.amazon_side_asn()))
        .property(
            "AutoAcceptSharedAttachments",
            text(o.and_then(|o| o.auto_accept_shared_attachments())),
        )
        .property(
            "DefaultRouteTableAssociation",
            text(o.and_then(|o| o.default_route_table_association())),
        )
        .property(
            "AssociationDefaultRouteTableId",
            o.and_then(|o| o.association_default_route_table_id()),
        )
        .property(
            "DefaultRouteTablePropagation",
            text(o.and_then(|o| o.default_route_table_propagation())),
        )
        .property(
            "PropagationDefaultRouteTableId",
            o.and_then(|o| o.propagation_default_route_table_id()),
        )
        .property("VpnEcmpSupport", text(o.and_then(|o| o.vpn_ecmp_support())))
        .property("DnsSupport", text(o.and_then(|o| o.dns_support())))
        .property(
            "MulticastSupport",
            text(o.and_then(|o| o.multicast_support())),
        )
        .property(
            "SecurityGroupReferencingSupport",
            text(o.and_then(|o| o.security_group_referencing_support())),
        )
        .property(
            "TransitGatewayCidrBlocks",
            strings(
                o.map(|o| o.transit_gateway_cidr_blocks())
                    .unwrap_or_default()
                    .iter()
                    .map(String::as_str),
            ),
        );
    Some(resource)
}
