//! `AWS::EC2::Instance`: instances, from `DescribeInstances` (`MaxResults=1000`,
//! following `NextToken`), every reservation's instances owned by its `OwnerId`.
//!
//! Properties (CloudFormation's names): `InstanceId`, `ImageId`, `InstanceType`,
//! `KeyName`, `AvailabilityZone`, `Tenancy`, `PlacementGroupName`, `HostId`,
//! `SubnetId`, `VpcId`, `PrivateIpAddress` and `PrivateIp` (both the primary private
//! address, as Cloud Control returns them), `PublicIp`, `PrivateDnsName`,
//! `PublicDnsName`, `State` (`{Code, Name}`, `Code` a string as in the schema),
//! `SecurityGroupIds`, `Monitoring` (detailed monitoring on), `EbsOptimized`,
//! `IamInstanceProfile` (the profile's name), `SourceDestCheck`, `KernelId`,
//! `RamdiskId`, `Volumes` (`[{Device, VolumeId}]`: the attached EBS volumes) and
//! `NetworkInterfaces` (`[{NetworkInterfaceId, DeviceIndex, SubnetId, PrivateIpAddress,
//! GroupSet, DeleteOnTermination, Description}]`, `DeviceIndex` a string as in the
//! schema). Terminated instances are listed while EC2 lists them (`State.Name`).

use aws_sdk_ec2::types::{Instance, InstanceNetworkInterface};
use serde_json::Value;

use super::model::{self, object, strings, text};
use super::page::pages;
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_INSTANCES: Operation = operation!("ec2", "DescribeInstances");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_INSTANCES, "MaxResults=1000")];

// Not `page!`: reservations nest the instances.
impl super::page::Page for aws_sdk_ec2::operation::describe_instances::DescribeInstancesOutput {
    fn count(&self) -> usize {
        self.reservations()
            .iter()
            .map(|r| r.instances().len())
            .sum()
    }
    fn next(&self) -> Option<&str> {
        self.next_token()
    }
}

/// Every instance of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_instances()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    let pages = pages(run, DESCRIBE_INSTANCES, region, &mut out, send).await;
    for reservation in pages.iter().flat_map(|p| p.reservations()) {
        for instance in reservation.instances() {
            if let Some(item) = item(run, region, reservation.owner_id(), instance) {
                out.push(Item::Resource(item));
            }
        }
    }
    run.progress.items_more(out.len());
    out
}

fn item(run: &CollectorRun, region: &str, owner: Option<&str>, i: &Instance) -> Option<Resource> {
    let id = i.instance_id()?;
    let arn = model::arn(run, region, owner, &format!("instance/{id}"));
    let placement = i.placement();
    let state = i.state().map(|s| {
        object([
            (
                "Code",
                s.code()
                    .map(|c| Value::from(c.to_string()))
                    .unwrap_or(Value::Null),
            ),
            ("Name", text(s.name())),
        ])
    });
    let monitoring = i
        .monitoring()
        .and_then(|m| m.state())
        .map(|s| matches!(s.as_str(), "enabled" | "pending"));
    let profile = i
        .iam_instance_profile()
        .and_then(|p| p.arn())
        .and_then(|arn| arn.rsplit('/').next());
    let volumes: Vec<Value> = i
        .block_device_mappings()
        .iter()
        .filter_map(|m| {
            let volume = m.ebs()?.volume_id()?;
            Some(object([
                ("Device", m.device_name().into()),
                ("VolumeId", volume.into()),
            ]))
        })
        .collect();
    let interfaces: Vec<Value> = i.network_interfaces().iter().map(interface).collect();
    let resource = model::resource(run, Ec2Type::Instance, region, id, owner)
        .arn(Some(arn))
        .tags(model::tags(i.tags()))
        .property("InstanceId", id)
        .property("ImageId", i.image_id())
        .property("InstanceType", text(i.instance_type()))
        .property("KeyName", i.key_name())
        .property(
            "AvailabilityZone",
            placement.and_then(|p| p.availability_zone()),
        )
        .property("Tenancy", text(placement.and_then(|p| p.tenancy())))
        .property(
            "PlacementGroupName",
            placement
                .and_then(|p| p.group_name())
                .filter(|g| !g.is_empty()),
        )
        .property("HostId", placement.and_then(|p| p.host_id()))
        .property("SubnetId", i.subnet_id())
        .property("VpcId", i.vpc_id())
        .property("PrivateIpAddress", i.private_ip_address())
        .property("PrivateIp", i.private_ip_address())
        .property("PublicIp", i.public_ip_address())
        .property(
            "PrivateDnsName",
            i.private_dns_name().filter(|n| !n.is_empty()),
        )
        .property(
            "PublicDnsName",
            i.public_dns_name().filter(|n| !n.is_empty()),
        )
        .property("State", state)
        .property(
            "SecurityGroupIds",
            strings(i.security_groups().iter().filter_map(|g| g.group_id())),
        )
        .property("Monitoring", monitoring)
        .property("EbsOptimized", i.ebs_optimized())
        .property("IamInstanceProfile", profile)
        .property("SourceDestCheck", i.source_dest_check())
        .property("KernelId", i.kernel_id())
        .property("RamdiskId", i.ramdisk_id())
        .property("Volumes", model::list_or_null(volumes))
        .property("NetworkInterfaces", model::list_or_null(interfaces));
    Some(resource)
}

/// One attached interface, as the schema's `NetworkInterface`.
fn interface(n: &InstanceNetworkInterface) -> Value {
    let attachment = n.attachment();
    object([
        ("NetworkInterfaceId", n.network_interface_id().into()),
        (
            "DeviceIndex",
            attachment
                .and_then(|a| a.device_index())
                .map(|d| Value::from(d.to_string()))
                .unwrap_or(Value::Null),
        ),
        ("SubnetId", n.subnet_id().into()),
        ("PrivateIpAddress", n.private_ip_address().into()),
        (
            "GroupSet",
            strings(n.groups().iter().filter_map(|g| g.group_id())),
        ),
        (
            "DeleteOnTermination",
            attachment.and_then(|a| a.delete_on_termination()).into(),
        ),
        (
            "Description",
            n.description().filter(|d| !d.is_empty()).into(),
        ),
    ])
}
