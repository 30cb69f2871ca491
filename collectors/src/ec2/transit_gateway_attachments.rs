//! `AWS::EC2::TransitGatewayAttachment`: every attachment of a transit gateway, of
//! every kind (VPC, VPN, Direct Connect gateway, Connect, peering, network function),
//! from `DescribeTransitGatewayAttachments` (`MaxResults=1000`, following `NextToken`).
//! CloudFormation's type of that name is the VPC attachment; this one holds every kind
//! under the same identifier (`Id`, the `tgw-attach-` id), `ResourceType` saying which.
//!
//! Properties: `Id`, `TransitGatewayId`, `TransitGatewayOwnerId`, `ResourceType`,
//! `ResourceId`, `ResourceOwnerId`, `VpcId` (a VPC attachment's VPC, CloudFormation's
//! name), `State`, `TransitGatewayRouteTableId` (its association's) and
//! `CreationTime`. Under `--pricing`, `HourlyPrice`: its kind's attachment-hour price
//! in its region from the public price list (`crate::pricing`), `null` with a reason
//! when the list cannot be read.

use aws_sdk_ec2::types::TransitGatewayAttachment;

use super::model::{self, text, time};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, pricing, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_TRANSIT_GATEWAY_ATTACHMENTS: Operation =
    operation!("ec2", "DescribeTransitGatewayAttachments");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(
    DESCRIBE_TRANSIT_GATEWAY_ATTACHMENTS,
    "MaxResults=1000",
)];

page!(
    aws_sdk_ec2::operation::describe_transit_gateway_attachments::DescribeTransitGatewayAttachmentsOutput,
    transit_gateway_attachments,
    paginated
);

/// Every transit gateway attachment of `region`, priced under `--pricing`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_transit_gateway_attachments()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    let mut out = listing(
        run,
        DESCRIBE_TRANSIT_GATEWAY_ATTACHMENTS,
        region,
        send,
        |p| p.transit_gateway_attachments(),
        item,
    )
    .await;
    pricing::apply::attachments(run, region, &mut out).await;
    out
}

fn item(run: &CollectorRun, region: &str, a: &TransitGatewayAttachment) -> Option<Resource> {
    let id = a.transit_gateway_attachment_id()?;
    let arn = model::arn(
        run,
        region,
        None,
        &format!("transit-gateway-attachment/{id}"),
    );
    let kind = a.resource_type().map(|t| t.as_str());
    let vpc = match kind {
        Some("vpc") => a.resource_id(),
        _ => None,
    };
    let resource = model::resource(run, Ec2Type::TransitGatewayAttachment, region, id, None)
        .arn(Some(arn))
        .tags(model::tags(a.tags()))
        .property("Id", id)
        .property("TransitGatewayId", a.transit_gateway_id())
        .property("TransitGatewayOwnerId", a.transit_gateway_owner_id())
        .property("ResourceType", kind)
        .property("ResourceId", a.resource_id())
        .property("ResourceOwnerId", a.resource_owner_id())
        .property("VpcId", vpc)
        .property("State", text(a.state()))
        .property(
            "TransitGatewayRouteTableId",
            a.association()
                .and_then(|s| s.transit_gateway_route_table_id()),
        )
        .property("CreationTime", time(a.creation_time()));
    Some(resource)
}
