//! `AWS::EC2::Subnet`: subnets, the default VPC's included, from `DescribeSubnets`
//! (`MaxResults=1000`, following `NextToken`). A subnet shared with the account from
//! another (RAM) is listed too, owned by that account.
//!
//! Properties (CloudFormation's names): `SubnetId`, `VpcId`, `CidrBlock`,
//! `AvailabilityZone`, `AvailabilityZoneId`, `MapPublicIpOnLaunch`,
//! `AssignIpv6AddressOnCreation`, `Ipv6CidrBlock` (the first), `Ipv6CidrBlocks`,
//! `Ipv6Native`, `EnableDns64`, `OutpostArn`, `PrivateDnsNameOptionsOnLaunch`
//! (`{HostnameType, EnableResourceNameDnsARecord, EnableResourceNameDnsAAAARecord}`).

use aws_sdk_ec2::types::Subnet;

use super::model::{self, object, strings, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_SUBNETS: Operation = operation!("ec2", "DescribeSubnets");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_SUBNETS, "MaxResults=1000")];

page!(
    aws_sdk_ec2::operation::describe_subnets::DescribeSubnetsOutput,
    subnets,
    paginated
);

/// Every subnet of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_subnets()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(run, DESCRIBE_SUBNETS, region, send, |p| p.subnets(), item).await
}

fn item(run: &CollectorRun, region: &str, s: &Subnet) -> Option<Resource> {
    let id = s.subnet_id()?;
    let arn = s
        .subnet_arn()
        .map(str::to_string)
        .unwrap_or_else(|| model::arn(run, region, s.owner_id(), &format!("subnet/{id}")));
    let ipv6: Vec<&str> = s
        .ipv6_cidr_block_association_set()
        .iter()
        .filter_map(|a| a.ipv6_cidr_block())
        .collect();
    let dns = s.private_dns_name_options_on_launch().map(|o| {
        object([
            ("HostnameType", text(o.hostname_type())),
            (
                "EnableResourceNameDnsARecord",
                o.enable_resource_name_dns_a_record().into(),
            ),
            (
                "EnableResourceNameDnsAAAARecord",
                o.enable_resource_name_dns_aaaa_record().into(),
            ),
        ])
    });
    let resource = model::resource(run, Ec2Type::Subnet, region, id, s.owner_id())
        .arn(Some(arn))
        .tags(model::tags(s.tags()))
        .property("SubnetId", id)
        .property("VpcId", s.vpc_id())
        .property("CidrBlock", s.cidr_block())
        .property("AvailabilityZone", s.availability_zone())
        .property("AvailabilityZoneId", s.availability_zone_id())
        .property("MapPublicIpOnLaunch", s.map_public_ip_on_launch())
        .property(
            "AssignIpv6AddressOnCreation",
            s.assign_ipv6_address_on_creation(),
        )
        .property("Ipv6CidrBlock", ipv6.first().copied())
        .property("Ipv6CidrBlocks", strings(ipv6))
        .property("Ipv6Native", s.ipv6_native())
        .property("EnableDns64", s.enable_dns64())
        .property("OutpostArn", s.outpost_arn())
        .property("PrivateDnsNameOptionsOnLaunch", dns);
    Some(resource)
}
