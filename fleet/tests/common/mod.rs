//! What the dynalite test files (and the fleet's helper binary) share.

#[allow(dead_code)] // not every test file races for blocks
pub mod blocks;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tollgate_quota::{Clock, Timestamp};

/// A clock the test moves.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn at(us: u64) -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicU64::new(us)))
    }
    #[allow(dead_code)] // not every test file moves it
    pub fn set(&self, us: u64) {
        self.0.store(us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(self.0.load(Ordering::SeqCst))
    }
}
