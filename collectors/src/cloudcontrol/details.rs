//! `--details`: one `GetResource` per listed item that carries nothing beyond its primary
//! identifier (many list handlers return only that; [`is_identifiers_only`]), so the item
//! holds the full resource model, its tags moved to `tags` as for a listing.
//!
//! Each call is admitted on `cloudcontrol:GetResource` and one token of each operation
//! of the type's `handlers.read.permissions` at one instant (a read handler runs those
//! with the caller's credentials: `iam:GetRole` and three more for `AWS::IAM::Role`),
//! unless [`Charges::OwnKeyOnly`].
//!
//! Failures: a resource the read finds gone (`ResourceNotFoundException` after the
//! listing saw it) was deleted meanwhile and is dropped from the items, the reason noted
//! with its count, the dataset's status unchanged; the read is newer than the listing. Any
//! other failure leaves the item with its listed properties and the dataset `partial`
//! with the reason. A refusal that holds for the whole type (unsupported, denied) stops
//! the region's other reads: each left unread counts towards that reason.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use serde_json::{Map, Value};
use tollgate_engine::aws::CallError;

use super::failure::{failure_status, is_gone};
use super::model::{is_identifiers_only, item, properties_of};
use super::schemas::CcType;
use super::{Charges, GET_RESOURCE};
use crate::output::{CoverageStatus, Item};
use crate::{CollectorRun, ReportBuilder};

/// Reads in flight per type and region (each one admitted by the gate, which paces them).
const READS_IN_FLIGHT: usize = 8;

/// What `--details` asks of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Details {
    /// Items keep what `ListResources` returned (the default: no `GetResource`).
    #[default]
    Listed,
    /// `GetResource` per identifiers-only item (`--details`).
    Read,
}

/// One read's outcome.
enum Read {
    Full(Map<String, Value>),
    Failed(CallError),
    /// Not sent: an earlier read of the region was refused for the whole type.
    NotSent,
}

/// Read every identifiers-only item of `out` in full, when the run asks for details.
pub(super) async fn read_identifiers_only(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    item_region: &str,
    out: &mut ReportBuilder,
) {
    if run.details != Details::Read || run.is_cancelled() {
        return;
    }
    let wanted: Vec<(usize, String)> = out
        .items()
        .iter()
        .enumerate()
        .filter(|(_, i)| is_identifiers_only(ty, i.resource()))
        .map(|(n, i)| (n, i.resource().id.clone()))
        .collect();
    run.progress.plan_more(wanted.len());
    let refused = AtomicBool::new(false);
    let reads: Vec<(usize, String, Read)> = futures_util::stream::iter(wanted)
        .map(|(n, id)| {
            let refused = &refused;
            async move {
                if refused.load(Ordering::Relaxed) || run.is_cancelled() {
                    return (n, id, Read::NotSent);
                }
                let read = match get(run, ty, region, &id).await {
                    Ok(properties) => Read::Full(properties),
                    Err(e) => {
                        if refuses_the_type(&e) {
                            refused.store(true, Ordering::Relaxed);
                        }
                        Read::Failed(e)
                    }
                };
                (n, id, read)
            }
        })
        .buffered(READS_IN_FLIGHT)
        .collect()
        .await;
    apply(run, ty, item_region, reads, out);
}

/// Put the reads into `out`: full models replace the listed ones, gone items go, the
/// rest keep what was listed and leave a reason.
fn apply(
    run: &CollectorRun,
    ty: &CcType,
    item_region: &str,
    reads: Vec<(usize, String, Read)>,
    out: &mut ReportBuilder,
) {
    let mut gone = Vec::new();
    let mut refusal: Option<CallError> = None;
    for (n, id, read) in reads {
        match read {
            Read::Full(properties) => {
                out.items_mut()[n] = Item::Resource(item(run, ty, item_region, &id, properties));
            }
            Read::Failed(e) if is_gone(&e) => {
                out.value_missing(GET_RESOURCE, "properties", &e);
                gone.push(n);
            }
            Read::Failed(e) => {
                out.enrichment_missing(GET_RESOURCE, "properties", &e);
                if refusal.is_none() && refuses_the_type(&e) {
                    refusal = Some(e);
                }
            }
            Read::NotSent => match &refusal {
                Some(e) => out.enrichment_missing(GET_RESOURCE, "properties", e),
                None => out.cancelled(),
            },
        }
    }
    let mut n = 0;
    out.items_mut().retain(|_| {
        n += 1;
        !gone.contains(&(n - 1))
    });
}

/// Whether a failed read would fail the same way for every item of the type (the type
/// does not support READ there, or access is denied).
fn refuses_the_type(error: &CallError) -> bool {
    !is_gone(error)
        && matches!(
            failure_status(error),
            CoverageStatus::Unsupported | CoverageStatus::Denied
        )
}

/// One `GetResource`: the resource model.
async fn get(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    id: &str,
) -> Result<Map<String, Value>, CallError> {
    let client = run.client::<aws_sdk_cloudcontrol::Client>(region);
    let underlying: &[(String, String)] = match run.cloudcontrol {
        Charges::Underlying => &ty.read,
        Charges::OwnKeyOnly => &[],
    };
    let answer = run
        .gate
        .call_with_underlying(
            &run.ctx,
            (GET_RESOURCE.service(), GET_RESOURCE.name()),
            Some(region),
            underlying,
            |_| {
                client
                    .get_resource()
                    .type_name(&ty.type_name)
                    .identifier(id)
                    .send()
            },
        )
        .await;
    run.progress.done(1);
    let answer = answer?;
    Ok(properties_of(
        answer.resource_description().and_then(|d| d.properties()),
    ))
}
