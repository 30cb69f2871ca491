//! The Cloud Control sweep: any CloudFormation type Cloud Control can list, through
//! `ListResources` (pages of 25, `NextToken` to the end), every call charged to Cloud
//! Control's own key **and** to the operations the type's handler performs (issue 33).
//!
//! Why charge the underlying operations? AWS executes a Cloud Control call as calls to
//! the underlying service with the caller's credentials ("Cloud Control API must make
//! calls to the underlying AWS services"), so a sweep of `AWS::IAM::Role` spends
//! `iam:ListRoles`, the quota every other IAM reader of the account shares. Each page is
//! therefore admitted on `cloudcontrol:ListResources` and one token of each operation in
//! the type's `handlers.list.permissions` ([`schemas`]) at one instant
//! ([`AwsGate::call_with_underlying`](tollgate_engine::aws::AwsGate::call_with_underlying)).
//! [`Charges::OwnKeyOnly`] turns that off, to measure what it prevents.
//!
//! Items use the model every collector fills ([`model`]). A global type (IAM,
//! CloudFront, Route 53) is listed once per account, in the scan's first region, its
//! items in region `global`: Cloud Control answers it in every region.
//!
//! # Layout
//! - [`listing`]: one `ListResources` listing to its last page.
//! - [`parents`]: types that need a parent (EKS node groups, Lambda aliases): what they
//!   list under ([`ParentListing`]) and the decisions about it; [`children`] lists them,
//!   once per parent item of the same scan.
//! - [`details`]: `--details`, one `GetResource` per identifiers-only item, charged to
//!   `cloudcontrol:GetResource` and the type's `handlers.read.permissions`.
//! - [`failure`]: how a failed call leaves the type's coverage (unsupported, denied,
//!   partial, failed; gone).
//! - [`model`]: a resource description as an item.
//! - [`schemas`]: the checked-in type table.

mod children;
mod details;
mod failure;
mod listing;
mod model;
mod parents;
pub mod schemas;

use crate::operation;
use crate::output::{Coverage, DatasetReport};
use crate::resource::GLOBAL;
use crate::{CollectorRun, Operation, ReportBuilder};
use schemas::CcType;

pub use details::Details;
pub use failure::{failure_status, is_gone};
pub use parents::{ParentListing, ParentModel, ParentRegion};
pub use schemas::{find, table};

/// Cloud Control's listing.
pub const LIST_RESOURCES: Operation = operation!("cloudcontrol", "ListResources");

/// Cloud Control's read of one resource (`--details`).
pub const GET_RESOURCE: Operation = operation!("cloudcontrol", "GetResource");

/// The telemetry collector of every sweep call (`Dataset::collector` of its datasets).
pub const COLLECTOR: &str = "cloudcontrol";

/// What a Cloud Control call is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Charges {
    /// Cloud Control's own key and one token of each underlying operation (the default).
    #[default]
    Underlying,
    /// Cloud Control's own key alone: what every other tool does. A diagnostic control
    /// (`TOLLGATE_CLOUDCONTROL_CHARGES=own-key`), to show what the underlying charge
    /// prevents.
    OwnKeyOnly,
}

impl Charges {
    /// From `TOLLGATE_CLOUDCONTROL_CHARGES` (`own-key`; anything else, or unset, is the
    /// default).
    pub fn from_env() -> Charges {
        match std::env::var("TOLLGATE_CLOUDCONTROL_CHARGES").as_deref() {
            Ok("own-key") => Charges::OwnKeyOnly,
            _ => Charges::Underlying,
        }
    }
}

/// Collect `ty` over the scan's regions (once, in the first, for a global type).
pub async fn collect(run: &CollectorRun, ty: &'static CcType) -> DatasetReport {
    if !ty.global {
        return run
            .per_region(&ty.type_name, |run, region| collect_region(run, ty, region))
            .await;
    }
    let mut out = collect_region(run, ty, run.home_region()).await;
    if run.is_cancelled() {
        out.cancelled();
    }
    out.finish()
}

/// One region's listing (top-level, or under every parent item), its identifiers-only
/// items read in full with `--details`, and its coverage entry.
async fn collect_region(run: &CollectorRun, ty: &'static CcType, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let item_region = if ty.global { GLOBAL } else { region };
    let outcome = if ty.parent.is_empty() {
        let decided = match listing::list(run, ty, region, item_region, None, &mut out).await {
            Ok(()) => None,
            Err(e) => failure::note_listing_failure(&mut out, &e),
        };
        children::ChildOutcome {
            decided,
            floor: None,
        }
    } else {
        children::list_under_parents(run, ty, region, item_region, &mut out).await
    };
    details::read_identifiers_only(run, ty, region, item_region, &mut out).await;
    if run.is_cancelled() {
        out.cancelled();
    }
    let account = run.account();
    let own: Coverage = out.coverage_entry(
        &ty.type_name,
        account.as_deref(),
        item_region,
        out.len() as u64,
    );
    out.covered(parents::settle(own, outcome.decided, outcome.floor));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_name_is_the_datasets() {
        let role: crate::Dataset = "AWS::IAM::Role".parse().unwrap();
        assert_eq!(role.collector(), COLLECTOR);
    }
}
