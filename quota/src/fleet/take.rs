//! Taking a block from the item: the one function every host's write applies.
//!
//! See the module docs of [`crate::fleet`] for the protocol and its bound. This function
//! is applied to the item as read; the store writes its result on condition that the item
//! is unchanged (same version), and on a conflict it is applied again to a fresh read, so
//! the item's writes are serialized and each one sees the previous one.

use std::time::Duration;

use crate::bucket::EPSILON;
use crate::fleet::item::{FleetItem, HostBlock, HostId};
use crate::fleet::{HOSTS_FORGET_AFTER, HOSTS_SEEN_WINDOW};
use crate::time::{secs_ceil, Timestamp};

/// One host's request for a block.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRequest {
    /// The writer.
    pub host: HostId,
    /// Tokens it would like (its recent demand).
    pub wanted: u64,
    /// The smallest block worth a write: below it nothing is granted, and the grant says
    /// when the level will allow it.
    pub at_least: u64,
    /// The writer's policy: rate (tokens/s), burst, retry capacity.
    pub rate: f64,
    pub burst: f64,
    pub retry_capacity: u32,
    /// The writer saw a throttle since its previous block.
    pub throttled: bool,
    /// Retry units it would like.
    pub retry_want: u32,
    /// Retry units it gives back (successes since its previous block: seed 004's refund).
    pub retry_refund: u32,
    /// The block's time to live on the item ([`super::FleetConfig::block_ttl`]).
    pub ttl: Duration,
}

/// What a write granted, and what the writer should know of the item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockGrant {
    /// Tokens granted (0: see `next_at`).
    pub tokens: u64,
    /// The item's time of the write (`max(now, at)`).
    pub granted_at: Timestamp,
    /// The block lapses on the item at this instant; the writer spends it only while
    /// its own clock is before `expires_at − skew`.
    pub expires_at: Timestamp,
    /// Retry units granted.
    pub retry_units: u32,
    /// True if the item's retry units are used up (fleet retries stop).
    pub retry_empty: bool,
    /// With a zero grant: when the level will allow `at_least` (no need to ask before).
    pub next_at: Option<Timestamp>,
    /// The fleet factor in force after the write.
    pub factor: f64,
    /// Hosts that wrote in the last minute (at least 1).
    pub hosts_seen: usize,
    /// The level left on the item.
    pub level: f64,
}

/// Apply `request` at the writer's `now` to `item` (`None`: the key has no item yet).
pub fn take_block(
    item: Option<&FleetItem>,
    request: &BlockRequest,
    now: Timestamp,
) -> (FleetItem, BlockGrant) {
    let mut item = item.cloned().unwrap_or_else(|| {
        FleetItem::fresh(request.rate, request.burst, request.retry_capacity, now)
    });
    let host = request.host.as_str();
    // The item's time never moves backwards.
    let now = now.max(item.at);
    // 1. Refill, capped over time: the level grows at rate·factor only while it and the
    //    blocks still outstanding fit the burst. Blocks lapse at known instants and the
    //    writer's own is void from now, so walk those instants (see `refill`).
    let (level, others) = refill(&item, host, now);
    item.level = level;
    item.at = now;
    // 2. The penalty changes only after the refill it applied to.
    item.penalty.observe(request.throttled, now);
    // 3. The writer's policy is in force from now on.
    item.rate = request.rate;
    item.burst = request.burst;
    item.level = item.level.min(item.burst - others as f64).max(0.0);
    item.retry_capacity = request.retry_capacity;
    // 4. Retry units: refunds first, then the grant.
    item.retry_units = item
        .retry_units
        .saturating_add(request.retry_refund)
        .min(item.retry_capacity);
    let retry_units = request.retry_want.min(item.retry_units);
    item.retry_units -= retry_units;
    // 5. The block.
    item.blocks.remove(host);
    item.blocks.retain(|_, b| b.expires_at > now);
    let whole = (item.level + EPSILON).floor().max(0.0) as u64;
    let at_least = request.at_least.max(1);
    let tokens = if whole >= at_least {
        request.wanted.max(at_least).min(whole)
    } else {
        0
    };
    item.level = (item.level - tokens as f64).max(0.0);
    let expires_at = now + request.ttl;
    if tokens > 0 {
        item.blocks
            .insert(request.host.clone(), HostBlock { tokens, expires_at });
    }
    item.hosts.insert(request.host.clone(), now);
    let forget = now.saturating_sub(HOSTS_FORGET_AFTER);
    item.hosts.retain(|_, seen| *seen >= forget);
    let next_at = (tokens == 0).then(|| next_try(&item, host, at_least, now));
    let grant = BlockGrant {
        tokens,
        granted_at: now,
        expires_at,
        retry_units,
        retry_empty: item.retry_units == 0 && retry_units < request.retry_want,
        next_at,
        factor: item.penalty.factor,
        hosts_seen: item.hosts_seen(now, HOSTS_SEEN_WINDOW),
        level: item.level,
    };
    (item, grant)
}

/// The level at `now` and the tokens of the others' blocks still outstanding then.
///
/// Why walk the blocks' ends instead of `min(burst − outstanding(now), level + r·Δt)`?
/// Tokens in a block count against the burst until the block ends, spent or not. Refill
/// held back by the cap while a block was outstanding must stay lost: otherwise a block
/// spent just before it lapses, plus the refill it held back handed out just after, would
/// admit up to two bursts at once. So the level grows at the rate only while level +
/// outstanding < burst, and the cap rises at each block's end (the writer's own block
/// ends now: this write voids it).
fn refill(item: &FleetItem, host: &str, now: Timestamp) -> (f64, u64) {
    let rate = item.rate * item.penalty.factor;
    let burst = item.burst;
    let mut ends: Vec<(Timestamp, u64)> = item
        .blocks
        .iter()
        .filter(|(_, b)| b.expires_at > item.at)
        .map(|(h, b)| {
            let end = if h.as_str() == host {
                b.expires_at.min(now)
            } else {
                b.expires_at
            };
            (end, b.tokens)
        })
        .collect();
    ends.sort_by_key(|(end, _)| *end);
    let mut outstanding: u64 = ends.iter().map(|(_, t)| t).sum();
    let (mut level, mut t) = (item.level, item.at);
    let grow = |level: f64, from: Timestamp, to: Timestamp, outstanding: u64| {
        let gained = level + rate * to.saturating_since(from).as_secs_f64();
        gained.min(burst - outstanding as f64).max(0.0)
    };
    for (end, tokens) in ends {
        if end > now {
            break;
        }
        level = grow(level, t, end.max(t), outstanding);
        t = t.max(end);
        outstanding -= tokens;
    }
    (grow(level, t, now, outstanding), outstanding)
}

/// When a host that got nothing should ask again: when the level will allow `at_least`
/// if the others void their blocks meanwhile (a busy host takes its next block as soon as
/// it has spent one, voiding it), and no later than the others' blocks lapse
/// ([`ready_at`]); plus a per-host offset within one token's time, so hosts that all got
/// nothing do not all ask at the same instant.
fn next_try(item: &FleetItem, host: &str, at_least: u64, now: Timestamp) -> Timestamp {
    let rate = item.rate * item.penalty.factor;
    let hopeful = now + secs_ceil((at_least as f64 - item.level) / rate);
    let spread = host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let offset = secs_ceil((spread % 1_000) as f64 / 1_000.0 / rate);
    hopeful.min(ready_at(item, host, at_least, now)) + offset
}

/// The earliest instant at which a write by `host` would find `at_least` whole tokens:
/// the level grows at the rate while it fits under the burst with the others' blocks,
/// whose ends raise that cap.
fn ready_at(item: &FleetItem, host: &str, at_least: u64, now: Timestamp) -> Timestamp {
    let need = at_least as f64;
    let rate = item.rate * item.penalty.factor;
    let mut ends: Vec<(Timestamp, u64)> = item
        .blocks
        .iter()
        .filter(|(h, b)| h.as_str() != host && b.expires_at > now)
        .map(|(_, b)| (b.expires_at, b.tokens))
        .collect();
    ends.sort_by_key(|(at, _)| *at);
    let mut outstanding: u64 = ends.iter().map(|(_, t)| t).sum();
    let (mut level, mut t) = (item.level, now);
    for (end, tokens) in ends {
        let cap = item.burst - outstanding as f64;
        if need <= cap + EPSILON {
            let at = t + secs_ceil((need - level) / rate);
            if at <= end {
                return at;
            }
        }
        level = (level + rate * end.saturating_since(t).as_secs_f64()).min(cap);
        t = end;
        outstanding -= tokens;
    }
    t + secs_ceil((need - level) / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    fn request(host: &str, wanted: u64) -> BlockRequest {
        BlockRequest {
            host: host.into(),
            wanted,
            at_least: 1,
            rate: 10.0,
            burst: 5.0,
            retry_capacity: 4,
            throttled: false,
            retry_want: 0,
            retry_refund: 0,
            ttl: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_new_key_starts_full_and_grants_up_to_the_burst() {
        let (item, g) = take_block(None, &request("a", 9), ms(0));
        assert_eq!(g.tokens, 5);
        assert_eq!(item.level, 0.0);
        assert_eq!(item.blocks["a"].tokens, 5);
        assert_eq!(g.expires_at, ms(3_000));
    }

    #[test]
    fn others_outstanding_blocks_cap_the_refill() {
        let (item, _) = take_block(None, &request("a", 5), ms(0));
        // 10 s later the level would be 100, but a's block still counts: 5 − 5 = 0.
        let (item, g) = take_block(Some(&item), &request("b", 3), ms(1_000));
        assert_eq!(g.tokens, 0);
        assert_eq!(
            ready_at(&item, "b", 1, ms(1_000)),
            ms(3_100),
            "a's block lapses at 3 s"
        );
        // b asks again earlier (a may void its block before), offset within 100 ms.
        let next = g.next_at.unwrap();
        assert!(next >= ms(1_100) && next < ms(1_200), "{next}");
        let (_, g) = take_block(Some(&item), &request("b", 3), ms(3_300));
        assert_eq!(g.tokens, 3);
    }

    #[test]
    fn the_writers_own_block_is_void_and_not_returned() {
        let (item, _) = take_block(None, &request("a", 2), ms(0));
        assert_eq!(item.level, 3.0);
        let (item, g) = take_block(Some(&item), &request("a", 5), ms(0));
        assert_eq!(
            g.tokens, 3,
            "the 2 of the old block are lost, not given back"
        );
        assert_eq!(item.outstanding(ms(0)), 3);
    }

    #[test]
    fn refill_held_back_by_a_block_is_not_handed_out_when_it_lapses() {
        // a holds the whole burst; 3 s later (30 tokens' worth at 10/s) its block lapses.
        // a may have spent all 5 just before; handing out the held-back refill now would
        // admit 10 within moments. Regression: the first version capped only at the write.
        let (item, _) = take_block(None, &request("a", 5), ms(0));
        let (item, g) = take_block(Some(&item), &request("b", 5), ms(3_000));
        assert_eq!(g.tokens, 0);
        let next = g.next_at.unwrap();
        assert!(
            next >= ms(3_100) && next < ms(3_200),
            "refill restarts at 3 s: {next}"
        );
        let (_, g) = take_block(Some(&item), &request("b", 5), ms(3_500));
        assert_eq!(g.tokens, 5);
    }

    #[test]
    fn a_writers_own_block_holds_back_refill_until_it_writes() {
        let (item, _) = take_block(None, &request("a", 5), ms(0));
        let (_, g) = take_block(Some(&item), &request("a", 5), ms(1_000));
        assert_eq!(g.tokens, 0, "its block counted until this write");
    }

    #[test]
    fn the_items_time_never_moves_backwards() {
        let (item, _) = take_block(None, &request("a", 5), ms(5_000));
        let (item, g) = take_block(Some(&item), &request("b", 1), ms(4_000));
        assert_eq!(item.at, ms(5_000));
        assert_eq!(g.granted_at, ms(5_000));
        assert_eq!(g.tokens, 0, "no refill from a clock behind the item");
    }

    #[test]
    fn a_zero_grant_says_when_the_level_allows_at_least() {
        let (item, _) = take_block(None, &request("a", 5), ms(0));
        let mut r = request("a", 4);
        r.at_least = 2;
        let (_, g) = take_block(Some(&item), &r, ms(100));
        // a's own block held the refill back until this write; 2 tokens 200 ms later,
        // plus a's offset within one token's time.
        let next = g.next_at.unwrap();
        assert!(g.tokens == 0 && next >= ms(300) && next < ms(400), "{next}");
    }

    #[test]
    fn retry_units_are_drawn_and_refunded_up_to_the_capacity() {
        let mut r = request("a", 1);
        r.retry_want = 3;
        let (item, g) = take_block(None, &r, ms(0));
        assert_eq!((g.retry_units, item.retry_units), (3, 1));
        let (item, g) = take_block(Some(&item), &r, ms(0));
        assert_eq!((g.retry_units, g.retry_empty), (1, true));
        r.retry_want = 0;
        r.retry_refund = 9;
        let (item, _) = take_block(Some(&item), &r, ms(0));
        assert_eq!(item.retry_units, 4);
    }

    #[test]
    fn a_throttle_halves_every_hosts_refill() {
        let (item, _) = take_block(None, &request("a", 5), ms(0));
        let mut r = request("a", 5);
        r.throttled = true;
        let (item, g) = take_block(Some(&item), &r, ms(0));
        assert_eq!(g.factor, 0.5);
        // b refills at 5/s now: after 400 ms, 2 tokens (a's 0-token block voided).
        let (_, g) = take_block(Some(&item), &request("b", 5), ms(400));
        assert_eq!(g.tokens, 2);
    }
}
