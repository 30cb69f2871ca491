//! tollgate: AWS resource discovery where every API call passes one admission gate.
//!
//! This crate is the facade: it re-exports the engine API for programs that embed
//! tollgate, and hosts the `tollgate` command-line binary.
//!
//! # Layout
//! - `quota` ([`tollgate_quota`]): pure admission maths — keys, policies, state machine.
//! - `storage` ([`tollgate_storage`]): admission directory, sled store, coordinator lock.
//! - `actors` ([`tollgate_actors`]): quota actors, registry, admission handle.
//! - `engine` ([`tollgate_engine`]): configuration, the `Engine` and the gated AWS call
//!   path (retries, telemetry, throttling tally).
//! - `collectors` ([`tollgate_collectors`]): one collector per dataset, the report model.
//! - `scan` ([`tollgate_scan`]): the scan context, supervisor, organization scans and the
//!   `Discovery` runtime.
//! - `src/main.rs` and `src/cli/`: the thin CLI.
//! - `bench/` (crate `tollgate-bench`, its own executable): the benchmarks and their
//!   worker processes; `tollgate bench ...` forwards to it.
#![forbid(unsafe_code)]

pub use tollgate_actors as actors;
pub use tollgate_collectors as collectors;
pub use tollgate_engine as engine;
pub use tollgate_quota as quota;
pub use tollgate_scan as scan;
pub use tollgate_storage as storage;

pub use tollgate_actors::{AdmissionError, AdmissionHandle, ReservationGuard, WaitOptions};
pub use tollgate_collectors::{Dataset, DatasetStatus, DiscoveryReport};
pub use tollgate_engine::{Engine, EngineConfig, EngineError};
pub use tollgate_scan::{Discovery, DiscoveryRequest, EngineDiscovery, ScanHandle};
