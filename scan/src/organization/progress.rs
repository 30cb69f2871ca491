//! Per-account progress of an organization scan: the run writes it as accounts move
//! through their phases; handles, the CLI's bars and the service read snapshots at any
//! time without messaging the run (as [`ScanHandle::progress`](crate::ScanHandle::progress)
//! does for one account's datasets).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::organization::report::SkipReason;
use tollgate_collectors::output::DatasetStatus;
use tollgate_collectors::{DatasetProgress, DiscoveryReport, Progress};

/// Where one account is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountPhase {
    /// Waiting for a slot.
    Queued,
    /// Getting the member role's credentials (`AssumeRole`).
    Assuming,
    /// Its scan runs (regions, then datasets).
    Scanning,
    /// Its scan finished with this (worst dataset) status.
    Finished(DatasetStatus),
    /// Not scanned.
    Skipped(SkipReason),
}

impl AccountPhase {
    /// Whether the account is done (finished or skipped).
    pub fn is_over(self) -> bool {
        matches!(self, AccountPhase::Finished(_) | AccountPhase::Skipped(_))
    }
}

/// One account's progress at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountProgress {
    /// The account id.
    pub account: String,
    /// Its phase.
    pub phase: AccountPhase,
    /// Its datasets' counters, once its scan started.
    pub datasets: Vec<DatasetProgress>,
}

/// An organization scan's progress at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrganizationProgress {
    /// Accounts `ListAccounts` returned; `None` while listing (the accounts of the pages
    /// already listed are in `accounts` meanwhile).
    pub listed: Option<u64>,
    /// Every account the scan covers (skipped ones included), in start order.
    pub accounts: Vec<AccountProgress>,
}

/// The writer and reader side (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct ProgressBoard(Arc<Mutex<Board>>);

#[derive(Debug, Default)]
struct Board {
    listed: Option<u64>,
    accounts: Vec<(String, AccountPhase, Vec<Progress>)>,
    /// Finished accounts' reports not yet taken, kept only once a reader asked for them
    /// ([`ProgressBoard::keep_finished`]): nobody pays for copies nobody reads.
    finished: Option<Vec<DiscoveryReport>>,
}

impl ProgressBoard {
    fn board(&self) -> MutexGuard<'_, Board> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A `ListAccounts` page was planned: `queued` accounts wait for a slot, `skipped`
    /// are not scanned. Pages add to what earlier pages gave.
    pub(crate) fn add(&self, queued: &[String], skipped: &[(String, SkipReason)]) {
        let mut board = self.board();
        board.accounts.extend(
            queued
                .iter()
                .map(|a| (a.clone(), AccountPhase::Queued, Vec::new()))
                .chain(
                    skipped
                        .iter()
                        .map(|(a, r)| (a.clone(), AccountPhase::Skipped(*r), Vec::new())),
                ),
        );
    }

    /// The listing ended with `listed` accounts.
    pub(crate) fn listed(&self, listed: u64) {
        self.board().listed = Some(listed);
    }

    /// `account` moved to `phase`.
    pub(crate) fn set(&self, account: &str, phase: AccountPhase) {
        if let Some(entry) = self
            .board()
            .accounts
            .iter_mut()
            .find(|(a, ..)| a == account)
        {
            entry.1 = phase;
        }
    }

    /// `account`'s scan started with these dataset counters.
    pub(crate) fn scanning(&self, account: &str, progress: Vec<Progress>) {
        if let Some(entry) = self
            .board()
            .accounts
            .iter_mut()
            .find(|(a, ..)| a == account)
        {
            entry.1 = AccountPhase::Scanning;
            entry.2 = progress;
        }
    }

    /// From now on, keep each finished account's report for [`ProgressBoard::take_finished`].
    pub(crate) fn keep_finished(&self) {
        self.board().finished.get_or_insert_with(Vec::new);
    }

    /// `report`'s account finished: kept if a reader asked for finished reports.
    pub(crate) fn finished(&self, report: &DiscoveryReport) {
        if let Some(kept) = self.board().finished.as_mut() {
            kept.push(report.clone());
        }
    }

    /// The finished accounts' reports kept since the last call, in finishing order.
    pub(crate) fn take_finished(&self) -> Vec<DiscoveryReport> {
        self.board()
            .finished
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A snapshot.
    pub fn snapshot(&self) -> OrganizationProgress {
        let board = self.board();
        OrganizationProgress {
            listed: board.listed,
            accounts: board
                .accounts
                .iter()
                .map(|(account, phase, datasets)| AccountProgress {
                    account: account.clone(),
                    phase: *phase,
                    datasets: datasets.iter().map(Progress::snapshot).collect(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_collectors::Dataset;

    #[test]
    fn phases_and_dataset_counters_show_in_snapshots() {
        let board = ProgressBoard::default();
        assert_eq!(board.snapshot().listed, None);
        board.add(&["111111111111".into()], &[]);
        board.add(
            &["222222222222".into()],
            &[("333333333333".into(), SkipReason::Suspended)],
        );
        assert_eq!(board.snapshot().listed, None, "still listing");
        assert_eq!(board.snapshot().accounts.len(), 3);
        board.listed(3);
        board.set("111111111111", AccountPhase::Assuming);
        let kms = Progress::new(Dataset::KmsKeys);
        board.scanning("222222222222", vec![kms.clone()]);
        kms.items_more(4);
        let s = board.snapshot();
        assert_eq!(s.listed, Some(3));
        let phases: Vec<AccountPhase> = s.accounts.iter().map(|a| a.phase).collect();
        assert_eq!(
            phases,
            [
                AccountPhase::Assuming,
                AccountPhase::Scanning,
                AccountPhase::Skipped(SkipReason::Suspended)
            ]
        );
        assert_eq!(s.accounts[1].datasets[0].items, 4);
        assert!(s.accounts[2].phase.is_over() && !s.accounts[0].phase.is_over());
    }
}
