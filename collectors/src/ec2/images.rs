//! `AWS::EC2::Image`: the AMIs the account owns, from `DescribeImages` (`Owners=self`,
//! `MaxResults=1000`, following `NextToken`), then one `DescribeImageAttribute`
//! (`Attribute=launchPermission`) per image, [`BATCH`] at a time: who may launch it.
//! An image another account owns in the answer anyway is left out, unread
//! ([`super::model::owned`]).
//!
//! CloudFormation has no AMI type, so `AWS::EC2::Image` is a name in its style
//! (`cloudformation: false` in `tollgate types`) and the properties are named as the
//! EC2 API names the fields, in CloudFormation's PascalCase: `ImageId`, `Name`,
//! `Description`, `State`, `CreationDate`, `Architecture`, `ImageType`,
//! `PlatformDetails`, `RootDeviceType`, `RootDeviceName`, `VirtualizationType`,
//! `OwnerId`, `Public` (`DescribeImages`' own flag), `BlockDeviceMappings`
//! (`[{DeviceName, Ebs: {SnapshotId, VolumeSize, VolumeType, Encrypted,
//! DeleteOnTermination}}]`, the shape CloudFormation gives block device mappings) and
//! `LaunchPermissions`, the attribute as EC2 answers it: `[{"Group": "all"}]` for a
//! public image, `{"UserId": ...}` per account it is shared with, `{"OrganizationArn":
//! ...}` / `{"OrganizationalUnitArn": ...}`; `[]` for a private one. A read that fails
//! leaves `LaunchPermissions` out and says why in the dataset's reasons; an image
//! deregistered between the listing and its read is left out (it no longer exists).

use crate::join::join_in_order;
use aws_sdk_ec2::types::{BlockDeviceMapping, Image, ImageAttributeName, LaunchPermission};
use serde_json::Value;
use tollgate_engine::aws::CallError;

use super::model::{self, object, text};
use super::page::{page, pages};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_IMAGES: Operation = operation!("ec2", "DescribeImages");
const DESCRIBE_IMAGE_ATTRIBUTE: Operation = operation!("ec2", "DescribeImageAttribute");

/// The listing's largest page.
const PAGE: i32 = 1_000;

/// Images whose launch permissions are read at once.
pub const BATCH: usize = 10;

/// AMIs of the caller's account only.
const SELF: &str = "self";

/// The item field a failed launch-permission read leaves out.
const FIELD: &str = "properties.LaunchPermissions";

/// What the collector calls.
pub const CALLS: &[Call] = &[
    per_region(DESCRIBE_IMAGES, "Owner.1=self&MaxResults=1000"),
    Call {
        operation: DESCRIBE_IMAGE_ATTRIBUTE,
        parameters: "ImageId=<image>&Attribute=launchPermission",
        per: "image",
    },
];

page!(
    aws_sdk_ec2::operation::describe_images::DescribeImagesOutput,
    images,
    paginated
);

/// Every AMI the account owns in `region`, with its launch permissions.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_images()
            .owners(SELF)
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    let pages = pages(run, DESCRIBE_IMAGES, region, &mut out, send).await;
    let images: Vec<&Image> = pages
        .iter()
        .flat_map(|p| p.images())
        .filter(|i| i.image_id().is_some() && model::owned(run, i.owner_id()))
        .collect();
    run.progress.plan_more(images.len());
    for batch in images.chunks(BATCH) {
        if run.is_cancelled() {
            out.cancelled();
            break;
        }
        let read = join_in_order(batch.iter().map(|i| launch_permissions(run, region, i))).await;
        let before = out.len();
        for (image, permissions) in batch.iter().zip(read) {
            let permissions = match permissions {
                Ok(p) => Some(p),
                Err(e) if e.code() == Some("InvalidAMIID.NotFound") => continue,
                Err(e) => {
                    out.value_missing(DESCRIBE_IMAGE_ATTRIBUTE, FIELD, &e);
                    None
                }
            };
            if let Some(resource) = item(run, region, image, permissions) {
                out.push(Item::Resource(resource));
            }
        }
        run.progress.items_more(out.len() - before);
    }
    out
}

/// One image's launch permissions, as the attribute answers them.
async fn launch_permissions(
    run: &CollectorRun,
    region: &str,
    image: &Image,
) -> Result<Value, CallError> {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let id = image.image_id().unwrap_or_default();
    let answer = run
        .call_item(DESCRIBE_IMAGE_ATTRIBUTE, region, || {
            client
                .describe_image_attribute()
                .image_id(id)
                .attribute(ImageAttributeName::LaunchPermission)
                .send()
        })
        .await?;
    Ok(Value::Array(
        answer.launch_permissions().iter().map(permission).collect(),
    ))
}

/// One launch permission: `{"Group": "all"}`, `{"UserId": ...}`, ...
fn permission(p: &LaunchPermission) -> Value {
    object([
        ("Group", text(p.group())),
        ("UserId", p.user_id().into()),
        ("OrganizationArn", p.organization_arn().into()),
        ("OrganizationalUnitArn", p.organizational_unit_arn().into()),
    ])
}

fn item(
    run: &CollectorRun,
    region: &str,
    i: &Image,
    launch_permissions: Option<Value>,
) -> Option<Resource> {
    let id = i.image_id()?;
    let arn = model::arn(run, region, i.owner_id(), &format!("image/{id}"));
    let mappings: Vec<Value> = i.block_device_mappings().iter().map(mapping).collect();
    let resource = model::resource(run, Ec2Type::Image, region, id, i.owner_id())
        .arn(Some(arn))
        .tags(model::tags(i.tags()))
        .property("ImageId", id)
        .property("Name", i.name())
        .property("Description", i.description().filter(|d| !d.is_empty()))
        .property("State", text(i.state()))
        .property("CreationDate", i.creation_date())
        .property("Architecture", text(i.architecture()))
        .property("ImageType", text(i.image_type()))
        .property("PlatformDetails", i.platform_details())
        .property("RootDeviceType", text(i.root_device_type()))
        .property("RootDeviceName", i.root_device_name())
        .property("VirtualizationType", text(i.virtualization_type()))
        .property("OwnerId", i.owner_id())
        .property("Public", i.public())
        .property("BlockDeviceMappings", model::list_or_null(mappings))
        .property("LaunchPermissions", launch_permissions);
    Some(resource)
}

/// One block device mapping, as CloudFormation shapes them.
fn mapping(m: &BlockDeviceMapping) -> Value {
    let ebs = m.ebs().map(|e| {
        object([
            ("SnapshotId", e.snapshot_id().into()),
            ("VolumeSize", e.volume_size().into()),
            ("VolumeType", text(e.volume_type())),
            ("Encrypted", e.encrypted().into()),
            ("DeleteOnTermination", e.delete_on_termination().into()),
        ])
    });
    object([
        ("DeviceName", m.device_name().into()),
        ("Ebs", ebs.unwrap_or(Value::Null)),
        ("VirtualName", m.virtual_name().into()),
    ])
}
