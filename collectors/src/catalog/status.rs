//! `catalog status`: per region, `ListIndexes` (for that region) → the index's type;
//! `GetIndex` → its state; `GetDefaultView` → the default view; `GetView` → its filter
//! and scope. A region without an index stops after the first probe; one without a
//! default view after the third.
//!
//! Why at most [`PROBE_ATTEMPTS`] attempts? Status is a diagnosis, asked often and
//! across every region: a region whose probes keep failing (throttled, denied, a
//! service outage) is reported `unavailable` with what it answered, after one retry,
//! instead of spending the shared retry allowance and the scan's deadline on it. Both
//! attempts still pass final admission on the region's `resource-explorer-2:non-search`
//! key: a retry is a request AWS meters like any other. The probes use a copy of the
//! gate with that attempt limit ([`AwsGate::with_max_attempts`]).
//!
//! Why [`STATUS_WORKERS`] regions at once? Each region has its own 3/s budget, so
//! regions can go in parallel; seed 000 bounds the regional workers to 5 so a status of
//! every region does not open 30 connections at once. Output is sorted by region,
//! whatever order the probes finish in.

use std::num::NonZeroU32;

use futures_util::stream::{self, StreamExt};
use tollgate_engine::aws::{AwsGate, CallContext, CallError};

use super::model::{Evidence, IndexInfo, RegionState, RegionStatus, ViewInfo};
use super::{client, through, SERVICE};

/// Physical attempts per status probe (seed 000).
pub const PROBE_ATTEMPTS: NonZeroU32 = NonZeroU32::new(2).expect("non-zero");

/// Regions probed at once (seed 000).
pub const STATUS_WORKERS: usize = 5;

/// The status of every region of `regions`, sorted by region.
pub async fn status(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    regions: &[String],
) -> Vec<RegionStatus> {
    let probes = gate.clone().with_max_attempts(PROBE_ATTEMPTS);
    let mut out: Vec<RegionStatus> = stream::iter(regions)
        .map(|region| probe_region(&probes, sdk, ctx, region))
        .buffer_unordered(STATUS_WORKERS)
        .collect()
        .await;
    out.sort_by(|a, b| a.region.cmp(&b.region));
    out
}

/// One region's status (the gate's attempt limit applies).
pub async fn probe_region(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
) -> RegionStatus {
    let state = match probe(gate, sdk, ctx, region).await {
        Ok(state) => state,
        Err(error) => RegionState::Unavailable {
            evidence: Evidence::of(&error),
        },
    };
    RegionStatus {
        region: region.to_owned(),
        state,
    }
}

async fn probe(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
) -> Result<RegionState, CallError> {
    let client = client(sdk, region);
    let at = Some(region);
    let listed = gate
        .call(ctx, SERVICE, "ListIndexes", at, |http| {
            client
                .list_indexes()
                .regions(region)
                .customize()
                .config_override(through(http))
                .send()
        })
        .await?;
    let Some(index) = listed.indexes().iter().find(|i| i.region() == Some(region)) else {
        return Ok(RegionState::NoIndex);
    };
    let kind = index.r#type().map_or("", |t| t.as_str()).to_owned();
    let got = gate
        .call(ctx, SERVICE, "GetIndex", at, |http| {
            client
                .get_index()
                .customize()
                .config_override(through(http))
                .send()
        })
        .await?;
    let index = IndexInfo {
        arn: index.arn().or(got.arn()).unwrap_or_default().to_owned(),
        kind,
        state: got.state().map_or("", |s| s.as_str()).to_owned(),
    };
    let default = gate
        .call(ctx, SERVICE, "GetDefaultView", at, |http| {
            client
                .get_default_view()
                .customize()
                .config_override(through(http))
                .send()
        })
        .await?;
    let Some(view_arn) = default.view_arn().filter(|a| !a.is_empty()) else {
        return Ok(RegionState::Indexed {
            index,
            default_view: None,
        });
    };
    let view = gate
        .call(ctx, SERVICE, "GetView", at, |http| {
            client
                .get_view()
                .view_arn(view_arn)
                .customize()
                .config_override(through(http))
                .send()
        })
        .await?;
    let view = view.view();
    let default_view = ViewInfo {
        arn: view_arn.to_owned(),
        filter: view
            .and_then(|v| v.filters())
            .map(|f| f.filter_string().to_owned())
            .filter(|f| !f.is_empty()),
        scope: view.and_then(|v| v.scope()).map(str::to_owned),
        included_properties: view
            .map(|v| {
                v.included_properties()
                    .iter()
                    .map(|p| p.name().to_owned())
                    .collect()
            })
            .unwrap_or_default(),
    };
    Ok(RegionState::Indexed {
        index,
        default_view: Some(default_view),
    })
}
