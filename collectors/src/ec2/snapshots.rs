//! `AWS::EC2::Snapshot`: the EBS snapshots the account owns, from `DescribeSnapshots`
//! (`OwnerIds=self`, `MaxResults=1000`, following `NextToken`). Public and shared
//! snapshots of other accounts are not the account's estate and are not listed: EC2
//! answers `OwnerIds=self` with the account's own, and a snapshot another account owns
//! in an answer anyway (moto 5.2.1 ignores the parameter and answers its public
//! catalogue too) is left out ([`super::model::owned`]).
//!
//! CloudFormation has no snapshot type, so `AWS::EC2::Snapshot` is a name in its
//! style (`cloudformation: false` in `tollgate types`) and the properties are named
//! as the EC2 API names the fields, in CloudFormation's PascalCase: `SnapshotId`,
//! `VolumeId`, `VolumeSize` (GiB), `State`, `StartTime` (RFC 3339), `Description`,
//! `Encrypted`, `KmsKeyId`, `OwnerId`, `StorageTier`, `OutpostArn`.

use aws_sdk_ec2::types::Snapshot;

use super::model::{self, text, time};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_SNAPSHOTS: Operation = operation!("ec2", "DescribeSnapshots");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// Snapshots of the caller's account only.
const SELF: &str = "self";

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(
    DESCRIBE_SNAPSHOTS,
    "Owner.1=self&MaxResults=1000",
)];

page!(
    aws_sdk_ec2::operation::describe_snapshots::DescribeSnapshotsOutput,
    snapshots,
    paginated
);

/// Every snapshot the account owns in `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_snapshots()
            .owner_ids(SELF)
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_SNAPSHOTS,
        region,
        send,
        |p| p.snapshots(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, s: &Snapshot) -> Option<Resource> {
    let id = s.snapshot_id()?;
    if !model::owned(run, s.owner_id()) {
        return None;
    }
    let arn = model::arn(run, region, s.owner_id(), &format!("snapshot/{id}"));
    let resource = model::resource(run, Ec2Type::Snapshot, region, id, s.owner_id())
        .arn(Some(arn))
        .tags(model::tags(s.tags()))
        .property("SnapshotId", id)
        .property("VolumeId", s.volume_id())
        .property("VolumeSize", s.volume_size())
        .property("State", text(s.state()))
        .property("StartTime", time(s.start_time()))
        .property("Description", s.description().filter(|d| !d.is_empty()))
        .property("Encrypted", s.encrypted())
        .property("KmsKeyId", s.kms_key_id())
        .property("OwnerId", s.owner_id())
        .property("StorageTier", text(s.storage_tier()))
        .property("OutpostArn", s.outpost_arn());
    Some(resource)
}
