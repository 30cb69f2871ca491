//! tollgate's long-running discovery service: `tollgate serve` runs it beside the
//! coordinator role. It takes scan requests over an HTTP API (or from its configuration),
//! runs them through the engine's [`Discovery`](tollgate_scan::Discovery) — so every
//! AWS call passes the same admission gate as every `tollgate discover` of the user —
//! and keeps their records and reports in a history that survives restarts.
//!
//! # Layout
//! - [`client`]: [`ServiceClient`], what `tollgate scans` talks to the API with.
//! - [`config`]: the TOML file, read in two stages into a [`ServiceConfig`].
//! - [`scan_request`]: request fields → the engine's validated request; [`JoinKey`].
//! - [`manager`]: [`ScanManager`] — submit (join identical running scans), queue past
//!   `max_concurrent_scans`, cancel, store results, forget them in the supervisor.
//! - [`http`]: the actix-web API, its token check and the live page.
//! - [`metrics`]: [`ServiceMetrics`], the Prometheus exposition (label cardinality
//!   bounded with many accounts).
//! - [`activity`]: [`Activity`](activity::Activity), per key admissions and throttled
//!   responses over the last five minutes in a small ring (the live page's charts).
//! - [`history`]: [`History`], sled under the state directory; retention.
//! - [`record`]: [`ScanRecord`] and its API views.
//! - [`scheduler`]: fires `[[schedule]]` targets; the pure [`scheduler::decide`].
//! - [`state_dir`]: [`StateDir`] resolution and checks; [`token`]: [`ApiToken`].
//! - `run`: [`RunningService`], everything wired, started and stopped in order.
//! - `serve`: [`serve_until`], the coordinator role and the service beside it until a
//!   shutdown future resolves (waiting for the role, handing it over); `tollgate serve`
//!   only parses, calls it and prints its [`ServeEvent`]s.
//! - `duration`: `90s`, `5m`, `2d` parsing, the one guarded parser (the CLI's too).
#![forbid(unsafe_code)]

pub mod activity;
pub mod client;
pub mod config;
mod duration;
pub mod history;
pub mod http;
pub mod manager;
pub mod metrics;
pub mod record;
mod run;
pub mod scan_request;
pub mod scheduler;
mod serve;
pub mod state_dir;
pub mod token;

pub use client::{ClientError, ServiceClient};
pub use config::{ConfigError, Retention, ServiceConfig};
pub use duration::{duration_from_seconds, parse_duration, DurationError};
pub use history::{History, HistoryError};
pub use manager::{ManagerDeps, ManagerError, ScanManager, Submitted};
pub use metrics::ServiceMetrics;
pub use record::{ScanRecord, ScanStatus};
pub use run::{RunningService, ServiceError, ServiceOptions};
pub use scan_request::{JoinKey, ScanFields};
pub use serve::{serve_until, ServeError, ServeEvent, ServeSetup, WAIT_FOR_ROLE};
pub use state_dir::{StateDir, StateDirEnv, STATE_DIR_ENV};
pub use token::ApiToken;
