//! `AWS::EC2::Volume`: EBS volumes, from `DescribeVolumes` (`MaxResults=500`, its
//! largest page, following `NextToken`).
//!
//! Properties (CloudFormation's names): `VolumeId`, `AvailabilityZone`,
//! `AvailabilityZoneId`, `Size`, `VolumeType`, `Iops`, `Throughput`, `Encrypted`,
//! `KmsKeyId`, `SnapshotId`, `MultiAttachEnabled`, `OutpostArn`, `SourceVolumeId`,
//! `VolumeInitializationRate`. Which instance a volume is attached to is the
//! instance's `Volumes` property (an attachment is a type of its own in
//! CloudFormation, `AWS::EC2::VolumeAttachment`).

use aws_sdk_ec2::types::Volume;

use super::model::{self, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_VOLUMES: Operation = operation!("ec2", "DescribeVolumes");

/// The action's largest page.
const PAGE: i32 = 500;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_VOLUMES, "MaxResults=500")];

page!(
    aws_sdk_ec2::operation::describe_volumes::DescribeVolumesOutput,
    volumes,
    paginated
);

/// Every volume of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_volumes()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(run, DESCRIBE_VOLUMES, region, send, |p| p.volumes(), item).await
}

fn item(run: &CollectorRun, region: &str, v: &Volume) -> Option<Resource> {
    let id = v.volume_id()?;
    let arn = v
        .volume_arn()
        .map(str::to_string)
        .unwrap_or_else(|| model::arn(run, region, v.owner_id(), &format!("volume/{id}")));
    let resource = model::resource(run, Ec2Type::Volume, region, id, v.owner_id())
        .arn(Some(arn))
        .tags(model::tags(v.tags()))
        .property("VolumeId", id)
        .property("AvailabilityZone", v.availability_zone())
        .property("AvailabilityZoneId", v.availability_zone_id())
        .property("Size", v.size())
        .property("VolumeType", text(v.volume_type()))
        .property("Iops", v.iops())
        .property("Throughput", v.throughput())
        .property("Encrypted", v.encrypted())
        .property("KmsKeyId", v.kms_key_id())
        .property("SnapshotId", v.snapshot_id().filter(|s| !s.is_empty()))
        .property("MultiAttachEnabled", v.multi_attach_enabled())
        .property("OutpostArn", v.outpost_arn())
        .property("SourceVolumeId", v.source_volume_id())
        .property("VolumeInitializationRate", v.volume_initialization_rate());
    Some(resource)
}
