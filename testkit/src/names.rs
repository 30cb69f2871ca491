//! Names unique to one test of one run, for resources on an emulator that several test
//! binaries (and, with a long-lived emulator, several runs) share.

use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Microseconds since the epoch, modulo 10⁹: what sets one run's names apart from an
/// earlier run's on a long-lived emulator.
#[allow(clippy::disallowed_methods)] // a name, not a measurement
fn stamp() -> u128 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    since_epoch.as_micros() % 1_000_000_000
}

/// A DynamoDB table name unique to this process and call: `tg-{test}-{pid}-{stamp}-{n}`.
pub fn unique_table(test: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("tg-{test}-{}-{}-{n}", std::process::id(), stamp())
}

/// A prefix for resource names unique to this run, lowercase and S3-safe:
/// `tg{stamp}-{test}-`.
pub fn unique_prefix(test: &str) -> String {
    format!("tg{}-{test}-", stamp())
}
