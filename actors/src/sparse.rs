//! `shrink_if_sparse`: give a map's spare room back once it is mostly empty. After an
//! organization's keys were evicted, the tables they filled (the registry's actors, the
//! address cache, the breaker board's scopes) would otherwise stay at their peak size.
//! A file of its own: those three use it, and none of them should depend on another.

use std::collections::HashMap;

/// Shrink `map` to twice its length when its capacity is over four times that (plus 64).
pub(crate) fn shrink_if_sparse<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 4 * map.len() + 64 {
        map.shrink_to(2 * map.len());
    }
}
