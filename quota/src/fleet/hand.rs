//! The tokens a host holds for one key: the granted runs, oldest first, and how far each
//! is spent.
//!
//! Split from [`super::host`] so the ledger reads as its modes and requests: this file
//! only knows token windows. Rules: tokens are spent in order, each only inside its
//! window (on this host's clock); a token whose window passed unspent is dropped, never
//! returned.

use std::collections::VecDeque;
use std::time::Duration;

use crate::fleet::window::TokenRun;
use crate::time::Timestamp;

/// A granted run and how far it is spent.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Held {
    run: TokenRun,
    /// The next token to spend (tokens before it were spent or lapsed).
    next: u64,
}

/// The runs in hand, oldest first (at most the current one and a prefetched one).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Hand {
    runs: VecDeque<Held>,
}

impl Hand {
    /// No tokens.
    pub(crate) const EMPTY: Hand = Hand {
        runs: VecDeque::new(),
    };

    /// Take a granted run in hand (an empty one adds nothing).
    pub(crate) fn push(&mut self, run: TokenRun) {
        if run.count > 0 {
            self.runs.push_back(Held { run, next: 0 });
        }
    }

    /// The unspent tokens in hand whose window has not passed at `now`, in order:
    /// (opens, closes) of each.
    pub(crate) fn tokens(
        &self,
        now: Timestamp,
    ) -> impl Iterator<Item = (Timestamp, Timestamp)> + '_ {
        self.runs
            .iter()
            .flat_map(|h| (h.next..h.run.count).map(|j| (h.run.opens(j), h.run.closes(j))))
            .filter(move |(_, closes)| *closes >= now)
    }

    /// When the next `cost` tokens in hand are all spendable (`None`: not enough tokens).
    pub(crate) fn spendable_at(&self, cost: u64, now: Timestamp) -> Option<Timestamp> {
        let mut open = Timestamp::ZERO;
        let mut close = Timestamp::from_micros(u64::MAX);
        let mut n = 0;
        for (opens, closes) in self.tokens(now).take(cost.max(1) as usize) {
            open = open.max(opens);
            close = close.min(closes);
            n += 1;
        }
        if n < cost.max(1) {
            return None;
        }
        // Windows of tokens from two runs may not overlap: wait for the first to lapse.
        Some(if open <= close {
            open.max(now)
        } else {
            close + Duration::from_micros(1)
        })
    }

    /// Drop the tokens whose window passed unspent (they are lost, never returned).
    /// Returns whether any lapsed.
    pub(crate) fn drop_lapsed(&mut self, now: Timestamp) -> bool {
        let mut lapsed = false;
        while let Some(h) = self.runs.front_mut() {
            while h.next < h.run.count && h.run.closes(h.next) < now {
                h.next += 1;
                lapsed = true;
            }
            if h.next < h.run.count {
                break;
            }
            self.runs.pop_front();
        }
        lapsed
    }

    /// Spend the next `cost` tokens in hand (as many as there are).
    pub(crate) fn spend(&mut self, mut cost: u64) {
        while cost > 0 {
            let Some(h) = self.runs.front_mut() else {
                break;
            };
            let spent = cost.min(h.run.count - h.next);
            h.next += spent;
            cost -= spent;
            if h.next == h.run.count {
                self.runs.pop_front();
            }
        }
    }

    /// Tokens in hand, unspent (some may lapse before they are spent).
    pub(crate) fn left(&self) -> u64 {
        self.runs.iter().map(|h| h.run.count - h.next).sum()
    }

    /// The last token in hand may be spent until this instant.
    pub(crate) fn spend_until(&self) -> Option<Timestamp> {
        self.runs.back().map(|h| h.run.closes(h.run.count - 1))
    }
}
