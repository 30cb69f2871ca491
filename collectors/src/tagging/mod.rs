//! The tagging sweep: every tagged resource of the account per region, from the Resource
//! Groups Tagging API's `GetResources`, its tags merged into the items the collectors
//! produced and the rest reported as `tags-only` items.
//!
//! Why a sweep beside the collectors? Each native collector would need one tag read per
//! item (S3 `GetBucketTagging`, Lambda `ListTags`, ...); `GetResources` answers up to 100
//! resources with their tags per call, for every service at once, on one quota of its own
//! (`tag:GetResources`: AWS documents 15 calls/s per account and region, not adjustable).
//! It also sees types no collector of the scan lists: those are reported, but only as far
//! as tags go. Tags-only never proves that a resource is absent: an untagged resource
//! of such a type is not in the sweep at all.
//!
//! The phase has two halves:
//! - [`sweep`] (I/O): `GetResources` per region of the scan, [`RESOURCES_PER_PAGE`] a page,
//!   following `PaginationToken` until it is empty, each call through the gate
//!   ([`GET_RESOURCES`]).
//! - [`apply`] (pure): tags into every item by ARN ([`merge_key`]: an AMI's or a
//!   snapshot's ARN matches with or without its account); every ARN no item has, whose type the
//!   scan did not list there (not native, not swept by Cloud Control, or listed with an
//!   `unsupported`/`denied`/`failed`/`skipped`/`cancelled` coverage), becomes an item with
//!   `coverage: "tags-only"` in the report's [`TAGS_ONLY_DATASET`] entry, its type, id and
//!   region read from the ARN ([`arn_type`]).
//!
//! A region whose sweep fails is a coverage entry of [`SWEEP_TYPE`] with its reason in
//! that entry, never a failed scan: the datasets' statuses are not touched, and the
//! entry does not count towards the report's overall status (the exit code).

pub mod arn_type;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use aws_config::SdkConfig;

use crate::clients::{AccountClients, ClientSettings, Clients};
use crate::dataset::Dataset;
use crate::operation;
use crate::output::{Coverage, CoverageStatus, DatasetReport, Item, TAGS_ONLY_DATASET};
use crate::resource::{Resource, TAGS_ONLY};
use crate::{Operation, ReportBuilder, ServiceClient};
use tollgate_engine::aws::{in_account, AwsGate, CallContext, CallError, CallErrorKind, ScanId};

pub use arn_type::{arn_type, ArnType};

/// The one operation of the sweep.
pub const GET_RESOURCES: Operation = operation!("tag", "GetResources");

/// `ResourcesPerPage` of every call: the API's maximum.
pub const RESOURCES_PER_PAGE: i32 = 100;

/// The telemetry collector of every sweep call.
pub const COLLECTOR: &str = "tagging";

/// The `resource_type` of the sweep's own coverage entries (one per region).
pub const SWEEP_TYPE: &str = "AWS::ResourceGroupsTagging::Sweep";

/// Whether a scan runs the sweep: on unless asked not to (`--no-tags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TagSweep {
    /// Sweep every region of the scan (the default): tags into every item, and every
    /// tagged resource of an unlisted type as a tags-only item.
    #[default]
    Sweep,
    /// The user selected types (`--types`, `datasets`/`types` of a service scan): the
    /// sweep runs and tags every item, but tags-only items are kept only for the
    /// selected types, so a selection is never answered with resources of other types.
    SelectedTypes,
    /// No `GetResources` call: items keep `tags: {}` and nothing is tags-only.
    Skip,
}

/// What the sweep of one scan runs with.
pub struct TaggingRun {
    pub gate: AwsGate,
    pub sdk: aws_config::SdkConfig,
    pub scan_id: ScanId,
    pub deadline: Instant,
    pub cancel: CancellationToken,
    /// The scan's regions.
    pub regions: Vec<String>,
    /// A member account of an organization scan: the organization's shared clients,
    /// signing as this account (`crate::clients`); `None`: the sweep's own from `sdk`.
    pub account_clients: Option<AccountClients>,
}

/// One region's answer: every ARN with its tags, and how the listing went.
#[derive(Debug, Default)]
pub struct RegionSweep {
    /// The region swept.
    pub region: String,
    /// `(ARN, tags)` in the order `GetResources` returned them.
    pub found: Vec<(String, BTreeMap<String, String>)>,
    /// The failed call, if one ended the region's listing (what was found stays).
    pub failure: Option<CallError>,
}

/// Sweep every region of the scan, at once (each call is paced by the gate), with the
/// organization's shared clients signing as the account when it has them.
pub async fn sweep(run: &TaggingRun) -> Vec<RegionSweep> {
    match &run.account_clients {
        Some(shared) => {
            let (clients, sdk) = shared.parts();
            in_account(shared.credentials.clone(), sweep_with(run, clients, sdk)).await
        }
        None => sweep_with(run, &Clients::default(), &run.sdk).await,
    }
}

async fn sweep_with(run: &TaggingRun, clients: &Clients, sdk: &SdkConfig) -> Vec<RegionSweep> {
    let ctx = CallContext {
        scan_id: run.scan_id,
        collector: COLLECTOR,
        datasets: vec![TAGS_ONLY_DATASET.to_string()],
        deadline: run.deadline,
        cancel: run.cancel.clone(),
    };
    crate::join::join_in_order(
        run.regions
            .iter()
            .map(|region| sweep_region(run, &ctx, (clients, sdk), region)),
    )
    .await
}

async fn sweep_region(
    run: &TaggingRun,
    ctx: &CallContext,
    (clients, sdk): (&Clients, &SdkConfig),
    region: &str,
) -> RegionSweep {
    let client = aws_sdk_resourcegroupstagging::Client::cached(
        clients,
        ClientSettings {
            sdk,
            region,
            force_path_style: false,
        },
    );
    let mut out = RegionSweep {
        region: region.to_string(),
        ..RegionSweep::default()
    };
    let mut token: Option<String> = None;
    loop {
        let page = run
            .gate
            .call(
                ctx,
                GET_RESOURCES.service(),
                GET_RESOURCES.name(),
                Some(region),
                |_| {
                    client
                        .get_resources()
                        .resources_per_page(RESOURCES_PER_PAGE)
                        .set_pagination_token(token.clone())
                        .send()
                },
            )
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                out.failure = Some(e);
                break;
            }
        };
        for mapping in page.resource_tag_mapping_list() {
            let Some(arn) = mapping.resource_arn() else {
                continue;
            };
            let tags = mapping
                .tags()
                .iter()
                .map(|t| (t.key().to_string(), t.value().to_string()))
                .collect();
            out.found.push((arn.to_string(), tags));
        }
        // The API ends a listing with an empty token; moto ends it with `null`.
        token = page
            .pagination_token()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    out
}

/// The coverage a failed sweep call leaves its region: `denied` for access denied,
/// `unsupported` for an endpoint without the API, `cancelled`, else `failed`.
pub fn failure_coverage(error: &CallError) -> CoverageStatus {
    let code = error.code().unwrap_or_default();
    match error.kind() {
        CallErrorKind::Cancelled => CoverageStatus::Cancelled,
        CallErrorKind::Fatal if crate::report_builder::is_access_denied(code) => {
            CoverageStatus::Denied
        }
        CallErrorKind::Fatal
            if matches!(
                code,
                "UnknownOperationException"
                    | "InvalidAction"
                    | "NotImplemented"
                    | "UnrecognizedClientException"
            ) || matches!(error.status(), Some(404 | 501))
                || error.status().is_some_and(|s| (200..300).contains(&s)) =>
        {
            CoverageStatus::Unsupported
        }
        _ => CoverageStatus::Failed,
    }
}

/// The form of an ARN the merge compares: the ARN itself, except that an EC2 AMI's or
/// snapshot's (`…:ec2:REGION:ACCOUNT:image/ami-…`, `…:snapshot/snap-…`) drops its
/// account. AWS writes those two both ways (the IAM reference without an account, the
/// tagging API and moto with the owner's), and an image id or snapshot id names one
/// resource in a region whoever writes it.
pub fn merge_key(arn: &str) -> std::borrow::Cow<'_, str> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    match parts.as_slice() {
        ["arn", partition, "ec2", region, account, resource]
            if !account.is_empty()
                && (resource.starts_with("image/") || resource.starts_with("snapshot/")) =>
        {
            format!("arn:{partition}:ec2:{region}::{resource}").into()
        }
        _ => arn.into(),
    }
}

/// Whether a coverage status means the type was listed there (so an ARN of it that no
/// item has is not reported again as tags-only).
fn listed(status: CoverageStatus) -> bool {
    matches!(status, CoverageStatus::Complete | CoverageStatus::Partial)
}

/// One [`SWEEP_TYPE`] coverage entry per region saying how its sweep went; a failed
/// region's error also goes to the entry's reasons.
fn sweep_coverage(out: &mut ReportBuilder, sweeps: Vec<RegionSweep>, account: Option<&str>) {
    for region in sweeps {
        let (status, reason) = match &region.failure {
            Some(e) => {
                let status = failure_coverage(e);
                match status {
                    // Nothing is known of the region's tags, but nothing was lost either.
                    CoverageStatus::Unsupported | CoverageStatus::Denied => {
                        out.value_missing(GET_RESOURCES, "tags", e)
                    }
                    _ => out.listing_failed(GET_RESOURCES, e),
                }
                (status, Some(format!("{GET_RESOURCES}: {}", e.message())))
            }
            None => (CoverageStatus::Complete, None),
        };
        out.covered(Coverage {
            resource_type: SWEEP_TYPE.to_string(),
            account: account.map(str::to_string),
            region: region.region,
            status,
            reason,
            count: region.found.len() as u64,
        });
    }
}

/// Merge the sweep into `reports` (tags by ARN) and build the [`TAGS_ONLY_DATASET`]
/// entry: the tags-only items, one `tags-only` coverage entry per type and region with
/// their count, and one [`SWEEP_TYPE`] entry per region saying how the sweep went.
/// `account` is the scan's (for ARNs without one, such as S3 buckets'); `only`, when
/// the user selected types ([`TagSweep::SelectedTypes`]), keeps the tags-only items and
/// entries of those types alone.
pub fn apply(
    sweeps: Vec<RegionSweep>,
    reports: &mut BTreeMap<Dataset, DatasetReport>,
    account: Option<&str>,
    only: Option<&[Dataset]>,
) -> DatasetReport {
    let selected: Option<BTreeSet<&str>> =
        only.map(|d| d.iter().map(|d| d.resource_type()).collect());
    // By merge key (`merge_key`): the tags, and the swept ARNs as the sweep wrote them.
    let mut tags: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    let mut swept: Vec<(String, String)> = Vec::new();
    let mut out = ReportBuilder::new();
    for region in &sweeps {
        for (arn, t) in &region.found {
            let key = merge_key(arn).into_owned();
            if let std::collections::hash_map::Entry::Vacant(e) = tags.entry(key) {
                e.insert(t.clone());
                swept.push((arn.clone(), region.region.clone()));
            }
        }
    }
    let mut produced: BTreeSet<String> = BTreeSet::new();
    let mut collected: BTreeSet<(String, String)> = BTreeSet::new();
    for report in reports.values_mut() {
        for item in &mut report.items {
            let resource = item.resource_mut();
            let key = resource.arn.as_deref().map(merge_key);
            if let Some(t) = key.and_then(|k| tags.get(k.as_ref())) {
                resource.tags = t.clone();
            }
        }
        for entry in report.coverage.iter().filter(|c| listed(c.status)) {
            collected.insert((entry.resource_type.clone(), entry.region.clone()));
        }
    }
    for report in reports.values() {
        produced.extend(
            report
                .items
                .iter()
                .filter_map(|i| i.resource().arn.as_deref())
                .map(|a| merge_key(a).into_owned()),
        );
    }
    let mut counts: BTreeMap<(String, Option<String>, String), u64> = BTreeMap::new();
    let mut items: Vec<Resource> = Vec::new();
    for (arn, region) in &swept {
        let key = merge_key(arn);
        if produced.contains(key.as_ref()) {
            continue;
        }
        let Some(t) = arn_type(arn, region) else {
            continue;
        };
        if selected
            .as_ref()
            .is_some_and(|s| !s.contains(t.resource_type.as_str()))
        {
            continue;
        }
        let seen = |r: &str| collected.contains(&(t.resource_type.clone(), r.to_string()));
        if seen(&t.region) || seen(crate::resource::GLOBAL) {
            continue;
        }
        let owner = t.account.clone().or_else(|| account.map(str::to_string));
        *counts
            .entry((t.resource_type.clone(), owner.clone(), t.region.clone()))
            .or_default() += 1;
        let mut resource = Resource::new(&t.resource_type, t.id)
            .arn(Some(arn.clone()))
            .account(owner)
            .region(Some(t.region))
            .tags(tags[key.as_ref()].clone());
        resource.coverage = Some(TAGS_ONLY.to_string());
        items.push(resource);
    }
    items.sort_by(|a, b| a.arn.cmp(&b.arn));
    for item in items {
        out.push(Item::Resource(item));
    }
    sweep_coverage(&mut out, sweeps, account);
    for ((resource_type, account, region), count) in counts {
        out.covered(Coverage {
            resource_type,
            account,
            region,
            status: CoverageStatus::TagsOnly,
            reason: Some(
                "only the tagging sweep saw this type here: resources with tags, never proof \
                 that others are absent"
                    .to_string(),
            ),
            count,
        });
    }
    out.finish()
}

#[cfg(test)]
mod tests;
