//! tollgate's engine facade: configuration from the environment, and an [`Engine`] that
//! owns the admission directory for this process and hands out admission handles.
//!
//! The AWS side (gated SDK transport, retry owner, collectors, telemetry) arrives with the
//! discovery issue; this crate already fixes where configuration is validated (once, at
//! the edge, before any AWS call) and how a process joins admission.
//!
//! # Layout
//! - [`config`]: `EngineConfig` — admission directory and quota policies, validated.
//! - [`engine`]: `Engine` — opens the admission directory and runs the quota actors.
#![forbid(unsafe_code)]

pub mod aws;
pub mod config;
pub mod engine;

pub use config::{ConfigError, EngineConfig};
pub use engine::{Engine, EngineError};
