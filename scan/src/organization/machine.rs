//! The organization scan's loop as a state machine: events in ([`Event`]: a listing page,
//! an account's end, the cancellation), steps out ([`Action`]: start this account, wait
//! for these things, done). No future, no clock, no actor: the driver in
//! [`run`](super::run) owns those, tells the machine what happened and what time says
//! (`deadline_passed`, `cancelled`), and does what it is told. Every rule is therefore a
//! row in a table test below, like [`next_step`]'s, which the machine applies.
//!
//! The machine also keeps the report's account parts (skips, listed count, the listing's
//! error, the scanned accounts' spooled reports: the driver spooled them before telling
//! the machine) and the progress board, which is in-memory state the embedder reads (no
//! I/O).

use std::collections::VecDeque;
use std::num::NonZeroUsize;

use tollgate_collectors::output::Reason;
use tollgate_engine::aws::{CallError, CallErrorKind};

use crate::organization::progress::{AccountPhase, ProgressBoard};
use crate::organization::report::{SkipReason, SkippedAccount};
use crate::organization::request::AccountFilter;
use crate::organization::schedule::{next_step, Slots, Step};
use crate::organization::select::{ListedAccount, Plan, Planner};
use crate::organization::spool::SpooledAccount;

/// Why an account not started by the deadline is skipped (queued, or its turn came late).
pub(crate) const DEADLINE_SKIP: &str = "not reached before the organization's deadline (--timeout)";
/// Why an account not started before the cancellation is skipped.
pub(crate) const CANCEL_SKIP: &str = "the scan was cancelled before this account started";

/// How one account ended.
#[derive(Debug)]
pub enum Outcome {
    /// Its scan's report, spooled.
    Scanned(Box<SpooledAccount>),
    /// Why it was not scanned.
    Skipped(SkippedAccount),
}

/// What happened.
#[derive(Debug)]
pub enum Event {
    /// A `ListAccounts` page was answered (or failed); `more`: the listing has another.
    Page {
        /// Its accounts, or the error that ends the listing.
        listed: Result<Vec<ListedAccount>, CallError>,
        /// Another page follows (ignored after an error).
        more: bool,
    },
    /// A started account ended.
    AccountEnded(Outcome),
    /// The scan's cancellation was seen (the driver removed the hub's queued waiters).
    Cancelled,
    /// The driver woke for the deadline: nothing else happened.
    Woke,
}

/// What the driver waits for in [`Action::Wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitFor {
    /// A running account's end.
    pub account: bool,
    /// The listing's next page (when false, the driver drops its pager).
    pub page: bool,
    /// The cancellation (until it has been seen once).
    pub cancel: bool,
    /// The deadline (accounts are queued and it has not passed).
    pub deadline: bool,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start this account's task.
    Start(String),
    /// Wait for one of these, then tell the machine.
    Wait(WaitFor),
    /// The scan is over: take the report parts.
    Done,
}

/// What time and the cancellation token say at the instant the driver asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Now {
    /// The organization's deadline has passed.
    pub deadline_passed: bool,
    /// The scan was cancelled.
    pub cancelled: bool,
}

/// The report's account parts the machine accumulates.
#[derive(Debug, Default)]
pub struct Accounts {
    /// Scanned accounts' spooled reports, in the order they ended.
    pub scanned: Vec<SpooledAccount>,
    /// Accounts not scanned, with their reasons.
    pub skipped: Vec<SkippedAccount>,
    /// Accounts the listing named (each once), once it ended.
    pub listed: u64,
    /// The listing's failure, if a page failed.
    pub error: Option<Reason>,
}

/// The loop's state.
#[derive(Debug)]
pub struct Machine {
    planner: Planner,
    queue: VecDeque<String>,
    in_flight: usize,
    listing: bool,
    cancel_seen: bool,
    max_in_flight: NonZeroUsize,
    progress: ProgressBoard,
    accounts: Accounts,
}

impl Machine {
    /// A machine before the first page: the listing is under way.
    pub fn new(
        filter: AccountFilter,
        max_in_flight: NonZeroUsize,
        progress: ProgressBoard,
    ) -> Machine {
        Machine {
            planner: Planner::new(filter),
            queue: VecDeque::new(),
            in_flight: 0,
            listing: true,
            cancel_seen: false,
            max_in_flight,
            progress,
            accounts: Accounts::default(),
        }
    }

    /// The next action at `now`.
    pub fn next(&mut self, now: Now) -> Action {
        loop {
            let step = next_step(Slots {
                queued: self.queue.len(),
                in_flight: self.in_flight,
                listing: self.listing,
                max_in_flight: self.max_in_flight,
                deadline_passed: now.deadline_passed,
                cancelled: now.cancelled,
            });
            match step {
                Step::Done => return Action::Done,
                Step::Start => {
                    let account = self.queue.pop_front().expect("a queued account");
                    self.in_flight += 1;
                    return Action::Start(account);
                }
                Step::SkipQueued(reason) => self.skip_queued(reason),
                Step::Wait => {
                    return Action::Wait(WaitFor {
                        account: self.in_flight > 0,
                        page: self.listing,
                        cancel: !self.cancel_seen,
                        deadline: !self.queue.is_empty() && !now.deadline_passed,
                    })
                }
            }
        }
    }

    /// Take in what happened.
    pub fn on(&mut self, event: Event) {
        match event {
            Event::Page { listed, more } => self.page(listed, more),
            Event::AccountEnded(outcome) => {
                self.in_flight = self.in_flight.saturating_sub(1);
                match outcome {
                    Outcome::Scanned(report) => self.accounts.scanned.push(*report),
                    Outcome::Skipped(skipped) => self.accounts.skipped.push(skipped),
                }
            }
            Event::Cancelled => self.cancel_seen = true,
            Event::Woke => {}
        }
    }

    /// Accounts the listing named, once it has ended; `None` while it goes on.
    pub fn listed(&self) -> Option<u64> {
        (!self.listing).then_some(self.accounts.listed)
    }

    /// The report's account parts (once [`Action::Done`]).
    pub fn into_accounts(self) -> Accounts {
        self.accounts
    }

    fn skip_queued(&mut self, reason: SkipReason) {
        let message = match reason {
            SkipReason::Deadline => DEADLINE_SKIP,
            _ => CANCEL_SKIP,
        };
        for account in self.queue.drain(..) {
            self.progress.set(&account, AccountPhase::Skipped(reason));
            self.accounts.skipped.push(SkippedAccount {
                account,
                reason,
                code: None,
                message: message.to_owned(),
            });
        }
    }

    fn page(&mut self, listed: Result<Vec<ListedAccount>, CallError>, more: bool) {
        match listed {
            Ok(accounts) => {
                let plan = self.planner.page(&accounts);
                self.take(plan);
                self.listing = more;
            }
            Err(e) => {
                self.accounts.error = Some(listing_failure(&e, self.planner.listed()));
                self.listing = false;
            }
        }
        if !self.listing {
            let late = self.planner.finish();
            let skipped: Vec<_> = late.iter().map(|s| (s.account.clone(), s.reason)).collect();
            self.progress.add(&[], &skipped);
            self.accounts.skipped.extend(late);
            self.accounts.listed = self.planner.listed();
            self.progress.listed(self.accounts.listed);
        }
    }

    /// One page's plan: its accounts queue behind the earlier pages', its skips are
    /// reported.
    fn take(&mut self, plan: Plan) {
        let skipped: Vec<(String, SkipReason)> = plan
            .skipped
            .iter()
            .map(|s| (s.account.clone(), s.reason))
            .collect();
        self.progress.add(&plan.scan, &skipped);
        self.accounts.skipped.extend(plan.skipped);
        self.queue.extend(plan.scan);
    }
}

/// The organization's error when a `ListAccounts` page failed after `listed` accounts:
/// the accounts of the pages before it are still scanned, the rest is not known.
fn listing_failure(e: &CallError, listed: u64) -> Reason {
    let kind = tollgate_collectors::report_builder::reason_kind(e.kind());
    let mut message = match e.kind() {
        CallErrorKind::Cancelled => "cancelled while listing the organization".to_owned(),
        CallErrorKind::DeadlineExceeded => "the organization's deadline (--timeout) passed while listing it".to_owned(),
        _ => format!("{e}; the caller must be the organization's management account or a delegated administrator, allowed organizations:ListAccounts"),
    };
    if listed > 0 {
        message.push_str(&format!(
            "; the listing stopped after {listed} accounts, which are scanned as usual; the organization's other accounts are not"
        ));
    }
    Reason {
        operation: "organizations:ListAccounts".to_owned(),
        field: None,
        kind,
        code: e.code().map(str::to_owned),
        message,
        count: 1,
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
