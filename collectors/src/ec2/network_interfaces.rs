//! `AWS::EC2::NetworkInterface`: network interfaces (ENIs), the instances' own
//! included, from `DescribeNetworkInterfaces` (`MaxResults=1000`, following
//! `NextToken`).
//!
//! Properties (CloudFormation's names): `Id` (the interface id, the primary
//! identifier), `SubnetId`, `VpcId`, `Description`, `InterfaceType`, `GroupSet`,
//! `PrivateIpAddress` and `PrimaryPrivateIpAddress` (the primary address),
//! `PrivateIpAddresses` (`[{PrivateIpAddress, Primary}]`), `SecondaryPrivateIpAddresses`,
//! `Ipv6Addresses` (`[{Ipv6Address}]`), `SourceDestCheck`. Which instance it is attached
//! to is the instance's `NetworkInterfaces` (an attachment is a type of its own in
//! CloudFormation).

use aws_sdk_ec2::operation::describe_network_interfaces::DescribeNetworkInterfacesOutput;
use aws_sdk_ec2::types::NetworkInterface;
use serde_json::Value;

use super::model::{self, object, strings, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_NETWORK_INTERFACES: Operation = operation!("ec2", "DescribeNetworkInterfaces");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_NETWORK_INTERFACES, "MaxResults=1000")];

page!(
    DescribeNetworkInterfacesOutput,
    network_interfaces,
    paginated
);

/// Every network interface of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_network_interfaces()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_NETWORK_INTERFACES,
        region,
        send,
        DescribeNetworkInterfacesOutput::network_interfaces,
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, n: &NetworkInterface) -> Option<Resource> {
    let id = n.network_interface_id()?;
    let arn = model::arn(
        run,
        region,
        n.owner_id(),
        &format!("network-interface/{id}"),
    );
    let addresses = n.private_ip_addresses();
    let private: Vec<Value> = addresses
        .iter()
        .map(|a| {
            object([
                ("PrivateIpAddress", a.private_ip_address().into()),
                ("Primary", a.primary().into()),
            ])
        })
        .collect();
    let secondary = addresses
        .iter()
        .filter(|a| a.primary() != Some(true))
        .filter_map(|a| a.private_ip_address());
    let ipv6: Vec<Value> = n
        .ipv6_addresses()
        .iter()
        .filter_map(|a| a.ipv6_address())
        .map(|a| object([("Ipv6Address", a.into())]))
        .collect();
    let resource = model::resource(run, Ec2Type::NetworkInterface, region, id, n.owner_id())
        .arn(Some(arn))
        .tags(model::tags(n.tag_set()))
        .property("Id", id)
        .property("SubnetId", n.subnet_id())
        .property("VpcId", n.vpc_id())
        .property("Description", n.description().filter(|d| !d.is_empty()))
        .property("InterfaceType", text(n.interface_type()))
        .property(
            "GroupSet",
            strings(n.groups().iter().filter_map(|g| g.group_id())),
        )
        .property("PrivateIpAddress", n.private_ip_address())
        .property("PrimaryPrivateIpAddress", n.private_ip_address())
        .property("PrivateIpAddresses", model::list_or_null(private))
        .property("SecondaryPrivateIpAddresses", strings(secondary))
        .property("Ipv6Addresses", model::list_or_null(ipv6))
        .property("SourceDestCheck", n.source_dest_check());
    Some(resource)
}
