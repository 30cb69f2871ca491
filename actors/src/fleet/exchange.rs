//! The read-compute-write loop of one block request.
//!
//! Start from the item this host last wrote (saves a read when nobody else wrote since:
//! an uncontended refresh is one PutItem), apply `take_block` at the clock's `now`, write
//! it on condition of the version; on a conflict back off at random over a few round
//! trips per contender (`conflict_backoff`: losers that retried at once lost again, O(N²)
//! requests for N hosts starting together), read the item and try again, up to
//! [`MAX_ATTEMPTS`] writes. Each attempt reads the clock afresh, so the
//! tokens are placed from the instant of the write they go into.

use std::sync::Arc;
use tollgate_quota::fleet::{
    conflict_backoff, take_block, BlockGrant, BlockRequest, HOSTS_SEEN_WINDOW, ROUND_TRIP_MAX,
};
use tollgate_quota::Clock;

use super::store::{FleetError, FleetErrorKind, FleetStore, PutOutcome, Versioned};

/// A grant refused by the horizon with no throttle, refund or retry units to record.
fn nothing_to_write(request: &BlockRequest, grant: &BlockGrant) -> bool {
    grant.run.count == 0
        && grant.retry_units == 0
        && !request.throttled
        && request.retry_refund == 0
}

/// Conditional writes tried per block request before giving up with `Contention`.
pub const MAX_ATTEMPTS: u32 = 8;

/// Take a block for `request` on `key`; `cached` is the item as this host last wrote it
/// (pass it only while nobody else writes the key: a stale one costs a failed write).
/// Returns the grant, the item as written, and whether a write lost to another host.
pub async fn exchange(
    store: Arc<dyn FleetStore>,
    key: String,
    request: BlockRequest,
    clock: Arc<dyn Clock>,
    cached: Option<Versioned>,
) -> Result<(BlockGrant, Versioned, bool), FleetError> {
    let mut request = request;
    let asked_at = clock.now();
    let mut base = match cached {
        Some(v) => Some(v),
        None => store.get(&key).await?,
    };
    // A read's round trip is the write's too: place this block's first tokens for it.
    request.round_trip = request
        .round_trip
        .max(clock.now().saturating_since(asked_at).min(ROUND_TRIP_MAX));
    let mut conflicted = false;
    for attempt in 0..MAX_ATTEMPTS {
        let now = clock.now();
        let (item, grant) = take_block(base.as_ref().map(|v| &v.item), &request, now);
        if let Some(read) = base.as_ref().filter(|_| nothing_to_write(&request, &grant)) {
            // Refused by the horizon, nothing reported: the write would change nothing
            // that matters, so the read (if any) was the only request.
            return Ok((grant, read.clone(), conflicted));
        }
        let expected = base.as_ref().map(|v| v.version);
        match store.put(&key, &item, expected).await? {
            PutOutcome::Written(version) => {
                return Ok((grant, Versioned { item, version }, conflicted))
            }
            PutOutcome::Conflict => {
                conflicted = true;
                // Back off at random over a few round trips per contender, so racing
                // hosts spread out instead of racing again (`conflict_backoff`).
                let hosts = base
                    .as_ref()
                    .map_or(0, |v| v.item.hosts_seen(now, HOSTS_SEEN_WINDOW));
                let version = expected.unwrap_or(0);
                let wait =
                    conflict_backoff(&request.host, version, attempt, request.round_trip, hosts);
                tokio::time::sleep(wait).await;
                base = store.get(&key).await?;
            }
        }
    }
    Err(FleetError {
        kind: FleetErrorKind::Contention,
        table: store.describe(),
        message: format!("{MAX_ATTEMPTS} conditional writes on {key} lost to other hosts"),
    })
}
