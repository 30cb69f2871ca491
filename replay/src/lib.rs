//! `tollgate replay`: a dry run of policies. A script of requests and scripted answers
//! runs through the real quota actors and the real retry owner on a simulated clock, and
//! the report says when each attempt would have been dispatched.
//!
//! Users ask "how long will a scan of N calls take under these quotas?" before touching an
//! account; the seed 000 fixtures (`fixtures/replay/`) pin tollgate's pacing to the
//! figures of the prior art. Nothing here is a model of admission: the answer comes from
//! the production path ([`AwsGate::call`](tollgate_engine::aws::AwsGate::call), the gated
//! connector, the taxonomy, the backoff, the quota actors), driven by a paused clock and a
//! scripted transport.
//!
//! Why a crate of its own: a replay runs production admission on a paused tokio clock,
//! which needs tokio's `test-util` and the simulator's scripted transport. Inside
//! `tollgate-engine` both came with every engine a user links; here only `tollgate
//! replay` (and the tests) carry them, and the engine depends on neither.
//!
//! # Layout
//! - [`script`]: the JSON format, its defaults, validation into a [`Script`].
//! - `metric_data`: a GetMetricData request's `metric_data` (queries and window), whose
//!   attempts also charge a datapoint budget.
//! - `serde_message`: serde's error text without its position, for both of those.
//! - `transport`: the scripted inner HTTP client (awsJson 1.1 answers).
//! - [`runner`]: the paused actix system, processes, timeline, cancellation.
//! - [`report`]: results, totals, JSON and the table.

#![forbid(unsafe_code)]

use std::fmt;

mod metric_data;
pub mod report;
pub mod runner;
pub mod script;
mod serde_message;
mod transport;

pub use report::{AttemptReport, AttemptResult, Report, RequestReport, RequestResult, Totals};
pub use runner::{run, ReplayOptions, DEFAULT_SEED};
pub use script::{Script, ScriptedOutcome, ScriptedRequest, ScriptedResponse};

/// A script that cannot be replayed: where (`requests[3] (id "r4").responses[0]`) and
/// what is wrong, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The field, when the problem has one.
    pub location: Option<String>,
    /// What is wrong and how to fix it.
    pub problem: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(at) => write!(f, "{at}: {}", self.problem),
            None => f.write_str(&self.problem),
        }
    }
}

impl std::error::Error for ScriptError {}

/// Why a replay did not produce a report.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The script is invalid.
    #[error("invalid replay script: {0}")]
    Script(#[from] ScriptError),
    /// The simulation itself failed (a bug, not the script's fault).
    #[error("the replay could not run: {0}")]
    Runtime(String),
}
