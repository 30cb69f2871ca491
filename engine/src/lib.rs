//! tollgate's AWS side: configuration validated once at the edge, an [`Engine`] that owns
//! the admission directory for this process, and discovery on top of it: the gated SDK
//! call path and retry owner ([`aws`]), one collector per dataset and the supervisor that
//! runs scans. `tollgate replay` (a dry run on a paused clock) is the `tollgate-replay`
//! crate, so this one carries no simulator and no paused clock.
//!
//! # Layout
//! - [`config`]: `EngineConfig` — admission directory and quota policies, validated.
//! - [`engine`]: `Engine` — opens the admission directory and runs the quota actors.
//! - [`discovery`]: `Discovery` — the supervisor on its own actor thread;
//!   `discover(request) -> DiscoveryReport`, scan handles with progress and cancellation.
//! - [`supervisor`]: `Supervisor` — scans, attribution, cancellation, report assembly.
//! - [`collectors`]: one actor per dataset (`s3-buckets`, `lambda-functions`,
//!   `dynamodb-tables`, `kms-keys`), every request through `AwsGate::call`.
//! - [`organization`]: organization scans — every member account through a gated,
//!   cached `AssumeRole`, fair order, one deadline, one report.
//! - [`regions`]: the AWS regions a request may name; `--regions all` (`ListRegions`).
//! - [`output`]: the JSON report; [`dataset`], [`request`]: what a scan asks for;
//!   [`throttling`]: the per-key "throttled gaps" tally; [`fleet_degraded`]: the report's
//!   note of keys whose fleet admission degraded during the scan.
#![forbid(unsafe_code)]

pub mod aws;
mod clock;
pub mod config;
pub mod engine;

pub use config::{breakers_from_env, ConfigError, EngineConfig, BREAKERS_ENV};
pub use engine::{Engine, EngineError};

// Discovery: datasets, collectors, supervisor, report.
pub mod collectors;
pub mod dataset;
pub mod discovery;
pub mod fleet_degraded;
pub mod organization;
pub mod output;
pub mod regions;
pub mod request;
mod scan_setup;
pub mod supervisor;
pub mod throttling;

pub use dataset::Dataset;
pub use discovery::{Discovery, DiscoveryError, ScanHandle};
pub use organization::{OrganizationHandle, OrganizationReport, OrganizationRequest};
pub use output::{DatasetReport, DatasetStatus, DiscoveryReport, Item};
pub use request::DiscoveryRequest;
