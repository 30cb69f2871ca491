//! How long a host waits after losing a conditional write before it reads the item
//! again (issue 23: a start-up flat in the hosts).
//!
//! N hosts that write one item at the same instant: one wins, N − 1 lose. If the losers
//! re-read and write again at once (the old 0.5 ms backoff against round trips of
//! milliseconds or more), they race again and again: N·(N − 1)/2 lost writes, each
//! followed by a read, so O(N²) requests for N first blocks (16 hosts on a 20 ms table
//! in paused time: 620 requests and 250 writes lost in the first 3 s). Spreading the
//! losers' next attempts at random over a window of a few round trips per contender
//! makes a loss rare: a write loses only if another lands between its read and its write
//! (about one round trip), so with `n` contenders spread over `2·n` round trips about
//! half of them do, and the window grows fourfold with each loss (full jitter,
//! exponential). 16 hosts starting together on a 20 ms table in paused time lost 43
//! writes in their first 3 s with windows of 2, 4, 8 … round trips, 35 with 2, 8, 32 …,
//! 27 with 8, 32, 128 ….
//!
//! The number of contenders is guessed as the larger of `4^(attempt + 1)` and the hosts
//! seen on the item as last read (hosts that start together see nobody at first); the
//! jitter is a hash of the host, the key's version and the attempt (no random source, no
//! clock: deterministic in paused-time tests, and different for every host).

use std::time::Duration;

use crate::fleet::HostId;

/// The shortest backoff window (a table answering within microseconds, as in tests).
pub const BACKOFF_MIN: Duration = Duration::from_micros(500);

/// The longest backoff window: a host never waits longer than this for one retry (16
/// contenders on a 100 ms table need 3.2 s to spread out; with a 1 s cap they lost 44
/// writes in their first 3 s instead of 32).
pub const BACKOFF_MAX: Duration = Duration::from_millis(3_000);

/// The wait before reading again after the `attempt`-th lost write (0 for the first) of
/// `host` against version `version` of the item, with table requests taking
/// `round_trip` and `hosts` seen on the item last read: uniform in
/// `[0, round_trip · 2·max(4^(attempt + 1), hosts))`, the window within
/// [`BACKOFF_MIN`]..=[`BACKOFF_MAX`].
pub fn conflict_backoff(
    host: &HostId,
    version: u64,
    attempt: u32,
    round_trip: Duration,
    hosts: usize,
) -> Duration {
    let contenders = (1u64 << (2 * attempt + 2).min(16)).max(hosts as u64);
    let window = round_trip
        .saturating_mul(2 * contenders.min(1 << 16) as u32)
        .clamp(BACKOFF_MIN, BACKOFF_MAX);
    window.mul_f64(unit(host, version, attempt))
}

/// A number in `[0, 1)` from the host, version and attempt (FNV-1a, then a splitmix64
/// finaliser so that near inputs give unrelated outputs).
fn unit(host: &HostId, version: u64, attempt: u32) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = host
        .bytes()
        .chain(version.to_le_bytes())
        .chain(attempt.to_le_bytes());
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_window_grows_with_the_losses_and_the_hosts_seen_within_its_bounds() {
        // (case, attempt, round trip, hosts seen, the window's end)
        let table = [
            (
                "first loss, nobody seen: 8 round trips",
                0,
                ms(20),
                0,
                ms(160),
            ),
            ("second loss: 32", 1, ms(20), 1, ms(640)),
            (
                "16 hosts seen: 32 at the first loss",
                0,
                ms(20),
                16,
                ms(640),
            ),
            ("the losses beyond the hosts", 2, ms(20), 16, ms(2_560)),
            ("capped", 0, ms(100), 64, BACKOFF_MAX),
            (
                "a table answering at once",
                0,
                Duration::ZERO,
                4,
                BACKOFF_MIN,
            ),
        ];
        for (case, attempt, rt, hosts, end) in table {
            for host in ["a", "b", "host-7", "host-16"] {
                for version in 0..50 {
                    let d = conflict_backoff(&host.to_string(), version, attempt, rt, hosts);
                    assert!(d < end, "{case}: {d:?}");
                }
            }
        }
    }

    #[test]
    fn hosts_that_lost_to_the_same_write_spread_over_the_window() {
        let waits: Vec<Duration> = (1..=16)
            .map(|i| conflict_backoff(&format!("host-{i}"), 1, 0, ms(20), 16))
            .collect();
        // 16 draws over [0, 640 ms): every quarter gets some, none twice the same.
        for q in 0..4 {
            let (from, to) = (ms(160 * q), ms(160 * (q + 1)));
            assert!(
                waits.iter().any(|d| *d >= from && *d < to),
                "quarter {q}: {waits:?}"
            );
        }
        let mut sorted = waits.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), waits.len(), "{waits:?}");
    }
}
