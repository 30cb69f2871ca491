//! The rolling window: at most ⌊max(1, rate)⌋ starts in any window of max(1 s, 1/rate).
//!
//! A token bucket alone lets `burst + rate` starts through in the first second; AWS
//! counts requests per second, so the window caps what any one second (or, for rates
//! below 1/s, any `1/rate` seconds) sees. Starts are kept as run-length pairs
//! `(instant, count)` so a conservative "window full at `now`" after an unclean takeover
//! is one entry, whatever the limit.
//!
//! A window holds at most `limit` runs. Above [`EXACT_RUNS`] (rates above 1,000/s) each
//! start is recorded at its instant rounded *up* to a 1/[`EXACT_RUNS`] of the window, so a
//! window holds at most that many runs however high the rate: the state the coordinator
//! stores every 100 ms stays a few kilobytes instead of one entry per start. Counting a
//! start a little later only keeps it in the window longer (never admits more), at a cost
//! of at most 0.1% of a window's capacity.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::{secs_ceil, Timestamp};

/// Above this limit, starts are recorded at a resolution of `length / EXACT_RUNS`.
pub const EXACT_RUNS: u64 = 1_000;

/// The window's shape for one rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowShape {
    /// Most starts allowed in any window.
    pub limit: u64,
    /// Window length.
    pub length: Duration,
}

impl WindowShape {
    /// The instant a start at `now` is counted at: `now`, or for limits above
    /// [`EXACT_RUNS`], `now` rounded up to a multiple of `length / EXACT_RUNS`.
    pub fn counted_at(&self, now: Timestamp) -> Timestamp {
        if self.limit <= EXACT_RUNS {
            return now;
        }
        let step = (self.length.as_micros() as u64 / EXACT_RUNS).max(1);
        Timestamp::from_micros(now.as_micros().div_ceil(step).saturating_mul(step))
    }

    /// The shape for a configured rate (the configured rate, not the penalised one: the
    /// penalty slows the bucket; the window keeps its AWS-facing meaning).
    pub fn for_rate(rate_per_second: f64) -> Self {
        let limit = rate_per_second.max(1.0).floor() as u64;
        let length = if rate_per_second >= 1.0 {
            Duration::from_secs(1)
        } else {
            secs_ceil(1.0 / rate_per_second)
        };
        WindowShape { limit, length }
    }
}

/// Recent starts, oldest first, as `(instant, count)` runs, with their running total so a
/// check costs O(1) however high the limit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RollingWindow {
    starts: VecDeque<(Timestamp, u64)>,
    total: u64,
}

impl RollingWindow {
    /// A window that counts as full at `now`: no start before `now + length`.
    pub fn full_at(shape: WindowShape, now: Timestamp) -> Self {
        RollingWindow {
            starts: VecDeque::from([(now, shape.limit)]),
            total: shape.limit,
        }
    }

    /// Forget starts that no window ending at `now` or later can hold.
    fn prune(&mut self, shape: WindowShape, now: Timestamp) {
        while let Some(&(at, n)) = self.starts.front() {
            if at + shape.length <= now {
                self.starts.pop_front();
                self.total -= n;
            } else {
                break;
            }
        }
    }

    /// Starts inside the window that ends at `now`.
    pub fn count(&mut self, shape: WindowShape, now: Timestamp) -> u64 {
        self.prune(shape, now);
        self.total
    }

    /// When one more start fits, or `None` if it fits now.
    pub fn ready_at(&mut self, shape: WindowShape, now: Timestamp) -> Option<Timestamp> {
        self.prune(shape, now);
        if self.total < shape.limit {
            return None;
        }
        // Enough of the oldest starts must leave that `limit - 1` remain.
        let mut must_leave = self.total - (shape.limit - 1);
        for &(at, n) in &self.starts {
            if n >= must_leave {
                return Some(at + shape.length);
            }
            must_leave -= n;
        }
        unreachable!("must_leave is at most the total count")
    }

    /// Record a start at `now`; the caller has checked [`RollingWindow::ready_at`]. It is
    /// counted at `now`, or (limits above [`EXACT_RUNS`]) `now` rounded up to the window's
    /// resolution; or in the newest run if that is later still.
    pub fn record(&mut self, shape: WindowShape, now: Timestamp) {
        self.prune(shape, now);
        self.total += 1;
        let at = shape.counted_at(now);
        match self.starts.back_mut() {
            Some((last, n)) if *last >= at => *n += 1,
            _ => self.starts.push_back((at, 1)),
        }
    }

    /// Forget one start recorded at `admitted_at` that never went out (a paired
    /// admission's refunded half). It was counted in the earliest run at or after
    /// `shape.counted_at(admitted_at)` (a later newest run absorbs a start, and runs are
    /// in order), so that run loses one. A start already pruned is gone anyway.
    pub fn forget(&mut self, shape: WindowShape, admitted_at: Timestamp) {
        let counted = shape.counted_at(admitted_at);
        let Some(i) = self.starts.iter().position(|&(at, _)| at >= counted) else {
            return;
        };
        self.total -= 1;
        self.starts[i].1 -= 1;
        if self.starts[i].1 == 0 {
            self.starts.remove(i);
        }
    }

    /// Record `n` starts at `now` at once, whatever the limit says: what a restore charges
    /// for the starts a dead coordinator may have granted under its lease. If the newest
    /// recorded start is later than `now` (another process's clock ran ahead), they are
    /// recorded at that instant instead: later counts longer, and runs stay in order.
    pub fn record_many(&mut self, shape: WindowShape, now: Timestamp, n: u64) {
        if n == 0 {
            return;
        }
        self.prune(shape, now);
        self.total += n;
        match self.starts.back_mut() {
            Some((at, count)) if *at >= now => *count += n,
            _ => self.starts.push_back((now, n)),
        }
    }

    /// Number of stored runs (for memory accounting in status output).
    pub fn runs(&self) -> usize {
        self.starts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn shapes() {
        let table = [
            (4.0, 4, 1_000),
            (25.0, 25, 1_000),
            (1.0, 1, 1_000),
            (0.5, 1, 2_000),
            (2.5, 2, 1_000),
        ];
        for (rate, limit, len_ms) in table {
            assert_eq!(
                WindowShape::for_rate(rate),
                WindowShape {
                    limit,
                    length: Duration::from_millis(len_ms)
                },
                "rate {rate}"
            );
        }
    }

    #[test]
    fn half_rate_allows_one_start_per_two_seconds() {
        let shape = WindowShape::for_rate(0.5);
        let mut w = RollingWindow::default();
        assert_eq!(w.ready_at(shape, ms(0)), None);
        w.record(shape, ms(0));
        assert_eq!(w.ready_at(shape, ms(1)), Some(ms(2_000)));
        assert_eq!(w.ready_at(shape, ms(2_000)), None);
    }

    #[test]
    fn full_window_after_takeover_blocks_one_window() {
        let shape = WindowShape::for_rate(10.0);
        let mut w = RollingWindow::full_at(shape, ms(500));
        assert_eq!(w.count(shape, ms(500)), 10);
        assert_eq!(w.ready_at(shape, ms(501)), Some(ms(1_500)));
        assert_eq!(w.ready_at(shape, ms(1_500)), None);
    }

    #[test]
    fn high_limits_keep_a_bounded_number_of_runs_and_never_count_fewer_starts() {
        let shape = WindowShape::for_rate(1e6);
        let mut w = RollingWindow::default();
        let mut exact: Vec<u64> = Vec::new();
        // 200,000 starts, one every 7 µs, over 1.4 s.
        for i in 0..200_000u64 {
            let now = Timestamp::from_micros(1_000_000 + i * 7);
            assert_eq!(w.ready_at(shape, now), None, "far below the limit");
            w.record(shape, now);
            exact.push(now.as_micros());
            assert!(w.runs() as u64 <= EXACT_RUNS + 1, "{} runs", w.runs());
            if i % 997 == 0 {
                let from = now.as_micros().saturating_sub(999_999);
                let truth = exact.iter().filter(|&&t| t >= from).count() as u64;
                assert!(
                    w.count(shape, now) >= truth,
                    "never fewer than the true starts"
                );
                assert!(
                    w.count(shape, now) <= truth + truth / 500 + 1,
                    "at most ~0.1% more"
                );
            }
        }
        // Small limits stay exact.
        let small = WindowShape::for_rate(1000.0);
        let t = Timestamp::from_micros(1_234_567);
        assert_eq!(small.counted_at(t), t);
        assert_eq!(shape.counted_at(t), Timestamp::from_micros(1_235_000));
    }

    #[test]
    fn oldest_run_leaves_first() {
        let shape = WindowShape::for_rate(3.0);
        let mut w = RollingWindow::default();
        for t in [0, 0, 400] {
            w.record(shape, ms(t));
        }
        assert_eq!(w.runs(), 2);
        assert_eq!(w.ready_at(shape, ms(500)), Some(ms(1_000)));
        w.record(shape, ms(1_000));
        assert_eq!(w.ready_at(shape, ms(1_000)), None);
        w.record(shape, ms(1_000));
        assert_eq!(w.ready_at(shape, ms(1_000)), Some(ms(1_400)));
    }
}
