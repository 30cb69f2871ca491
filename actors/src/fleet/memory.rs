//! `MemoryFleetStore`: a fleet table in memory, for paused-time tests of the actors.
//!
//! Conditional puts are atomic under one mutex, like DynamoDB's single-item conditional
//! writes. A test can make it fail (as an unreachable or throttled table would) and count
//! the requests it served. With [`MemoryFleetStore::with_latency`] each request takes a
//! round trip of (paused) time and is applied halfway, as a real table's is: hosts then
//! race and lose conditional writes as they do on DynamoDB, which a table answering at
//! once (every read and write in one poll) never shows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tollgate_quota::fleet::FleetItem;

use super::store::{FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, Versioned};

/// An in-memory fleet table.
#[derive(Debug, Default)]
pub struct MemoryFleetStore {
    table: Arc<Table>,
    latency: Duration,
}

#[derive(Debug, Default)]
struct Table {
    items: Mutex<HashMap<String, Versioned>>,
    failing: Mutex<Option<FleetErrorKind>>,
    requests: AtomicU64,
    conflicts: AtomicU64,
}

impl MemoryFleetStore {
    /// An empty table.
    pub fn new() -> Self {
        MemoryFleetStore::default()
    }

    /// An empty table whose every request takes `round_trip` of tokio time, applied
    /// halfway (use in paused time).
    pub fn with_latency(round_trip: Duration) -> Self {
        MemoryFleetStore {
            latency: round_trip,
            ..MemoryFleetStore::default()
        }
    }

    /// Make every request fail with `kind` (`None`: answer again).
    pub fn fail_with(&self, kind: Option<FleetErrorKind>) {
        *self.table.failing.lock().unwrap() = kind;
    }

    /// Requests served (gets and puts, failed ones included).
    pub fn requests(&self) -> u64 {
        self.table.requests.load(Ordering::Relaxed)
    }

    /// Conditional writes refused because another write came first.
    pub fn conflicts(&self) -> u64 {
        self.table.conflicts.load(Ordering::Relaxed)
    }

    /// The item of `key`.
    pub fn item(&self, key: &str) -> Option<Versioned> {
        self.table.item(key)
    }

    /// `op` applied to the table at once, or half a round trip after the call and
    /// answered half a round trip later.
    fn answer<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Table) -> Result<T, FleetError> + Send + 'static,
    ) -> FleetFuture<T> {
        if self.latency.is_zero() {
            let result = op(&self.table);
            return Box::pin(async move { result });
        }
        let (table, half) = (self.table.clone(), self.latency / 2);
        Box::pin(async move {
            tokio::time::sleep(half).await;
            let result = op(&table);
            tokio::time::sleep(half).await;
            result
        })
    }
}

impl Table {
    fn item(&self, key: &str) -> Option<Versioned> {
        self.items.lock().unwrap().get(key).cloned()
    }

    fn check(&self) -> Result<(), FleetError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match *self.failing.lock().unwrap() {
            Some(kind) => Err(FleetError {
                kind,
                table: DESCRIPTION.into(),
                message: "the test table is set to fail".into(),
            }),
            None => Ok(()),
        }
    }

    fn put(
        &self,
        key: &str,
        item: FleetItem,
        expected: Option<u64>,
    ) -> Result<PutOutcome, FleetError> {
        self.check().map(|()| {
            let mut items = self.items.lock().unwrap();
            let current = items.get(key).map(|v| v.version);
            if current != expected {
                self.conflicts.fetch_add(1, Ordering::Relaxed);
                return PutOutcome::Conflict;
            }
            let version = expected.unwrap_or(0) + 1;
            items.insert(key.to_string(), Versioned { item, version });
            PutOutcome::Written(version)
        })
    }
}

const DESCRIPTION: &str = "in-memory test table";

impl FleetStore for MemoryFleetStore {
    fn get(&self, key: &str) -> FleetFuture<Option<Versioned>> {
        let key = key.to_string();
        self.answer(move |t| t.check().map(|()| t.item(&key)))
    }

    fn put(&self, key: &str, item: &FleetItem, expected: Option<u64>) -> FleetFuture<PutOutcome> {
        let (key, item) = (key.to_string(), item.clone());
        self.answer(move |t| t.put(&key, item, expected))
    }

    fn describe(&self) -> String {
        DESCRIPTION.into()
    }
}
