//! A grant's tokens: a run of future-dated due instants, and the window each may be spent in.
//!
//! Why windows? A token due at `e` stands for the GCRA instant `e − T`; spending it inside
//! `[e − W, e − C]` (on the spending host's clock) is what makes the fleet bound a count of
//! due instants in an interval (see [`crate::fleet`]). `C = 1/rate` and
//! `W − C = (burst − 1)/rate` come from the policy's rate *without* the penalty factor: the
//! factor only spaces due instants further apart, so halving it can never let two bursts
//! through at the switch. `W − C` is at least [`MIN_TOLERANCE`]: a burst-1 key would
//! otherwise have windows of one instant, which no timer hits.

use std::time::Duration;

use crate::time::{secs_ceil, Timestamp};

/// The shortest time a token may be spent in (bursts near 1 are widened to it; the bound
/// then counts `1 + rate·MIN_TOLERANCE` for the burst).
pub const MIN_TOLERANCE: Duration = Duration::from_millis(50);

/// A grant's first token closes at least this long after the write (less if the window is
/// shorter): the answer's way back to the host, so the first token is still spendable.
pub const SPEND_LEAD: Duration = Duration::from_millis(100);

/// Where a token due at `e` may be spent: `[e − open_before, e − close_before]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpendWindow {
    /// `W`: `burst/rate` (rounded down to the µs), at least `C + MIN_TOLERANCE`.
    pub open_before: Duration,
    /// `C`: `1/rate` (rounded up to the µs).
    pub close_before: Duration,
}

impl SpendWindow {
    /// The window of a policy with `rate` tokens/s (without the penalty factor) and `burst`.
    pub fn for_policy(rate: f64, burst: f64) -> Self {
        let close_before = secs_ceil(1.0 / rate);
        let tolerance =
            Duration::from_micros(((burst - 1.0).max(0.0) / rate * 1e6) as u64).max(MIN_TOLERANCE);
        SpendWindow {
            open_before: close_before + tolerance,
            close_before,
        }
    }

    /// How long each token may be spent in: `W − C`.
    pub fn tolerance(&self) -> Duration {
        self.open_before - self.close_before
    }

    /// How far after the write the first token's window closes, at least.
    pub fn lead(&self) -> Duration {
        self.tolerance().min(SPEND_LEAD)
    }

    /// [`SpendWindow::lead`] for a writer whose answers take `round_trip` to come back:
    /// at least the round trip plus half the lead, so the first token is still open when
    /// the grant arrives. Without it a table slower than the lead (a loaded dynalite: 100
    /// ms and more) hands every block's first tokens out already closed; a host whose
    /// blocks are small then starves and asks again and again, and the hosts race each
    /// other's writes. Placing tokens later never adds any to an interval (the bound).
    pub fn lead_for(&self, round_trip: Duration) -> Duration {
        if round_trip.is_zero() {
            return self.lead();
        }
        self.lead().max(round_trip + self.lead() / 2)
    }
}

/// `count` tokens due at `first_due + j·spacing` (j = 0..count), each spendable in its
/// window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenRun {
    pub first_due: Timestamp,
    /// `T = 1/(rate·factor)`, rounded up to the µs (never closer than the rate allows).
    pub spacing: Duration,
    pub count: u64,
    pub window: SpendWindow,
}

impl TokenRun {
    /// The due instant of token `j` (from 0).
    pub fn due(&self, j: u64) -> Timestamp {
        Timestamp::from_micros(
            self.first_due
                .as_micros()
                .saturating_add(j.saturating_mul(self.spacing.as_micros() as u64)),
        )
    }

    /// The first instant token `j` may be spent.
    pub fn opens(&self, j: u64) -> Timestamp {
        self.due(j).saturating_sub(self.window.open_before)
    }

    /// The last instant token `j` may be spent.
    pub fn closes(&self, j: u64) -> Timestamp {
        self.due(j).saturating_sub(self.window.close_before)
    }

    /// The due instant of the last token (the item's `tat` after the grant).
    pub fn last_due(&self) -> Timestamp {
        self.due(self.count.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_spans_burst_minus_one_tokens_of_the_unpenalized_rate() {
        let w = SpendWindow::for_policy(20.0, 5.0);
        assert_eq!(w.close_before, Duration::from_millis(50));
        assert_eq!(w.open_before, Duration::from_millis(250));
        assert_eq!(w.lead(), SPEND_LEAD);
    }

    #[test]
    fn a_slow_table_pushes_the_first_token_past_its_round_trip() {
        let w = SpendWindow::for_policy(200.0, 20.0); // lead = W − C = 95 ms
        let ms = Duration::from_millis;
        for (round_trip, lead) in [
            (ms(0), ms(95)),
            (ms(20), ms(95)),
            (ms(100), Duration::from_micros(147_500)),
            (ms(400), Duration::from_micros(447_500)),
        ] {
            assert_eq!(w.lead_for(round_trip), lead, "round trip {round_trip:?}");
        }
    }

    #[test]
    fn a_burst_of_one_gets_the_minimum_tolerance() {
        let w = SpendWindow::for_policy(10.0, 1.0);
        assert_eq!(w.tolerance(), MIN_TOLERANCE);
        assert_eq!(w.lead(), MIN_TOLERANCE);
    }

    #[test]
    fn rounding_never_widens_the_window() {
        let w = SpendWindow::for_policy(3.0, 2.0);
        assert_eq!(w.close_before, Duration::from_micros(333_334));
        assert_eq!(w.tolerance(), Duration::from_micros(333_333));
    }

    #[test]
    fn a_runs_tokens_are_evenly_spaced() {
        let run = TokenRun {
            first_due: Timestamp::from_millis(1_000),
            spacing: Duration::from_millis(50),
            count: 3,
            window: SpendWindow::for_policy(20.0, 5.0),
        };
        assert_eq!(run.last_due(), Timestamp::from_millis(1_100));
        assert_eq!(run.opens(1), Timestamp::from_millis(800));
        assert_eq!(run.closes(2), Timestamp::from_millis(1_050));
    }
}
