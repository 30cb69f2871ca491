//! When the next account of an organization scan starts: a pure decision the run's loop
//! applies after every start and every finish.
//!
//! Fairness: the unit of scheduling is an account, never an (account, region) pair. An
//! account that starts scans all its regions at once (each region's calls are paced by
//! the account's own keys), so the next account in line waits only for a free slot,
//! never behind every region of another account. Accounts start in the plan's order
//! (listing order, page by page: the first page's accounts start while the next pages
//! are fetched), one per free slot, at most `max_in_flight` at once; the hub's calls
//! (`AssumeRole`) queue FIFO on the caller's STS key, so credentials are fetched in that
//! same order. Once the deadline has passed or the scan was cancelled, nothing more
//! starts and every account still queued is reported skipped with that reason.

use std::num::NonZeroUsize;

use crate::organization::report::SkipReason;

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Start the next queued account.
    Start,
    /// Wait for a running account to finish.
    Wait,
    /// Skip every queued account with this reason (then wait for the running ones).
    SkipQueued(SkipReason),
    /// Nothing queued, nothing running, the listing over: assemble the report.
    Done,
}

/// The loop's state at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    /// Accounts not started yet.
    pub queued: usize,
    /// Accounts running.
    pub in_flight: usize,
    /// `ListAccounts` pages are still being fetched (more accounts may come).
    pub listing: bool,
    /// At most this many at once.
    pub max_in_flight: NonZeroUsize,
    /// The organization's deadline has passed.
    pub deadline_passed: bool,
    /// The scan was cancelled.
    pub cancelled: bool,
}

/// The next step for `slots`.
pub fn next_step(slots: Slots) -> Step {
    if slots.queued == 0 {
        return if slots.in_flight == 0 && !slots.listing {
            Step::Done
        } else {
            Step::Wait
        };
    }
    if slots.cancelled {
        return Step::SkipQueued(SkipReason::Cancelled);
    }
    if slots.deadline_passed {
        return Step::SkipQueued(SkipReason::Deadline);
    }
    if slots.in_flight < slots.max_in_flight.get() {
        Step::Start
    } else {
        Step::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_its_step() {
        let max = NonZeroUsize::new(2).unwrap();
        let s = |queued, in_flight, deadline_passed, cancelled| Slots {
            queued,
            in_flight,
            listing: false,
            max_in_flight: max,
            deadline_passed,
            cancelled,
        };
        let rows = [
            (s(0, 0, false, false), Step::Done),
            (s(0, 1, false, false), Step::Wait),
            (s(0, 0, true, true), Step::Done),
            (s(3, 0, false, false), Step::Start),
            (s(3, 1, false, false), Step::Start),
            (s(3, 2, false, false), Step::Wait),
            (s(3, 2, true, false), Step::SkipQueued(SkipReason::Deadline)),
            (s(3, 0, true, false), Step::SkipQueued(SkipReason::Deadline)),
            (s(3, 1, true, true), Step::SkipQueued(SkipReason::Cancelled)),
            (
                s(1, 0, false, true),
                Step::SkipQueued(SkipReason::Cancelled),
            ),
        ];
        for (slots, step) in rows {
            assert_eq!(next_step(slots), step, "{slots:?}");
        }
        // While pages are still coming, nothing queued is not the end.
        let listing = |queued, in_flight| Slots {
            listing: true,
            ..s(queued, in_flight, false, false)
        };
        assert_eq!(next_step(listing(0, 0)), Step::Wait);
        assert_eq!(next_step(listing(0, 2)), Step::Wait);
        assert_eq!(next_step(listing(1, 1)), Step::Start);
    }

    #[test]
    fn a_loop_applying_the_steps_never_exceeds_the_slots_and_starts_in_order() {
        let max = NonZeroUsize::new(3).unwrap();
        let (mut queued, mut running, mut started, mut peak) = (10usize, 0usize, Vec::new(), 0);
        let mut next = 0;
        loop {
            match next_step(Slots {
                queued,
                in_flight: running,
                listing: false,
                max_in_flight: max,
                deadline_passed: false,
                cancelled: false,
            }) {
                Step::Start => {
                    started.push(next);
                    next += 1;
                    queued -= 1;
                    running += 1;
                    peak = peak.max(running);
                }
                Step::Wait => running -= 1,
                Step::Done => break,
                Step::SkipQueued(_) => unreachable!(),
            }
        }
        assert_eq!(peak, 3);
        assert_eq!(started, (0..10).collect::<Vec<_>>());
    }
}
