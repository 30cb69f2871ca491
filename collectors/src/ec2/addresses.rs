//! `AWS::EC2::EIP`: Elastic IP addresses, from one `DescribeAddresses` per region (the
//! action does not paginate: it answers every address at once).
//!
//! `id` is CloudFormation's composite primary identifier, `PublicIp|AllocationId`, as
//! Cloud Control writes it; the ARN is `elastic-ip/<AllocationId>`. Properties
//! (CloudFormation's names): `PublicIp`, `AllocationId`, `Domain`, `InstanceId`,
//! `NetworkBorderGroup`, `PublicIpv4Pool`.

use aws_sdk_ec2::types::Address;

use super::model::{self, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_ADDRESSES: Operation = operation!("ec2", "DescribeAddresses");

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_ADDRESSES, "")];

page!(
    aws_sdk_ec2::operation::describe_addresses::DescribeAddressesOutput,
    addresses
);

/// Every Elastic IP of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |_token: Option<String>| client.describe_addresses().send();
    listing(
        run,
        DESCRIBE_ADDRESSES,
        region,
        send,
        |p| p.addresses(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, a: &Address) -> Option<Resource> {
    let ip = a.public_ip()?;
    let allocation = a.allocation_id()?;
    let id = format!("{ip}|{allocation}");
    let arn = model::arn(run, region, None, &format!("elastic-ip/{allocation}"));
    let resource = model::resource(run, Ec2Type::Eip, region, &id, None)
        .arn(Some(arn))
        .tags(model::tags(a.tags()))
        .property("PublicIp", ip)
        .property("AllocationId", allocation)
        .property("Domain", text(a.domain()))
        .property("InstanceId", a.instance_id().filter(|i| !i.is_empty()))
        .property("NetworkBorderGroup", a.network_border_group())
        .property("PublicIpv4Pool", a.public_ipv4_pool());
    Some(resource)
}
