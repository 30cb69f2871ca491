//! `catalog init`: the explicit set-up of Resource Explorer — never implicit, no other
//! command creates anything.
//!
//! Per region (at most [`INIT_WORKERS`] at once): an index where there is none
//! (`CreateIndex`), then `GetIndex` polls every [`POLL_INTERVAL`] until it is `ACTIVE`
//! (bounded by the command's deadline and cancellation). With an aggregator region, that
//! region's index is promoted (`UpdateIndexType` to `AGGREGATOR`, polled again) unless
//! the account's aggregator is already there; one elsewhere is reported, not demoted
//! (AWS allows one aggregator per account, and moving it is a decision for its owner).
//! Then, where the region has no default view (in the aggregator region, or in every
//! region without one), a view named [`VIEW_NAME`] (no filter: every resource) is
//! created, or found by name, and made the default (`AssociateDefaultView`).
//!
//! Idempotent: an index, aggregator or default view that exists is left as it is, so a
//! second run changes nothing. A `ConflictException` from `CreateIndex` (an index made by
//! another run in between) is read as "exists"; the view is looked up by name
//! (`ListViews`) before one is created.
//!
//! Budgets: every mutation and poll is charged to the region's
//! `resource-explorer-2:non-search` key (seed 000: 3/s, burst 1, shared with status and
//! catalog reads) *and* to `resource-explorer-2:setup` ([`SETUP_ALLOWANCE`]), which
//! holds set-up's concurrency and retry allowance ([`AwsGate::call_with_allowance`]):
//! set-up's retries never spend catalog collection's.

use std::time::Duration;

use aws_sdk_resourceexplorer2::types::{IndexState, IndexType};
use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use tollgate_engine::aws::{AwsGate, CallContext, CallError, CallErrorKind};

use super::model::{Evidence, IndexInfo};
use super::{client, through, SERVICE};

/// The group of the key holding set-up's retry allowance.
pub const SETUP_ALLOWANCE: &str = "setup";
/// Between two `GetIndex` polls of an index not yet `ACTIVE`.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The default view `catalog init` creates.
pub const VIEW_NAME: &str = "tollgate-all-resources";
/// Regions set up at once (as status: seed 000's regional workers).
pub const INIT_WORKERS: usize = 5;

/// What `catalog init` is asked to do beyond indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitPlan {
    /// The region whose index becomes the account's aggregator.
    pub aggregator: Option<String>,
}

/// What `catalog init` did, per region (sorted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitReport {
    pub regions: Vec<RegionInit>,
}

impl InitReport {
    /// Whether every region is set up.
    pub fn complete(&self) -> bool {
        self.regions.iter().all(|r| r.error.is_none())
    }
}

/// One region's set-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegionInit {
    pub region: String,
    /// The index as left (`ACTIVE` unless an error stopped the set-up).
    pub index: Option<IndexInfo>,
    /// The default view's ARN, where this run looked at it.
    pub default_view: Option<String>,
    /// What this run changed (empty: everything existed).
    pub changes: Vec<Change>,
    /// Why the set-up stopped, when it did.
    pub error: Option<Evidence>,
}

/// One change `catalog init` made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    CreatedIndex,
    PromotedToAggregator,
    CreatedView { arn: String },
    AssociatedDefaultView { arn: String },
}

/// Set up `regions` as `plan` says (see the module docs).
pub async fn init(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    regions: &[String],
    plan: &InitPlan,
) -> InitReport {
    let mut out: Vec<RegionInit> = stream::iter(regions)
        .map(|region| index_region(gate, sdk, ctx, region))
        .buffer_unordered(INIT_WORKERS)
        .collect()
        .await;
    out.sort_by(|a, b| a.region.cmp(&b.region));
    if let Some(aggregator) = &plan.aggregator {
        match out.iter_mut().find(|r| &r.region == aggregator) {
            Some(r) if r.error.is_none() => promote(gate, sdk, ctx, r).await,
            Some(_) => {}
            None => out.push(refused(
                aggregator,
                "the aggregator region is not one of --regions",
            )),
        }
    }
    let view_regions = out
        .iter_mut()
        .filter(|r| r.error.is_none())
        .filter(|r| plan.aggregator.as_ref().is_none_or(|a| a == &r.region));
    for r in view_regions {
        if let Err(e) = default_view(gate, sdk, ctx, r).await {
            r.error = Some(Evidence::of(&e));
        }
    }
    out.sort_by(|a, b| a.region.cmp(&b.region));
    InitReport { regions: out }
}

fn refused(region: &str, message: &str) -> RegionInit {
    RegionInit {
        region: region.to_owned(),
        index: None,
        default_view: None,
        changes: Vec::new(),
        error: Some(Evidence {
            probe: "UpdateIndexType".into(),
            kind: "refused".into(),
            code: None,
            message: message.to_owned(),
            attempts: 0,
        }),
    }
}

/// One set-up call: charged to the region's operation key and set-up's allowance.
macro_rules! setup_call {
    ($gate:expr, $ctx:expr, $region:expr, $op:literal, |$http:ident| $send:expr) => {
        $gate.call_with_allowance(
            $ctx,
            (SERVICE, $op),
            Some($region),
            SETUP_ALLOWANCE,
            |$http| $send,
        )
    };
}

/// Ensure `region` has an `ACTIVE` index.
async fn index_region(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
) -> RegionInit {
    let mut out = RegionInit {
        region: region.to_owned(),
        index: None,
        default_view: None,
        changes: Vec::new(),
        error: None,
    };
    match ensure_index(gate, sdk, ctx, region, &mut out.changes).await {
        Ok(index) => out.index = Some(index),
        Err(e) => out.error = Some(Evidence::of(&e)),
    }
    out
}

async fn ensure_index(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
    changes: &mut Vec<Change>,
) -> Result<IndexInfo, CallError> {
    let client = client(sdk, region);
    let listed = setup_call!(gate, ctx, region, "ListIndexes", |http| client
        .list_indexes()
        .regions(region)
        .customize()
        .config_override(through(http))
        .send())
    .await?;
    let exists = listed.indexes().iter().any(|i| i.region() == Some(region));
    if !exists {
        let created = setup_call!(gate, ctx, region, "CreateIndex", |http| client
            .create_index()
            .customize()
            .config_override(through(http))
            .send())
        .await;
        match created {
            Ok(_) => changes.push(Change::CreatedIndex),
            Err(e) if e.code() == Some("ConflictException") => {}
            Err(e) => return Err(e),
        }
    }
    wait_active(gate, &client, ctx, region).await
}

/// Poll `GetIndex` until the region's index is `ACTIVE`, within the deadline.
async fn wait_active(
    gate: &AwsGate,
    client: &aws_sdk_resourceexplorer2::Client,
    ctx: &CallContext,
    region: &str,
) -> Result<IndexInfo, CallError> {
    loop {
        let got = setup_call!(gate, ctx, region, "GetIndex", |http| client
            .get_index()
            .customize()
            .config_override(through(http))
            .send())
        .await?;
        let state = got.state().cloned();
        if state == Some(IndexState::Active) {
            return Ok(IndexInfo {
                arn: got.arn().unwrap_or_default().to_owned(),
                kind: got.r#type().map_or("", |t| t.as_str()).to_owned(),
                state: IndexState::Active.as_str().to_owned(),
            });
        }
        let waiting = |kind, what: &str| {
            let state = state.as_ref().map_or("unknown", |s| s.as_str());
            let message = format!("{what} while the index in {region} is {state}");
            CallError::in_answer(kind, "GetIndex", None, message)
        };
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(waiting(CallErrorKind::Cancelled, "cancelled")),
            _ = tokio::time::sleep_until(ctx.deadline) => {
                return Err(waiting(CallErrorKind::DeadlineExceeded, "the deadline passed"))
            }
            _ = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

/// Make `r`'s index the account's aggregator unless it is, or another region's is.
async fn promote(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    r: &mut RegionInit,
) {
    let region = r.region.clone();
    let client = client(sdk, &region);
    let result = async {
        let aggregators = setup_call!(gate, ctx, &region, "ListIndexes", |http| client
            .list_indexes()
            .r#type(IndexType::Aggregator)
            .customize()
            .config_override(through(http))
            .send())
        .await?;
        let elsewhere = aggregators
            .indexes()
            .iter()
            .filter_map(|i| i.region())
            .find(|other| *other != region)
            .map(str::to_owned);
        let here = aggregators
            .indexes()
            .iter()
            .any(|i| i.region() == Some(&region));
        if here || elsewhere.is_some() {
            return Ok(elsewhere);
        }
        let arn = r.index.as_ref().map(|i| i.arn.clone()).unwrap_or_default();
        setup_call!(gate, ctx, &region, "UpdateIndexType", |http| client
            .update_index_type()
            .arn(&arn)
            .r#type(IndexType::Aggregator)
            .customize()
            .config_override(through(http))
            .send())
        .await?;
        r.changes.push(Change::PromotedToAggregator);
        r.index = Some(wait_active(gate, &client, ctx, &region).await?);
        Ok(None)
    }
    .await;
    match result {
        Ok(None) => {}
        Ok(Some(other)) => {
            let message = format!(
                "the account's aggregator index is in {other}; make it LOCAL there first to move it (AWS allows one aggregator)"
            );
            r.error = refused(&region, &message).error;
        }
        Err(e) => r.error = Some(Evidence::of(&e)),
    }
}

/// Ensure `r`'s region has a default view: [`VIEW_NAME`], made or found, associated.
async fn default_view(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    r: &mut RegionInit,
) -> Result<(), CallError> {
    let region = r.region.clone();
    let client = client(sdk, &region);
    let current = setup_call!(gate, ctx, &region, "GetDefaultView", |http| client
        .get_default_view()
        .customize()
        .config_override(through(http))
        .send())
    .await?;
    if let Some(arn) = current.view_arn().filter(|a| !a.is_empty()) {
        r.default_view = Some(arn.to_owned());
        return Ok(());
    }
    let arn = match own_view(gate, &client, ctx, &region).await? {
        Some(arn) => arn,
        None => {
            let created = setup_call!(gate, ctx, &region, "CreateView", |http| client
                .create_view()
                .view_name(VIEW_NAME)
                .customize()
                .config_override(through(http))
                .send())
            .await?;
            let arn = created
                .view()
                .and_then(|v| v.view_arn())
                .unwrap_or_default()
                .to_owned();
            r.changes.push(Change::CreatedView { arn: arn.clone() });
            arn
        }
    };
    setup_call!(gate, ctx, &region, "AssociateDefaultView", |http| client
        .associate_default_view()
        .view_arn(&arn)
        .customize()
        .config_override(through(http))
        .send())
    .await?;
    r.changes
        .push(Change::AssociatedDefaultView { arn: arn.clone() });
    r.default_view = Some(arn);
    Ok(())
}

/// The ARN of the region's view named [`VIEW_NAME`], if one exists (every page).
async fn own_view(
    gate: &AwsGate,
    client: &aws_sdk_resourceexplorer2::Client,
    ctx: &CallContext,
    region: &str,
) -> Result<Option<String>, CallError> {
    let marker = format!(":view/{VIEW_NAME}/");
    let mut token: Option<String> = None;
    loop {
        let page = setup_call!(gate, ctx, region, "ListViews", |http| client
            .list_views()
            .set_next_token(token.clone())
            .customize()
            .config_override(through(http))
            .send())
        .await?;
        if let Some(arn) = page.views().iter().find(|v| v.contains(&marker)) {
            return Ok(Some(arn.clone()));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => return Ok(None),
        }
    }
}
