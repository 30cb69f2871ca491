//! Taking a block from the item: the one function every host's write applies.
//!
//! See the module docs of [`crate::fleet`] for the protocol and its bound. This function
//! is applied to the item as read; the store writes its result on condition that the item
//! is unchanged (same version), and on a conflict it is applied again to a fresh read, so
//! the item's writes are serialized and each one sees the previous one.

use std::time::Duration;

use crate::fleet::calendar::{self, AllowanceSeen, ItemCalendar, PlaceArgs};
use crate::fleet::declaration::{Declaration, Declared};
use crate::fleet::host_id::HostId;
use crate::fleet::item::FleetItem;
use crate::fleet::window::{SpendWindow, TokenRun};
use crate::fleet::{FleetConfig, HOSTS_FORGET_AFTER, HOSTS_PER_REFRESH, HOSTS_SEEN_WINDOW};
use crate::policy::Policy;
use crate::schedule::WallClock;
use crate::time::{secs_ceil, Timestamp};

/// One host's request for a block.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRequest {
    /// The writer.
    pub host: HostId,
    /// Tokens it would like (its recent demand); at least 1.
    pub wanted: u64,
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
    /// Refuse the grant if its first token's window would open later than this after the
    /// writer's `now` ([`super::FleetConfig::horizon`]).
    pub horizon: Duration,
    /// How long the writer's requests to the table take to be answered (the longest it
    /// measured lately; zero if unknown): the first token's window closes at least this
    /// long after `now` too ([`SpendWindow::lead_for`]).
    pub round_trip: Duration,
    /// The writer's calendar for the key (`None`: no schedule or allowance, only the
    /// policy above). Recorded on the item when it or the item has a calendar.
    pub declared: Option<Declared>,
    /// The writer's fleet settings, so the write can size the block from the hosts seen
    /// on the item it is taken from rather than from a guess made before the read
    /// ([`first_block_sized`]); `None`: `wanted` and `horizon` as they are.
    pub item_sizing: Option<ItemSizing>,
}

/// How a block request is adjusted to the hosts on the item as read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemSizing {
    pub config: FleetConfig,
    /// The host's first block (it has measured no demand yet).
    pub first: bool,
}

/// What a write granted, and what the writer should know of the item.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockGrant {
    /// The tokens granted (`count` 0: refused, see `next_at`).
    pub run: TokenRun,
    /// The writer's clock at the write.
    pub written_at: Timestamp,
    /// Retry units granted.
    pub retry_units: u32,
    /// True if the item's retry units are used up (fleet retries stop).
    pub retry_empty: bool,
    /// A grant refused by the horizon: when asking again would be within it.
    pub next_at: Option<Timestamp>,
    /// The fleet factor in force after the write.
    pub factor: f64,
    /// Hosts that wrote in the last minute (at least 1).
    pub hosts_seen: usize,
    /// The item's `tat` after the write.
    pub tat: Timestamp,
    /// The rate and burst the tokens were taken at (the calendar's strictest, or the
    /// writer's policy).
    pub rate: f64,
    pub burst: f64,
    /// The fleet allowance after the grant, when one is in force.
    pub allowance: Option<AllowanceSeen>,
    /// Hosts seen whose declared calendar differs from the writer's.
    pub disagreeing: Vec<HostId>,
}

/// Apply `request` at the writer's `now` to `item` (`None`: the key has no item yet).
pub fn take_block(
    item: Option<&FleetItem>,
    request: &BlockRequest,
    now: Timestamp,
) -> (FleetItem, BlockGrant) {
    let sized = first_block_sized(item, request, now);
    let request = sized.as_ref().unwrap_or(request);
    let mut item = item
        .cloned()
        .unwrap_or_else(|| FleetItem::fresh(request.rate, request.burst, request.retry_capacity));
    // 1. The penalty: a throttle reported now spaces this grant's tokens already.
    item.penalty.observe(request.throttled, now);
    // 2. The writer's policy is in force from now on.
    item.rate = request.rate;
    item.burst = request.burst;
    item.retry_capacity = request.retry_capacity;
    // 3. Retry units: refunds first, then the grant.
    item.retry_units = item
        .retry_units
        .saturating_add(request.retry_refund)
        .min(item.retry_capacity);
    let retry_units = request.retry_want.min(item.retry_units);
    item.retry_units -= retry_units;
    item.hosts.insert(request.host.clone(), now);
    let forget = now.saturating_sub(HOSTS_FORGET_AFTER);
    item.hosts.retain(|_, seen| *seen >= forget);
    // 4. The tokens: due after `tat` (which never moves back) and after the answer's way
    //    back, spaced by the penalized rate; on the calendar's segments if it has one.
    let (run, next_at, allowance, disagreeing) = match record_declaration(&mut item, request) {
        Some(anchor) => {
            let mut cal = item.calendar.take().expect("just recorded");
            let placed = calendar::place(
                &mut cal,
                &PlaceArgs {
                    tat: item.tat,
                    factor: item.penalty.factor,
                    hosts: &item.hosts,
                    wanted: request.wanted,
                    horizon: request.horizon,
                    round_trip: request.round_trip,
                    anchor,
                    now,
                },
            );
            let disagreeing = calendar::disagreeing(&cal, &item.hosts, &request.host, now);
            item.calendar = Some(cal);
            if placed.run.count > 0 {
                item.tat = placed.run.last_due();
            }
            item.rate = placed.policy.rate_per_second();
            item.burst = placed.policy.admission_burst();
            (placed.run, placed.next_at, placed.allowance, disagreeing)
        }
        None => {
            let (run, next_at) = plain_run(&mut item, request, now);
            (run, next_at, None, Vec::new())
        }
    };
    let grant = BlockGrant {
        run,
        written_at: now,
        retry_units,
        retry_empty: item.retry_units == 0 && retry_units < request.retry_want,
        next_at,
        factor: item.penalty.factor,
        hosts_seen: item.hosts_seen(now, HOSTS_SEEN_WINDOW),
        tat: item.tat,
        rate: item.rate,
        burst: item.burst,
        allowance,
        disagreeing,
    };
    (item, grant)
}

/// A request adjusted to the hosts seen on the item as read, the writer counted (issue
/// 23: a start-up flat in the hosts). A first block is the writer's fair share of one
/// refresh at those hosts (up to [`HOSTS_PER_REFRESH`] hosts at most the burst: a full
/// share there made 4 hosts × 2 workers at 20/s burst 5 slower and held a throttle's
/// halved factor back from a host for more than a cooldown), so hosts that start
/// together take one block each instead of a slow start from one token (a write per
/// doubling, each contended: 16 hosts made about three writes each in their first 3 s).
/// Every request may reach as far ahead as the horizon of those hosts, so the last of
/// many hosts starting together is not refused by a horizon it computed while it saw
/// nobody. `None`: no [`ItemSizing`], or a key with a calendar (an allowance charges
/// every token granted, spent or not, so its blocks stay sized by the demand): `request`
/// as it is.
pub fn first_block_sized(
    item: Option<&FleetItem>,
    request: &BlockRequest,
    now: Timestamp,
) -> Option<BlockRequest> {
    let ItemSizing { config, first } = request.item_sizing?;
    let declares = request
        .declared
        .as_ref()
        .is_some_and(|d| d.declaration.has_calendar());
    if declares || item.is_some_and(|i| i.calendar.is_some()) {
        return None;
    }
    let others = item.map_or(0, |i| {
        let since = now.saturating_sub(HOSTS_SEEN_WINDOW);
        i.hosts
            .iter()
            .filter(|(h, seen)| **h != request.host && **seen >= since)
            .count()
    });
    let hosts = others + 1;
    let mut share = request.rate * config.refresh_for(hosts).as_secs_f64() / hosts as f64;
    if hosts <= HOSTS_PER_REFRESH {
        share = share.min(request.burst);
    }
    let mut sized = request.clone();
    if first {
        sized.wanted = request.wanted.max(share.ceil() as u64);
    }
    sized.horizon = request.horizon.max(config.horizon_for(hosts));
    Some(sized)
}

/// The tokens of a key without a calendar: at the writer's policy from `tat` on.
fn plain_run(
    item: &mut FleetItem,
    request: &BlockRequest,
    now: Timestamp,
) -> (TokenRun, Option<Timestamp>) {
    let window = SpendWindow::for_policy(item.rate, item.burst);
    let spacing = secs_ceil(1.0 / (item.rate * item.penalty.factor));
    let first_due = item.tat.max(now + window.lead_for(request.round_trip)) + spacing;
    let mut run = TokenRun {
        first_due,
        spacing,
        count: request.wanted.max(1),
        window,
    };
    let latest_open = now + request.horizon;
    let next_at = if run.opens(0) > latest_open {
        run.count = 0;
        Some(now + run.opens(0).saturating_since(latest_open))
    } else {
        item.tat = run.last_due();
        None
    };
    (run, next_at)
}

/// Record the writer's declaration when it or the item has a calendar (an unscheduled
/// key's item stays as it was); drop those of forgotten hosts. Returns the anchor to
/// resolve the calendar with, or `None` for a key without one.
fn record_declaration(item: &mut FleetItem, request: &BlockRequest) -> Option<WallClock> {
    let has_calendar = request
        .declared
        .as_ref()
        .is_some_and(|d| d.declaration.has_calendar());
    if !has_calendar && item.calendar.is_none() {
        return None;
    }
    let (declaration, anchor) = match &request.declared {
        Some(d) => (d.declaration.clone(), d.anchor),
        None => {
            let policy = Policy::new(request.rate, request.burst, 1, request.retry_capacity)
                .unwrap_or_else(|_| Policy::with_rate(1.0, 1.0).expect("a valid policy"));
            (Declaration::plain(policy), WallClock::UNIX_EPOCH)
        }
    };
    let cal = item.calendar.get_or_insert_with(|| ItemCalendar {
        declarations: Default::default(),
        valid_until: Timestamp::ZERO,
        allowance: None,
    });
    cal.declarations.insert(request.host.clone(), declaration);
    let hosts = &item.hosts;
    cal.declarations.retain(|h, _| hosts.contains_key(h));
    Some(anchor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    /// 10/s burst 5: T = 100 ms, windows [e − 500 ms, e − 100 ms], lead 100 ms.
    fn request(host: &str, wanted: u64) -> BlockRequest {
        BlockRequest {
            host: host.into(),
            wanted,
            rate: 10.0,
            burst: 5.0,
            retry_capacity: 4,
            throttled: false,
            retry_want: 0,
            retry_refund: 0,
            horizon: Duration::from_secs(2),
            round_trip: Duration::ZERO,
            declared: None,
            item_sizing: None,
        }
    }

    #[test]
    fn an_idle_key_grants_tokens_due_one_spacing_apart_from_now_plus_the_lead() {
        let (item, g) = take_block(None, &request("a", 3), ms(10_000));
        assert_eq!(g.run.count, 3);
        assert_eq!(g.run.first_due, ms(10_200));
        assert_eq!(g.run.closes(0), ms(10_100), "closes after the lead");
        assert_eq!(
            g.run.opens(0),
            ms(9_700),
            "open already: the burst is there"
        );
        assert_eq!(item.tat, ms(10_400));
    }

    #[test]
    fn the_next_grant_follows_the_last_whoever_asks() {
        let (item, _) = take_block(None, &request("a", 3), ms(10_000));
        let (item, g) = take_block(Some(&item), &request("b", 2), ms(10_000));
        assert_eq!(g.run.first_due, ms(10_500));
        assert_eq!(item.tat, ms(10_600));
    }

    #[test]
    fn tat_never_moves_backwards_for_a_clock_behind_it() {
        let (item, _) = take_block(None, &request("a", 1), ms(10_000));
        let (item, g) = take_block(Some(&item), &request("b", 1), ms(9_000));
        assert_eq!(g.run.first_due, ms(10_300));
        assert_eq!(item.tat, ms(10_300));
    }

    #[test]
    fn an_idle_item_is_not_banked_beyond_the_burst() {
        // 60 s idle: the first token is due at now + lead + T, not at the old tat.
        let (item, _) = take_block(None, &request("a", 1), ms(0));
        let (_, g) = take_block(Some(&item), &request("a", 9), ms(60_000));
        assert_eq!(g.run.first_due, ms(60_200));
        // Only the tokens whose window opened by now are spendable now: W/T − lead/T = 4.
        let open_now = (0..9).filter(|j| g.run.opens(*j) <= ms(60_000)).count();
        assert_eq!(open_now, 4);
    }

    #[test]
    fn a_grant_beyond_the_horizon_is_refused_with_when_to_ask() {
        let (item, _) = take_block(None, &request("a", 30), ms(0)); // tat 3.1 s
        let (after, g) = take_block(Some(&item), &request("b", 2), ms(0));
        // First due 3.2 s, opens 2.7 s; horizon 2 s: ask again at 0.7 s.
        assert_eq!(g.run.count, 0);
        assert_eq!(g.next_at, Some(ms(700)));
        assert_eq!(after.tat, item.tat, "a refusal reserves nothing");
        let (_, g) = take_block(Some(&item), &request("b", 2), ms(700));
        assert_eq!((g.run.count, g.next_at), (2, None));
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
    fn a_throttle_spaces_every_hosts_tokens_further_but_not_their_windows() {
        let mut r = request("a", 1);
        r.throttled = true;
        let (item, g) = take_block(None, &r, ms(0));
        assert_eq!(g.factor, 0.5);
        assert_eq!(g.run.spacing, Duration::from_millis(200));
        let (_, g) = take_block(Some(&item), &request("b", 2), ms(0));
        assert_eq!(g.run.first_due, ms(500), "after a's token due at 300 ms");
        assert_eq!(g.run.due(1), ms(700));
        assert_eq!(
            g.run.window,
            SpendWindow::for_policy(10.0, 5.0),
            "the window is the policy's, not the penalized rate's"
        );
    }

    #[test]
    fn a_first_block_is_a_fair_share_of_a_refresh_at_the_hosts_on_the_item_as_read() {
        // 10/s burst 5: up to 4 hosts, a share of a refresh (1 s) of the rate, at most the
        // burst; 15 others: 8 s refresh over 16 hosts, 5 tokens, and their 16 s horizon.
        // Hosts not seen for a minute do not count; a request that is no first block
        // gets only the horizon of the hosts seen.
        let config = FleetConfig::default();
        let mut item = take_block(None, &request("a", 1), ms(100_000)).0;
        let with_hosts = |item: &mut FleetItem, n: usize, at_ms: u64| {
            for i in 0..n {
                item.hosts.insert(format!("o{i}"), ms(at_ms));
            }
        };
        // (case, other hosts, last seen ms, first block, wanted, horizon ms)
        let table = [
            ("alone on a fresh key: the burst", 0, 0, true, 5, 2_000),
            ("3 others: a quarter", 3, 99_000, true, 3, 2_000),
            ("15 others: 16 hosts' refresh", 15, 99_000, true, 5, 16_000),
            ("others gone a minute ago", 15, 30_000, true, 5, 2_000),
            (
                "not a first block: the horizon only",
                15,
                99_000,
                false,
                1,
                16_000,
            ),
        ];
        for (case, others, seen, first, wanted, horizon) in table {
            item.hosts.retain(|h, _| h == "a");
            with_hosts(&mut item, others, seen);
            let mut r = request("a", 1); // the writer itself is not counted twice
            r.item_sizing = Some(ItemSizing { config, first });
            let sized = first_block_sized(Some(&item), &r, ms(100_000)).unwrap_or(r);
            assert_eq!(sized.wanted, wanted, "{case}");
            assert_eq!(sized.horizon, Duration::from_millis(horizon), "{case}");
        }
        item.calendar = Some(ItemCalendar {
            declarations: Default::default(),
            valid_until: Timestamp::ZERO,
            allowance: None,
        });
        let mut r = request("a", 1);
        r.item_sizing = Some(ItemSizing {
            config,
            first: true,
        });
        assert_eq!(
            first_block_sized(Some(&item), &r, ms(100_000)),
            None,
            "a key with a calendar: sized by the demand as before"
        );
    }
}
