//! `AWS::Route53::HostedZone`: every hosted zone of the account, from `ListHostedZones`
//! (100 a page, following `NextMarker` while `IsTruncated`), once per scan: Route 53 is
//! global, its items are in region `global` and its budget, `route53:all-requests` (5/s
//! burst 5, seed 000), is the account's, with no region in its key. The calls go to the
//! scan's first region's endpoint (the SDK resolves Route 53's global one).
//!
//! `id` is the zone's id without `/hostedzone/` (CloudFormation's primary identifier),
//! `arn` `arn:<partition>:route53:::hostedzone/<id>` as the tagging API writes it.
//! Properties: `Id`, `Name`, `HostedZoneConfig` (`Comment`), CloudFormation's names; and
//! `PrivateZone`, `ResourceRecordSetCount` (the zone's record count), `CallerReference`
//! from the answer.

use aws_sdk_route53::operation::list_hosted_zones::ListHostedZonesOutput;
use aws_sdk_route53::types::HostedZone;

use crate::dataset::ServiceType;
use crate::ec2::model::object;
use crate::ec2::page::{listing, Page};
use crate::ec2::Call;
use crate::resource::GLOBAL;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const LIST_HOSTED_ZONES: Operation = operation!("route53", "ListHostedZones");

/// The action's largest page.
const PAGE: i32 = 100;

/// What the collector calls.
pub const CALLS: &[Call] = &[Call {
    operation: LIST_HOSTED_ZONES,
    parameters: "maxitems=100",
    per: "account",
}];

impl Page for ListHostedZonesOutput {
    fn count(&self) -> usize {
        self.hosted_zones().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_marker().filter(|_| self.is_truncated())
    }
}

/// Every hosted zone of the account, with its coverage entry (region `global`).
pub async fn collect(run: &CollectorRun) -> ReportBuilder {
    let region = run.home_region();
    let client = run.client::<aws_sdk_route53::Client>(region);
    let send = |marker| {
        client
            .list_hosted_zones()
            .max_items(PAGE)
            .set_marker(marker)
            .send()
    };
    let mut out = listing(
        run,
        LIST_HOSTED_ZONES,
        region,
        send,
        |p| p.hosted_zones(),
        item,
    )
    .await;
    let ty = ServiceType::Route53HostedZone.resource_type();
    let account = run.account();
    let entry = out.coverage_entry(ty, account.as_deref(), GLOBAL, out.len() as u64);
    out.covered(entry);
    out
}

fn item(run: &CollectorRun, _region: &str, z: &HostedZone) -> Option<Resource> {
    let id = z.id().trim_start_matches("/hostedzone/");
    if id.is_empty() {
        return None;
    }
    let ty = ServiceType::Route53HostedZone.resource_type();
    let arn = format!(
        "arn:{}:route53:::hostedzone/{id}",
        run.gate.partition().as_str()
    );
    let config = z.config();
    let comment = config.and_then(|c| c.comment()).filter(|c| !c.is_empty());
    let resource = run
        .resource(ty, id, Some(GLOBAL))
        .arn(Some(arn))
        .property("Id", id)
        .property("Name", z.name())
        .property(
            "HostedZoneConfig",
            comment.map(|c| object([("Comment", c.into())])),
        )
        .property("PrivateZone", config.map(|c| c.private_zone()))
        .property("ResourceRecordSetCount", z.resource_record_set_count())
        .property("CallerReference", z.caller_reference());
    Some(resource)
}
