//! The AWS call path: every SDK request passes one admission gate.
//!
//! Collectors build SDK clients from [`sdk_config`] and send every request through
//! [`AwsGate::call`]. The gate takes the operation's concurrency reservation, and its
//! connector ([`GateDispatch`], or a per-attempt [`GatedHttpClient`]) awaits final admission for each physical attempt after the SDK has
//! signed the request and just before it goes out. The engine, not the SDK, owns retries
//! (SDK `max_attempts = 1`): at most 6 attempts, jittered backoff never shorter than the
//! server's `Retry-After`, each retry spending a unit of the key's shared allowance.
//!
//! # Layout
//! - [`call`]: `AwsGate`, the API collectors use.
//! - `context`: `CallContext`, `ScanId` (who a call is for, what bounds it) and the
//!   gate's shared parts, read by both the gate and the retry owner.
//! - [`gated`]: the connector that awaits admission (`gate_and_send`), one preparation's
//!   record, `GatedHttpClient` for per-attempt overrides; the 4-minute signed-request bound.
//! - [`dispatch`]: `GateDispatch`, the HTTP client installed once in every client built
//!   from `sdk_config`, which finds its attempt in a task-local and refuses outside one.
//! - [`retry`]: the retry owner: one call's reservation, attempts and feedback; its pure
//!   `decide` says what follows each attempt.
//! - `metric_data`: a GetMetricData call's datapoint budgets, and each attempt's charge.
//! - [`underlying`]: the underlying operations a Cloud Control call charges beside its own key.
//! - `unfiltered`: an EC2 read's smaller `:unfiltered` budget, charged when the request
//!   as sent carries neither a filter nor pagination.
//! - `sdk_error`: what a failed SDK call says (code, message, status), classified.
//! - [`backoff`]: `RetrySettings`, full-jitter backoff, `Retry-After` parsing.
//! - [`taxonomy`]: throttled / transient / fatal / credentials, from code, then status,
//!   then kind.
//! - [`error`]: `CallError` and its `CallErrorKind`.
//! - [`credentials`]: the credentials check before a scan (`check_credentials`) and its
//!   typed `CredentialsError`; safe descriptions of credential failures (no process output).
//! - [`identity`]: STS `GetCallerIdentity` with its own budget; the unresolved fallback.
//! - [`telemetry`]: `aws: attempt` events and their sinks.
//! - [`account_credentials`]: the credentials of SDK clients an organization's member
//!   accounts share (each request signed as the account whose collector sends it).
//! - [`assume_role`]: `AssumeRole`, another account's credentials through STS on top
//!   of the base chain.
//! - `chain`: the credential chain as loaded (retries disabled, no operation timeout,
//!   credential providers on the shared inner HTTP client), before the dispatch.
//! - [`config`]: `sdk_config` (the chain with the dispatch installed), a refusing client,
//!   the clock-driven time source.

pub mod account_credentials;
pub mod assume_role;
pub mod backoff;
pub mod call;
mod chain;
pub mod config;
mod context;
pub mod credentials;
pub mod dispatch;
pub mod error;
pub mod gated;
pub mod identity;
mod metric_data;
pub mod primed;
pub(crate) mod retry;
mod sdk_error;
pub mod taxonomy;
pub mod telemetry;
pub mod underlying;
mod unfiltered;

pub use account_credentials::{in_account, AccountCredentials};
pub use assume_role::{AssumeRole, RoleError};
pub use backoff::{Jitter, RetrySettings, DEFAULT_MAX_ATTEMPTS};
pub use call::AwsGate;
pub use chain::{
    default_http_client, gated_stalled_stream_protection, gated_timeouts, CONNECT_TIMEOUT,
};
pub use config::{
    sdk_config, sdk_config_assuming, sdk_config_with, sdk_config_with_credentials, ClockTimeSource,
    UngatedRefusal,
};
/// The region used when neither the request nor the AWS configuration names one (STS
/// for `AssumeRole`, the identity call, a scan without regions).
pub const FALLBACK_REGION: &str = "us-east-1";

pub use context::{CallContext, ScanId};
pub use credentials::{
    check_credentials, check_credentials_with, CredentialsCheck, CredentialsError,
    CredentialsErrorKind, CredentialsSource, CREDENTIALS_CHECK_TIMEOUT,
};
pub use dispatch::{GateDispatch, SecondRequest, UngatedRequest};
pub use error::{CallError, CallErrorKind};
pub use gated::{GatedHttpClient, SignatureRefresh, SIGNED_REQUEST_MAX_WAIT};
pub use identity::{isolated_admission, resolve_identity, CallerIdentity};
pub use taxonomy::{classify, ErrorClass};
pub use telemetry::{
    AttemptEvent, AttemptOutcome, Attribution, CleanupOutcome, FileTelemetry, MemoryTelemetry,
    NoTelemetry, RetryOutcome, TelemetrySink,
};
