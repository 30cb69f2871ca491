//! `AWS::EC2::LaunchTemplate`: launch templates, from `DescribeLaunchTemplates`
//! (`MaxResults=200`, its largest page, following `NextToken`).
//!
//! Properties (CloudFormation's names): `LaunchTemplateId`, `LaunchTemplateName`,
//! `DefaultVersionNumber` and `LatestVersionNumber` (strings, as the schema has them).
//! The versions' `LaunchTemplateData` needs `DescribeLaunchTemplateVersions` per
//! template: not read. Tags are the template's own (the schema's `TagSpecifications`
//! are in `tags`).

use aws_sdk_ec2::operation::describe_launch_templates::DescribeLaunchTemplatesOutput;
use aws_sdk_ec2::types::LaunchTemplate;

use super::model;
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_LAUNCH_TEMPLATES: Operation = operation!("ec2", "DescribeLaunchTemplates");

/// The action's largest page.
const PAGE: i32 = 200;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_LAUNCH_TEMPLATES, "MaxResults=200")];

page!(DescribeLaunchTemplatesOutput, launch_templates, paginated);

/// Every launch template of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_launch_templates()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_LAUNCH_TEMPLATES,
        region,
        send,
        DescribeLaunchTemplatesOutput::launch_templates,
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, t: &LaunchTemplate) -> Option<Resource> {
    let id = t.launch_template_id()?;
    let arn = model::arn(run, region, None, &format!("launch-template/{id}"));
    let resource = model::resource(run, Ec2Type::LaunchTemplate, region, id, None)
        .arn(Some(arn))
        .tags(model::tags(t.tags()))
        .property("LaunchTemplateId", id)
        .property("LaunchTemplateName", t.launch_template_name())
        .property(
            "DefaultVersionNumber",
            t.default_version_number().map(|v| v.to_string()),
        )
        .property(
            "LatestVersionNumber",
            t.latest_version_number().map(|v| v.to_string()),
        );
    Some(resource)
}
