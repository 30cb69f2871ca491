//! `BreakerStore`: the fleet table as the breaker board uses it, one item per breaker
//! scope beside the quota items; an in-memory implementation for paused-time tests; and
//! [`update`], the read-rule-write loop around the pure rules of
//! `tollgate_quota::breaker_fleet`.
//!
//! Why a trait of its own and not [`FleetStore`](super::FleetStore): the items differ
//! (a breaker is a handful of instants, not token blocks), and a coordinator that shares
//! its breakers needs nothing of the quota protocol. The DynamoDB implementation lives
//! in `tollgate-fleet` on the same table (item key `breaker#<scope>`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tollgate_quota::breaker_fleet::{Change, FleetBreaker};
use tollgate_quota::fleet::HostId;
use tollgate_quota::{BreakerScope, Clock, Timestamp};

use super::store::{FleetError, FleetErrorKind, FleetFuture, PutOutcome};

/// A breaker item with the version its conditional write checks.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionedBreaker {
    pub item: FleetBreaker,
    pub version: u64,
}

/// A shared table of breaker items, one per scope.
pub trait BreakerStore: Send + Sync + 'static {
    /// The item of `scope`, if there is one (strongly consistent).
    fn get_breaker(&self, scope: &BreakerScope) -> FleetFuture<Option<VersionedBreaker>>;
    /// Write `item` if the version is still `expected` (`None`: if there is no item yet).
    fn put_breaker(
        &self,
        scope: &BreakerScope,
        item: &FleetBreaker,
        expected: Option<u64>,
    ) -> FleetFuture<PutOutcome>;
    /// "DynamoDB table NAME (region R)", for messages.
    fn describe_breakers(&self) -> String;
}

/// What a coordinator's breaker board needs to share its breakers with the fleet.
#[derive(Clone)]
pub struct BreakerLink {
    /// The shared table.
    pub store: Arc<dyn BreakerStore>,
    /// This host's id on the probe claims.
    pub host: HostId,
}

impl std::fmt::Debug for BreakerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerLink")
            .field("store", &self.store.describe_breakers())
            .field("host", &self.host)
            .finish()
    }
}

/// Conditional writes tried per change before giving up with `Contention`.
pub const MAX_WRITES: u32 = 4;

/// Read the scope's item, apply `rule` at the clock's now, write what it decided on
/// condition of the version; on a conflict read again (at most [`MAX_WRITES`] writes).
/// Returns the rule's answer for the item as finally read or written.
pub async fn update<T, R>(
    store: Arc<dyn BreakerStore>,
    scope: BreakerScope,
    clock: Arc<dyn Clock>,
    rule: R,
) -> Result<T, FleetError>
where
    R: Fn(Option<&FleetBreaker>, Timestamp) -> Change<T>,
{
    for _ in 0..MAX_WRITES {
        let read = store.get_breaker(&scope).await?;
        let change = rule(read.as_ref().map(|v| &v.item), clock.now());
        let Some(item) = change.write else {
            return Ok(change.answer);
        };
        match store
            .put_breaker(&scope, &item, read.map(|v| v.version))
            .await?
        {
            PutOutcome::Written(_) => return Ok(change.answer),
            PutOutcome::Conflict => continue,
        }
    }
    Err(FleetError {
        kind: FleetErrorKind::Contention,
        table: store.describe_breakers(),
        message: format!("{MAX_WRITES} conditional writes on breaker {scope} lost to other hosts"),
    })
}

/// An in-memory breaker table: conditional puts are atomic under one mutex. A test can
/// make it fail and count the requests it served.
#[derive(Debug, Default)]
pub struct MemoryBreakerStore {
    items: Mutex<HashMap<BreakerScope, VersionedBreaker>>,
    failing: Mutex<Option<FleetErrorKind>>,
    requests: AtomicU64,
}

impl MemoryBreakerStore {
    /// An empty table.
    pub fn new() -> Self {
        MemoryBreakerStore::default()
    }

    /// Make every request fail with `kind` (`None`: answer again).
    pub fn fail_with(&self, kind: Option<FleetErrorKind>) {
        *self.failing.lock().unwrap() = kind;
    }

    /// Requests served (failed ones included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The item of `scope`.
    pub fn item(&self, scope: &BreakerScope) -> Option<VersionedBreaker> {
        self.items.lock().unwrap().get(scope).cloned()
    }

    fn check(&self) -> Result<(), FleetError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match *self.failing.lock().unwrap() {
            Some(kind) => Err(FleetError {
                kind,
                table: self.describe_breakers(),
                message: "the test table is set to fail".into(),
            }),
            None => Ok(()),
        }
    }
}

impl BreakerStore for MemoryBreakerStore {
    fn get_breaker(&self, scope: &BreakerScope) -> FleetFuture<Option<VersionedBreaker>> {
        let result = self.check().map(|()| self.item(scope));
        Box::pin(async move { result })
    }

    fn put_breaker(
        &self,
        scope: &BreakerScope,
        item: &FleetBreaker,
        expected: Option<u64>,
    ) -> FleetFuture<PutOutcome> {
        let result = self.check().map(|()| {
            let mut items = self.items.lock().unwrap();
            if items.get(scope).map(|v| v.version) != expected {
                return PutOutcome::Conflict;
            }
            let version = expected.unwrap_or(0) + 1;
            let item = item.clone();
            items.insert(scope.clone(), VersionedBreaker { item, version });
            PutOutcome::Written(version)
        });
        Box::pin(async move { result })
    }

    fn describe_breakers(&self) -> String {
        "in-memory test table".into()
    }
}
