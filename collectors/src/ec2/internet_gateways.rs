//! `AWS::EC2::InternetGateway`: internet gateways, from `DescribeInternetGateways`
//! (`MaxResults=1000`, following `NextToken`).
//!
//! CloudFormation's schema has only `InternetGatewayId` (and its tags): which VPC a
//! gateway is attached to is `AWS::EC2::VPCGatewayAttachment`, a type of its own, so
//! the item carries the id alone.

use aws_sdk_ec2::operation::describe_internet_gateways::DescribeInternetGatewaysOutput;
use aws_sdk_ec2::types::InternetGateway;

use super::model;
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_INTERNET_GATEWAYS: Operation = operation!("ec2", "DescribeInternetGateways");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_INTERNET_GATEWAYS, "MaxResults=1000")];

page!(DescribeInternetGatewaysOutput, internet_gateways, paginated);

/// Every internet gateway of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_internet_gateways()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_INTERNET_GATEWAYS,
        region,
        send,
        DescribeInternetGatewaysOutput::internet_gateways,
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, g: &InternetGateway) -> Option<Resource> {
    let id = g.internet_gateway_id()?;
    let arn = model::arn(run, region, g.owner_id(), &format!("internet-gateway/{id}"));
    let resource = model::resource(run, Ec2Type::InternetGateway, region, id, g.owner_id())
        .arn(Some(arn))
        .tags(model::tags(g.tags()))
        .property("InternetGatewayId", id);
    Some(resource)
}
