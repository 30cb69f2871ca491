//! `AWS::EC2::RouteTable`: route tables, the VPCs' main ones included, from
//! `DescribeRouteTables` (`MaxResults=100`, its largest page, following `NextToken`).
//!
//! CloudFormation's schema has `RouteTableId` and `VpcId` (and its tags): routes and
//! subnet associations are types of their own (`AWS::EC2::Route`,
//! `AWS::EC2::SubnetRouteTableAssociation`), so the item carries those two.

use aws_sdk_ec2::types::RouteTable;

use super::model;
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_ROUTE_TABLES: Operation = operation!("ec2", "DescribeRouteTables");

/// The action's largest page.
const PAGE: i32 = 100;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_ROUTE_TABLES, "MaxResults=100")];

page!(
    aws_sdk_ec2::operation::describe_route_tables::DescribeRouteTablesOutput,
    route_tables,
    paginated
);

/// Every route table of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_route_tables()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_ROUTE_TABLES,
        region,
        send,
        |p| p.route_tables(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, t: &RouteTable) -> Option<Resource> {
    let id = t.route_table_id()?;
    let arn = model::arn(run, region, t.owner_id(), &format!("route-table/{id}"));
    let resource = model::resource(run, Ec2Type::RouteTable, region, id, t.owner_id())
        .arn(Some(arn))
        .tags(model::tags(t.tags()))
        .property("RouteTableId", id)
        .property("VpcId", t.vpc_id());
    Some(resource)
}
