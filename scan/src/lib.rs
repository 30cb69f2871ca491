//! tollgate's scans, above the collectors and the gate: the scan context every scan
//! establishes once ([`scan_setup`]: SDK configuration, STS, identity, gate, regions),
//! the [`supervisor`] that starts one collector per dataset and assembles the report,
//! [`organization`] scans (every member account through a gated, cached `AssumeRole`)
//! and [`Discovery`], the runtime an embedder holds.
//!
//! The supervisor starts collectors and collectors need the gate, so the arrows are
//! `tollgate-engine` ← `tollgate-collectors` ← `tollgate-scan`: this crate names the
//! collectors directly (no registry or trait between them), since every scan runs the same
//! compiled set and a direct call keeps the dataset list checked by the compiler.
//!
//! # Layout
//! - [`request`]: `DiscoveryRequest` — what a scan asks for, validated once.
//! - [`regions`]: the AWS regions a request may name; `--regions all` (`ListRegions`).
//! - [`scan_setup`]: the one scan context, for single-account and member scans alike.
//! - [`supervisor`]: `Supervisor` — scans, attribution, cancellation, report assembly.
//! - [`organization`]: organization scans — fair order, one deadline, one report.
//! - [`catalog`]: the Resource Explorer catalog commands (`catalog status`, `catalog
//!   init`) on the scan's set-up and lifecycle.
//! - [`discovery`]: `Discovery` — the supervisor on its own actor thread;
//!   `discover(request) -> DiscoveryReport`, scan handles with progress and cancellation.
#![forbid(unsafe_code)]

pub mod catalog;
pub mod discovery;
pub mod organization;
pub mod regions;
pub mod request;
pub mod scan_setup;
pub mod supervisor;

pub use discovery::{Discovery, DiscoveryError, EngineDiscovery, ScanHandle};
pub use organization::{OrganizationHandle, OrganizationReport, OrganizationRequest};
pub use request::DiscoveryRequest;
pub use tollgate_collectors::{Dataset, DatasetReport, DatasetStatus, DiscoveryReport, Item};
