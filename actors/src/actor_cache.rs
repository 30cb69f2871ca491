//! `ActorCache`: the quota actors' addresses a [`LocalAdmission`](crate::local) remembers,
//! so that an operation on a known key skips the registry's round trip.
//!
//! Why it must forget: the registry retires a key's actor after it has been idle for
//! `evict_after` (seconds), but an address outlives its actor (a disconnected `Addr` still holds
//! its mailbox's allocation). An organization scan touches accounts × regions ×
//! operations keys (about 10,000 at 50 accounts × 17 regions), so a cache that only ever
//! inserts would hold one dead address for every key the process ever used. Two rules
//! keep it to the keys in use:
//! - every [`PRUNE_EVERY`] of the actors' clock (checked on each use), addresses whose
//!   actor has stopped are dropped;
//! - when it reaches its high-water mark (twice what was live at the last pruning, at
//!   least [`MIN_HIGH_WATER`]), it prunes at once, so a burst of new keys costs amortised
//!   O(1) per insert and never more than twice the live keys.
//!
//! [`should_prune`] is the decision, pure and table-tested.

use std::collections::HashMap;
use std::time::Duration;

use actix::Addr;
use tollgate_quota::Timestamp;

use crate::key::CanonicalKey;
use crate::quota_actor::QuotaActor;

/// How often dead addresses are dropped while the cache is in use.
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The smallest high-water mark: below it the cache only prunes on the clock.
pub const MIN_HIGH_WATER: usize = 256;

/// Whether to drop dead addresses now: the high-water mark is reached, or
/// [`PRUNE_EVERY`] has passed since the last pruning.
pub fn should_prune(len: usize, high_water: usize, now: Timestamp, pruned_at: Timestamp) -> bool {
    len >= high_water || now.saturating_since(pruned_at) >= PRUNE_EVERY
}

/// Addresses of quota actors by key (see the module docs).
#[derive(Debug)]
pub(crate) struct ActorCache {
    addrs: HashMap<CanonicalKey, Addr<QuotaActor>>,
    high_water: usize,
    pruned_at: Timestamp,
}

impl ActorCache {
    /// An empty cache, as if pruned at `now`.
    pub(crate) fn new(now: Timestamp) -> Self {
        ActorCache {
            addrs: HashMap::new(),
            high_water: MIN_HIGH_WATER,
            pruned_at: now,
        }
    }

    /// The key's actor, if it is known and still running.
    pub(crate) fn get(&mut self, key: &CanonicalKey, now: Timestamp) -> Option<Addr<QuotaActor>> {
        self.prune_if_due(now);
        self.addrs.get(key).filter(|a| a.connected()).cloned()
    }

    /// Remember the key's actor.
    pub(crate) fn insert(&mut self, key: CanonicalKey, addr: Addr<QuotaActor>, now: Timestamp) {
        self.addrs.insert(key, addr);
        self.prune_if_due(now);
    }

    /// Addresses held now (live or not yet pruned).
    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }

    fn prune_if_due(&mut self, now: Timestamp) {
        if !should_prune(self.addrs.len(), self.high_water, now, self.pruned_at) {
            return;
        }
        self.addrs.retain(|_, a| a.connected());
        crate::sparse::shrink_if_sparse(&mut self.addrs);
        self.high_water = (2 * self.addrs.len()).max(MIN_HIGH_WATER);
        self.pruned_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_prunes_at_its_high_water_mark_or_once_a_minute() {
        let t0 = Timestamp::from_millis(1_000_000);
        let later = |ms: u64| t0 + Duration::from_millis(ms);
        #[rustfmt::skip]
        let table = [
            ("below the mark and within the minute: keep", 10, 256, later(59_999), false),
            ("at the high-water mark: prune", 256, 256, later(1), true),
            ("a minute after the last pruning: prune", 1, 256, later(60_000), true),
            ("an empty cache a minute on: prune (nothing to drop)", 0, 256, later(60_000), true),
            ("a raised mark is the one that counts", 300, 600, later(10), false),
        ];
        for (case, len, high_water, now, want) in table {
            assert_eq!(should_prune(len, high_water, now, t0), want, "{case}");
        }
    }
}
