//! `AWS::EC2::VPC`: VPCs, the default one included, from `DescribeVpcs`
//! (`MaxResults=1000`, following `NextToken`).
//!
//! Properties (CloudFormation's names): `VpcId`, `CidrBlock`, `CidrBlockAssociations`
//! (the IPv4 association ids, as the schema lists them), `Ipv6CidrBlocks`,
//! `InstanceTenancy`. The schema's `EnableDnsSupport`/`EnableDnsHostnames` need a
//! `DescribeVpcAttribute` per VPC and `DefaultNetworkAcl`/`DefaultSecurityGroup` other
//! listings: not read (the default security group is in `AWS::EC2::SecurityGroup`).

use aws_sdk_ec2::types::Vpc;

use super::model::{self, strings, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_VPCS: Operation = operation!("ec2", "DescribeVpcs");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_VPCS, "MaxResults=1000")];

page!(
    aws_sdk_ec2::operation::describe_vpcs::DescribeVpcsOutput,
    vpcs,
    paginated
);

/// Every VPC of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_vpcs()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(run, DESCRIBE_VPCS, region, send, |p| p.vpcs(), item).await
}

fn item(run: &CollectorRun, region: &str, v: &Vpc) -> Option<Resource> {
    let id = v.vpc_id()?;
    let arn = model::arn(run, region, v.owner_id(), &format!("vpc/{id}"));
    let resource = model::resource(run, Ec2Type::Vpc, region, id, v.owner_id())
        .arn(Some(arn))
        .tags(model::tags(v.tags()))
        .property("VpcId", id)
        .property("CidrBlock", v.cidr_block())
        .property(
            "CidrBlockAssociations",
            strings(
                v.cidr_block_association_set()
                    .iter()
                    .filter_map(|a| a.association_id()),
            ),
        )
        .property(
            "Ipv6CidrBlocks",
            strings(
                v.ipv6_cidr_block_association_set()
                    .iter()
                    .filter_map(|a| a.ipv6_cidr_block()),
            ),
        )
        .property("InstanceTenancy", text(v.instance_tenancy()));
    Some(resource)
}
