//! The Resource Explorer catalog (seed 000): what each region's index and default view
//! say ([`status`]), and the explicit set-up that creates them ([`setup`]).
//!
//! Every call goes through the gate under the regional `resource-explorer-2:non-search`
//! budget (seed 000: 3/s, burst 1, shared by catalog reads, status, supported-type
//! listing, set-up mutations and polls); `Search` has its own key. Status probes give
//! up after [`status::PROBE_ATTEMPTS`] physical attempts, each admitted, and report the
//! region `unavailable` with the evidence, so one unreachable region neither stalls the
//! command nor spends the retries a scan's collection would need.
//!
//! # Layout
//! - [`model`]: what status reports (per region: index, default view, or why not).
//! - [`status`]: the regional probes, at most [`status::STATUS_WORKERS`] at once.
//! - [`setup`]: `catalog init`: indexes, the aggregator, the default view.
//! - [`search`]: catalog collection for `discover --catalog` (types and regions that
//!   hold resources); [`plan`]: which datasets such a scan loads, and where.

pub mod model;
pub mod plan;
pub mod search;
pub mod setup;
pub mod status;

pub use model::{Evidence, IndexInfo, RegionState, RegionStatus, ViewInfo};

/// The service name of the gate's keys.
pub const SERVICE: &str = "resource-explorer-2";

/// A Resource Explorer client for `region` from the scan's SDK configuration.
pub fn client(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_resourceexplorer2::Client {
    aws_sdk_resourceexplorer2::Client::from_conf(
        aws_sdk_resourceexplorer2::config::Builder::from(sdk)
            .region(aws_config::Region::new(region.to_owned()))
            .build(),
    )
}

/// The per-attempt override that sends a request through the gate's client.
pub(crate) fn through(
    http: tollgate_engine::aws::GatedHttpClient,
) -> aws_sdk_resourceexplorer2::config::Builder {
    aws_sdk_resourceexplorer2::Config::builder().http_client(http)
}
