//! Organization scans: every member account of an AWS Organization, one deadline, one
//! report, one shared gate.
//!
//! The caller (the management account or a delegated administrator) lists the members
//! with Organizations `ListAccounts`, keeps the `ACTIVE` ones the account filters allow,
//! and scans each through STS `AssumeRole` into `arn:<partition>:iam::<id>:role/<name>`;
//! its own account is scanned with its own credentials. Each member's scan is an
//! ordinary supervisor scan, so its quota keys are the member's own and its report is
//! exactly the single-account report.
//!
//! Why the hub matters: the listing and every member's role credentials are calls of the
//! *caller's* account (Organizations is global; STS is per region, and for cross-account
//! `AssumeRole` only the calling account's quota counts), so they are the one budget the
//! whole organization shares. They go through the gate under the caller's account like
//! every other call, and each member's credentials are fetched once, cached, and
//! refreshed through the same gated path before they expire ([`credentials`]): an
//! organization of 1,000 accounts makes 1,000 `AssumeRole` calls per scan.
//!
//! # Layout
//! - [`request`]: `OrganizationRequest` (role, account filters, accounts in flight),
//!   validated once.
//! - [`select`]: which listed accounts are scanned and why the others are skipped (pure).
//! - [`schedule`]: when the next account starts (pure): at most N in flight, listed
//!   order, nothing after the deadline or a cancellation.
//! - [`listing`]: `DescribeOrganization` and `ListAccounts` (every page) through the gate.
//! - [`credentials`]: `RoleCredentials`, one member's cached, gated `AssumeRole`.
//! - [`progress`]: per-account progress, readable at any time without a message.
//! - [`report`]: `OrganizationReport`, the one JSON document.
//! - [`spool`]: `AccountReports`, the scanned accounts' reports written to a spool file
//!   as each finishes (memory follows the accounts in flight, not the items found).
//! - [`machine`]: the loop as a state machine (pure): events in, actions out.
//! - [`run`]: the scan itself, on the discovery runtime's actor thread: the scan
//!   context, the listing, the driver of the machine, one task per account.
//! - [`handle`]: `OrganizationHandle`: progress, cancellation, the report.

pub mod credentials;
pub mod handle;
pub mod listing;
pub mod machine;
pub mod progress;
pub mod report;
pub mod request;
pub(crate) mod run;
pub mod schedule;
pub mod select;
pub mod spool;

pub use handle::OrganizationHandle;
pub use progress::{AccountPhase, AccountProgress, OrganizationProgress};
pub use report::{OrganizationReport, OrganizationSummary, SkipReason, SkippedAccount};
pub use request::{
    AccountFilter, OrganizationRequest, OrganizationRequestError, DEFAULT_MAX_ACCOUNTS_IN_FLIGHT,
    DEFAULT_ROLE_NAME,
};
pub use spool::{AccountDigest, AccountReports, SpoolError};
