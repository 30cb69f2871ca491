//! The token-bucket bound over every interval, checked from merged grant instants.
//!
//! A key with rate `r` and burst `b` may admit at most `b + r·(t_j − t_i)` grants in any
//! closed interval `[t_i, t_j]`; fleet admission adds `r·S` for hosts whose clocks differ
//! by up to `S` (a host running ahead refills at most `r·S` phantom tokens: issue 13). A
//! fixed 1 s window (what `bench admission` checks) misses an interval that straddles two
//! windows; this checks all of them.
//!
//! Every interval in O(n): with grants sorted, the interval `[t_i, t_j]` holds `j − i + 1`
//! grants, so its excess over the rate is `f(j) − f(i) + 1` with `f(k) = k − r·t_k`. For
//! each `j` the worst `i` is the one with the least `f` so far. Equal instants are all
//! counted: among them `f` grows with the index, so the least `f` is the first of them and
//! the greatest the last.

use serde::Serialize;

/// The interval with the least slack, and whether every interval kept the bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundCheck {
    /// Every interval held at most `burst + rate·length + rate·skew` grants.
    pub ok: bool,
    /// Grants in the worst interval (the one furthest above, or least below, its limit).
    pub worst_window: u64,
    /// That interval's limit: `burst + rate·length_s + skew_term`.
    pub window_limit: f64,
    /// Where the worst interval starts (epoch µs) and how long it is.
    pub worst_window_start_us: u64,
    pub worst_window_s: f64,
    /// `rate·skew`: the grants clock skew between hosts may add to any interval.
    pub skew_term: f64,
}

/// Check `grants` (epoch µs, any order) against `burst + rate·(b − a) + rate·skew_s` over
/// every interval `[a, b]`. No grants: trivially held.
pub fn check(grants: &[u64], rate: f64, burst: f64, skew_s: f64) -> BoundCheck {
    let skew_term = rate * skew_s;
    let mut sorted = grants.to_vec();
    sorted.sort_unstable();
    let Some(&first) = sorted.first() else {
        return BoundCheck {
            ok: true,
            worst_window: 0,
            window_limit: burst + skew_term,
            worst_window_start_us: 0,
            worst_window_s: 0.0,
            skew_term,
        };
    };
    // Seconds from the first grant keep `f` well inside f64's precision.
    let f = |k: usize| k as f64 - rate * (sorted[k] - first) as f64 / 1e6;
    let (mut min_i, mut min_f) = (0, f(0));
    let (mut best_i, mut best_j, mut best_excess) = (0, 0, f64::NEG_INFINITY);
    for j in 0..sorted.len() {
        let fj = f(j);
        if fj < min_f {
            (min_i, min_f) = (j, fj);
        }
        let excess = fj - min_f + 1.0;
        if excess > best_excess {
            (best_i, best_j, best_excess) = (min_i, j, excess);
        }
    }
    let length_s = (sorted[best_j] - sorted[best_i]) as f64 / 1e6;
    let count = (best_j - best_i + 1) as u64;
    let window_limit = burst + rate * length_s + skew_term;
    BoundCheck {
        // A tolerance for the float sums only: the counts are whole grants.
        ok: count as f64 <= window_limit + 1e-9,
        worst_window: count,
        window_limit,
        worst_window_start_us: sorted[best_i],
        worst_window_s: length_s,
        skew_term,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    /// `n` grants evenly spaced at `rate` per second from `start`.
    fn paced(start: u64, n: usize, rate: f64) -> Vec<u64> {
        (0..n)
            .map(|k| start + (k as f64 * 1e6 / rate) as u64)
            .collect()
    }

    #[test]
    fn a_burst_then_the_rate_holds_exactly() {
        // 5 at once, then one every 50 ms: the bucket at 20/s burst 5 to the letter.
        let mut grants = vec![0; 5];
        grants.extend(paced(50_000, 200, 20.0));
        let c = check(&grants, 20.0, 5.0, 0.0);
        assert!(c.ok, "{c:?}");
        assert!(c.worst_window as f64 <= c.window_limit + 1e-9);
    }

    #[test]
    fn one_grant_over_the_burst_fails_without_skew_and_holds_with_it() {
        let grants = vec![7 * SECOND; 6];
        let c = check(&grants, 20.0, 5.0, 0.0);
        assert!(!c.ok, "{c:?}");
        assert_eq!((c.worst_window, c.worst_window_s), (6, 0.0));
        assert_eq!(c.worst_window_start_us, 7 * SECOND);
        // A 1 s skew bound allows 20 more.
        let c = check(&grants, 20.0, 5.0, 1.0);
        assert!(c.ok, "{c:?}");
        assert_eq!(c.skew_term, 20.0);
    }

    #[test]
    fn two_hosts_each_with_a_full_budget_break_the_bound() {
        // What hosts that do not share produce: each admits the key's whole rate.
        let mut grants = paced(0, 200, 20.0);
        grants.extend(paced(25_000, 200, 20.0));
        let c = check(&grants, 20.0, 5.0, 1.0);
        assert!(!c.ok, "{c:?}");
        // The worst interval is long: the excess grows with its length.
        assert!(c.worst_window_s > 9.0, "{c:?}");
        assert!(c.worst_window as f64 > c.window_limit);
    }

    #[test]
    fn an_interval_across_two_fixed_windows_is_caught() {
        // 30 grants from 0.5 s, 0.92 s apart end to end: fixed 1 s windows hold 16 and
        // 14 (both under 20, so a fixed-window check passes), but at burst 5 the bucket
        // allows 5 + 20·0.92 ≈ 23 in the interval they span.
        let grants = paced(SECOND / 2, 30, 30.0 / 0.95);
        let c = check(&grants, 20.0, 5.0, 0.0);
        assert!(!c.ok, "{c:?}");
    }

    #[test]
    fn order_does_not_matter_and_empty_holds() {
        let mut grants = paced(0, 50, 20.0);
        let forward = check(&grants, 20.0, 5.0, 0.0);
        grants.reverse();
        assert_eq!(check(&grants, 20.0, 5.0, 0.0), forward);
        assert!(check(&[], 20.0, 5.0, 0.0).ok);
    }
}
