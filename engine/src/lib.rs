//! tollgate's gated AWS call path: configuration validated once at the edge, an
//! [`Engine`] that owns the admission directory for this process, and [`aws`], the path
//! every SDK request takes (admission, the gated HTTP client, the retry owner,
//! telemetry). What is collected and how scans run are the crates above this one:
//! `tollgate-collectors` (one collector per dataset, the report's resource model) and
//! `tollgate-scan` (scan context, supervisor, organization scans, `Discovery`). This
//! crate compiles one service's SDK, STS, which the call path itself needs (identity,
//! `AssumeRole`). `tollgate replay` (a dry run on a paused clock) is the
//! `tollgate-replay` crate, so this one carries no simulator and no paused clock.
//!
//! # Layout
//! - [`config`]: `EngineConfig` — admission directory and quota policies, validated.
//! - [`engine`]: `Engine` — opens the admission directory and runs the quota actors.
//! - [`aws`]: `AwsGate::call`, the gated SDK HTTP client, retries, credentials, identity,
//!   `AssumeRole`, telemetry.
//! - [`throttling`]: the per-key "throttled gaps" tally and the report's `throttling`
//!   block; [`fleet_degraded`]: the report's note of keys whose fleet admission degraded
//!   during the scan; [`report`]: those report pieces' types and the RFC 3339 stamps.
#![forbid(unsafe_code)]

pub mod aws;
mod clock;
pub mod config;
pub mod engine;
pub mod fleet_degraded;
pub mod report;
pub mod throttling;

pub use config::{breakers_from_env, ConfigError, EngineConfig, BREAKERS_ENV};
pub use engine::{Engine, EngineError};
