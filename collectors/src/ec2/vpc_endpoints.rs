//! `AWS::EC2::VPCEndpoint`: VPC endpoints, from `DescribeVpcEndpoints`
//! (`MaxResults=1000`, following `NextToken`).
//!
//! Properties (CloudFormation's names): `Id` (the endpoint id, the primary
//! identifier), `VpcId`, `ServiceName`, `VpcEndpointType`, `PolicyDocument` (the
//! policy's JSON text, as EC2 answers it), `PrivateDnsEnabled`, `RouteTableIds`,
//! `SubnetIds`, `SecurityGroupIds`, `NetworkInterfaceIds`, `DnsEntries` (each
//! `<hosted zone id>:<DNS name>`, as CloudFormation returns them), `CreationTimestamp`,
//! `IpAddressType`, `ServiceNetworkArn`, `ResourceConfigurationArn`, `ServiceRegion`.

use aws_sdk_ec2::types::VpcEndpoint;
use serde_json::Value;

use super::model::{self, strings, text, time};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_VPC_ENDPOINTS: Operation = operation!("ec2", "DescribeVpcEndpoints");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_VPC_ENDPOINTS, "MaxResults=1000")];

page!(
    aws_sdk_ec2::operation::describe_vpc_endpoints::DescribeVpcEndpointsOutput,
    vpc_endpoints,
    paginated
);

/// Every VPC endpoint of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_vpc_endpoints()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_VPC_ENDPOINTS,
        region,
        send,
        |p| p.vpc_endpoints(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, e: &VpcEndpoint) -> Option<Resource> {
    let id = e.vpc_endpoint_id()?;
    let arn = model::arn(run, region, e.owner_id(), &format!("vpc-endpoint/{id}"));
    let dns: Vec<Value> = e
        .dns_entries()
        .iter()
        .filter_map(|d| Some(format!("{}:{}", d.hosted_zone_id()?, d.dns_name()?).into()))
        .collect();
    let resource = model::resource(run, Ec2Type::VpcEndpoint, region, id, e.owner_id())
        .arn(Some(arn))
        .tags(model::tags(e.tags()))
        .property("Id", id)
        .property("VpcId", e.vpc_id())
        .property("ServiceName", e.service_name())
        .property("VpcEndpointType", text(e.vpc_endpoint_type()))
        .property("PolicyDocument", e.policy_document())
        .property("PrivateDnsEnabled", e.private_dns_enabled())
        .property(
            "RouteTableIds",
            strings(e.route_table_ids().iter().map(String::as_str)),
        )
        .property(
            "SubnetIds",
            strings(e.subnet_ids().iter().map(String::as_str)),
        )
        .property(
            "SecurityGroupIds",
            strings(e.groups().iter().filter_map(|g| g.group_id())),
        )
        .property(
            "NetworkInterfaceIds",
            strings(e.network_interface_ids().iter().map(String::as_str)),
        )
        .property("DnsEntries", model::list_or_null(dns))
        .property("CreationTimestamp", time(e.creation_timestamp()))
        .property("IpAddressType", text(e.ip_address_type()))
        .property("ServiceNetworkArn", e.service_network_arn())
        .property("ResourceConfigurationArn", e.resource_configuration_arn())
        .property("ServiceRegion", e.service_region());
    Some(resource)
}
