//! `AWS::CloudTrail::Trail`: the trails whose home region is the listed region, from one
//! `DescribeTrails` per region (`includeShadowTrails=false`; the action does not page) on
//! `cloudtrail:DescribeTrails` (10/s, seed 000).
//!
//! Why without shadow trails: a multi-region trail answers in every region it records,
//! and listing it once, in its home region, reports each trail once per scan (a scan that
//! does not cover a trail's home region does not report it).
//!
//! `id` is the trail's name (CloudFormation's primary identifier), `arn` its ARN.
//! Properties (CloudFormation's names): `TrailName`, `Arn`, `S3BucketName`,
//! `S3KeyPrefix`, `IsMultiRegionTrail`, `IsOrganizationTrail`,
//! `IncludeGlobalServiceEvents`, `EnableLogFileValidation`, `KMSKeyId`,
//! `CloudWatchLogsLogGroupArn`, `SnsTopicArn`; and `HomeRegion` from the answer.

use aws_sdk_cloudtrail::operation::describe_trails::DescribeTrailsOutput;
use aws_sdk_cloudtrail::types::Trail;

use crate::dataset::ServiceType;
use crate::ec2::page::{listing, Page};
use crate::ec2::Call;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_TRAILS: Operation = operation!("cloudtrail", "DescribeTrails");

/// What the collector calls.
pub const CALLS: &[Call] = &[Call {
    operation: DESCRIBE_TRAILS,
    parameters: "includeShadowTrails=false",
    per: "region",
}];

impl Page for DescribeTrailsOutput {
    fn count(&self) -> usize {
        self.trail_list().len()
    }
    fn next(&self) -> Option<&str> {
        None
    }
}

/// Every trail whose home region is `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_cloudtrail::Client>(region);
    let send = |_| client.describe_trails().include_shadow_trails(false).send();
    listing(run, DESCRIBE_TRAILS, region, send, |p| p.trail_list(), item).await
}

fn item(run: &CollectorRun, region: &str, t: &Trail) -> Option<Resource> {
    let name = t.name()?;
    // An emulator or an old answer may still include another home region's trail.
    if t.home_region().is_some_and(|home| home != region) {
        return None;
    }
    let ty = ServiceType::CloudTrailTrail.resource_type();
    let arn = t.trail_arn().map(str::to_string);
    let account = arn.as_deref().and_then(super::ecs::account_of);
    let resource = run
        .resource(ty, name, Some(region))
        .account(account.or_else(|| run.account()))
        .arn(arn.clone())
        .property("TrailName", name)
        .property("Arn", arn)
        .property("S3BucketName", t.s3_bucket_name())
        .property("S3KeyPrefix", t.s3_key_prefix())
        .property("IsMultiRegionTrail", t.is_multi_region_trail())
        .property("IsOrganizationTrail", t.is_organization_trail())
        .property(
            "IncludeGlobalServiceEvents",
            t.include_global_service_events(),
        )
        .property("EnableLogFileValidation", t.log_file_validation_enabled())
        .property("KMSKeyId", t.kms_key_id())
        .property(
            "CloudWatchLogsLogGroupArn",
            t.cloud_watch_logs_log_group_arn(),
        )
        .property("SnsTopicArn", t.sns_topic_arn())
        .property("HomeRegion", t.home_region());
    Some(resource)
}
