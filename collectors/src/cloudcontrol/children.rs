//! A child type's listing in one region: one `ListResources` walk (all pages) per parent
//! item, its `ResourceModel` the parent's properties ([`ParentListing`]), up to
//! [`PARENTS_IN_FLIGHT`] parent items at a time, each page charged like any listing
//! ([`listing`](super::listing)). The decisions (what the parent's coverage allows, what
//! the child's coverage is) are [`parents`](super::parents)'; this file applies them.
//!
//! A refusal that holds for the whole type (unsupported, denied) stops the region's
//! other listings: each would be refused the same way.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use tollgate_engine::aws::CallError;

use super::failure::{failure_status, is_gone, note_listing_failure, Decided};
use super::listing::list;
use super::parents::{ParentListing, ParentModel, Verdict};
use super::schemas::CcType;
use super::LIST_RESOURCES;
use crate::output::{CoverageStatus, DatasetStatus};
use crate::{CollectorRun, ReportBuilder};

/// Parent items listed under at once, per type and region (each page admitted by the
/// gate, which paces them).
const PARENTS_IN_FLIGHT: usize = 4;

/// Why a region's child listing is incomplete, beside what the builder's status rules
/// derive.
#[derive(Debug, Default)]
pub(super) struct ChildOutcome {
    /// A refusal or a throttled handler (a refusal wins).
    pub decided: Option<Decided>,
    /// The parent's partial or failed listing, or a parent item lacking a property.
    pub floor: Option<Decided>,
}

/// How the listing under one parent item ended.
enum Under {
    /// Listed to the last page (or not sent: the type was refused meanwhile).
    Listed,
    /// The parent item lacks a property the listing needs.
    Lacks(String),
    /// A page failed.
    Failed(CallError),
}

/// List `ty` under every parent item of `region` into `out`.
pub(super) async fn list_under_parents(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    item_region: &str,
    out: &mut ReportBuilder,
) -> ChildOutcome {
    let absent;
    let listing = match &run.parents {
        Some(listing) => listing,
        None => {
            let parent = ty
                .parent_type
                .as_ref()
                .map_or("(unknown)", |p| &p.type_name);
            absent = ParentListing::absent(parent);
            &absent
        }
    };
    let (verdict, parents) = listing.for_region(region);
    let mut outcome = ChildOutcome::default();
    match verdict {
        Verdict::Nothing(decided) => {
            if decided.status == CoverageStatus::Cancelled {
                out.cancelled();
            }
            outcome.decided = Some(decided);
            return outcome;
        }
        Verdict::List { floor } => {
            if let Some(f) = &floor {
                out.inherited(dataset_status(f.status), LIST_RESOURCES, &f.reason);
            }
            outcome.floor = floor;
        }
    }
    run.progress.plan_more(parents.len());
    let refused = AtomicBool::new(false);
    let listed: Vec<(&ParentModel, ReportBuilder, Under)> = futures_util::stream::iter(parents)
        .map(|parent| list_under(run, ty, region, item_region, parent, &refused))
        .buffered(PARENTS_IN_FLIGHT)
        .collect()
        .await;
    for (parent, sub, under) in listed {
        sub.merge_into(out);
        record(out, &mut outcome, parent, under);
    }
    outcome
}

/// The listing under one parent item, into a builder of its own.
async fn list_under<'p>(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    item_region: &str,
    parent: &'p ParentModel,
    refused: &AtomicBool,
) -> (&'p ParentModel, ReportBuilder, Under) {
    let mut sub = ReportBuilder::new();
    let model = match &parent.model {
        Ok(model) => model,
        Err(missing) => return (parent, sub, Under::Lacks(missing.clone())),
    };
    if refused.load(Ordering::Relaxed) || run.is_cancelled() {
        return (parent, sub, Under::Listed);
    }
    let under = match list(run, ty, region, item_region, Some(model), &mut sub).await {
        Ok(()) => Under::Listed,
        Err(e) => {
            if refuses_the_type(&e) {
                refused.store(true, Ordering::Relaxed);
            }
            Under::Failed(e)
        }
    };
    (parent, sub, under)
}

/// Note how the listing under `parent` ended.
fn record(out: &mut ReportBuilder, outcome: &mut ChildOutcome, parent: &ParentModel, under: Under) {
    match under {
        Under::Listed => {}
        Under::Lacks(missing) => {
            let reason = format!(
                "parent item {} has no {missing}: its children were not listed (its \
                 listing returns identifiers only; --details reads the rest)",
                parent.parent_id
            );
            out.inherited(DatasetStatus::Partial, LIST_RESOURCES, &reason);
            outcome.floor.get_or_insert(Decided {
                status: CoverageStatus::Partial,
                reason,
            });
        }
        // The parent was deleted after it was listed: no children under it.
        Under::Failed(e) if is_gone(&e) => out.value_missing(LIST_RESOURCES, "items", &e),
        Under::Failed(e) => {
            if let Some(d) = note_listing_failure(out, &e) {
                let refusal = matches!(
                    d.status,
                    CoverageStatus::Unsupported | CoverageStatus::Denied
                );
                if refusal || outcome.decided.is_none() {
                    outcome.decided = Some(d);
                }
            }
        }
    }
}

/// Whether a failed listing would fail the same way under every parent (the type is not
/// supported there, or access is denied).
fn refuses_the_type(error: &CallError) -> bool {
    !is_gone(error)
        && matches!(
            failure_status(error),
            CoverageStatus::Unsupported | CoverageStatus::Denied
        )
}

fn dataset_status(status: CoverageStatus) -> DatasetStatus {
    match status {
        CoverageStatus::Partial => DatasetStatus::Partial,
        CoverageStatus::Cancelled => DatasetStatus::Cancelled,
        _ => DatasetStatus::Failed,
    }
}
