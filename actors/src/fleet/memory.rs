//! `MemoryFleetStore`: a fleet table in memory, for paused-time tests of the actors.
//!
//! Conditional puts are atomic under one mutex, like DynamoDB's single-item conditional
//! writes. A test can make it fail (as an unreachable or throttled table would) and count
//! the requests it served.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tollgate_quota::fleet::FleetItem;

use super::store::{FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, Versioned};

/// An in-memory fleet table.
#[derive(Debug, Default)]
pub struct MemoryFleetStore {
    items: Mutex<HashMap<String, Versioned>>,
    failing: Mutex<Option<FleetErrorKind>>,
    requests: AtomicU64,
}

impl MemoryFleetStore {
    /// An empty table.
    pub fn new() -> Self {
        MemoryFleetStore::default()
    }

    /// Make every request fail with `kind` (`None`: answer again).
    pub fn fail_with(&self, kind: Option<FleetErrorKind>) {
        *self.failing.lock().unwrap() = kind;
    }

    /// Requests served (gets and puts, failed ones included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The item of `key`.
    pub fn item(&self, key: &str) -> Option<Versioned> {
        self.items.lock().unwrap().get(key).cloned()
    }

    fn check(&self) -> Result<(), FleetError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match *self.failing.lock().unwrap() {
            Some(kind) => Err(FleetError {
                kind,
                table: self.describe(),
                message: "the test table is set to fail".into(),
            }),
            None => Ok(()),
        }
    }
}

impl FleetStore for MemoryFleetStore {
    fn get(&self, key: &str) -> FleetFuture<Option<Versioned>> {
        let result = self.check().map(|()| self.item(key));
        Box::pin(async move { result })
    }

    fn put(&self, key: &str, item: &FleetItem, expected: Option<u64>) -> FleetFuture<PutOutcome> {
        let result = self.check().map(|()| {
            let mut items = self.items.lock().unwrap();
            let current = items.get(key).map(|v| v.version);
            if current != expected {
                return PutOutcome::Conflict;
            }
            let version = expected.unwrap_or(0) + 1;
            items.insert(
                key.to_string(),
                Versioned {
                    item: item.clone(),
                    version,
                },
            );
            PutOutcome::Written(version)
        });
        Box::pin(async move { result })
    }

    fn describe(&self) -> String {
        "in-memory test table".into()
    }
}
