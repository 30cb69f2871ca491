//! `FleetStore`: the two operations fleet mode needs from its table.

use std::future::Future;
use std::pin::Pin;

use tollgate_quota::fleet::FleetItem;

/// A boxed future answering a store operation.
pub type FleetFuture<T> = Pin<Box<dyn Future<Output = Result<T, FleetError>> + Send>>;

/// An item with the version its conditional write checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    pub item: FleetItem,
    pub version: u64,
}

/// What a conditional put did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// Written; the item now has this version.
    Written(u64),
    /// Someone else wrote first (the version differed): read again.
    Conflict,
}

/// A shared table of fleet items, one per canonical key.
pub trait FleetStore: Send + Sync + 'static {
    /// The item of `key`, if there is one.
    fn get(&self, key: &str) -> FleetFuture<Option<Versioned>>;
    /// Write `item` for `key` if its version is still `expected` (`None`: if it does not
    /// exist yet); the written item has version `expected + 1` (or 1).
    fn put(&self, key: &str, item: &FleetItem, expected: Option<u64>) -> FleetFuture<PutOutcome>;
    /// "DynamoDB table NAME (region R)", for messages.
    fn describe(&self) -> String;
}

/// Why the table could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FleetErrorKind {
    /// No answer (connection refused, timeout, DNS).
    Unreachable,
    /// ProvisionedThroughputExceededException, ThrottlingException, RequestLimitExceeded.
    Throttled,
    /// AccessDenied / UnrecognizedClientException / missing credentials.
    AccessDenied,
    /// The table does not exist.
    NoTable,
    /// Too many conflicting writers in a row.
    Contention,
    /// Anything else (a malformed item, an unexpected error).
    Other,
}

/// A failed store operation: kind, the table, the underlying message, what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetError {
    pub kind: FleetErrorKind,
    /// The table, as [`FleetStore::describe`] says it.
    pub table: String,
    pub message: String,
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fleet {}: {:?}: {}; {}",
            self.table,
            self.kind,
            self.message,
            self.kind.hint()
        )
    }
}

impl std::error::Error for FleetError {}

impl FleetErrorKind {
    fn hint(self) -> &'static str {
        match self {
            FleetErrorKind::Unreachable => {
                "check TOLLGATE_FLEET_ENDPOINT_URL / TOLLGATE_FLEET_REGION and the network"
            }
            FleetErrorKind::Throttled => {
                "the table is throttled; it is on-demand if `tollgate fleet init` created it"
            }
            FleetErrorKind::AccessDenied => {
                "grant the IAM policy `tollgate fleet init` prints to these credentials"
            }
            FleetErrorKind::NoTable => "create it with `tollgate fleet init --table NAME`",
            FleetErrorKind::Contention => {
                "too many hosts wrote the same key at once; this is retried"
            }
            FleetErrorKind::Other => "see the message; `tollgate fleet status` shows the items",
        }
    }
}
