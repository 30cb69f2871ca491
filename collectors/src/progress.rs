//! Progress counters: a collector bumps them as it goes; the supervisor, the CLI's progress
//! bars and embedders read snapshots whenever they like, without messaging the collector.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::dataset::Dataset;
use crate::output::DatasetStatus;

/// One dataset's progress at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetProgress {
    /// The dataset.
    pub dataset: Dataset,
    /// Resources found by the listing calls so far.
    pub listed: u64,
    /// Per-resource calls planned so far (grows as listing pages arrive).
    pub planned: u64,
    /// Per-resource calls finished (answered or failed).
    pub done: u64,
    /// Items in the report so far.
    pub items: u64,
    /// The final status, once the dataset finished.
    pub finished: Option<DatasetStatus>,
}

/// The writer side, held by one collector (cheap to clone).
#[derive(Debug, Clone)]
pub struct Progress {
    dataset: Dataset,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    listed: AtomicU64,
    planned: AtomicU64,
    done: AtomicU64,
    items: AtomicU64,
    /// 0 running; otherwise 1 + the status's position.
    finished: AtomicU8,
}

const STATUSES: [DatasetStatus; 4] = [
    DatasetStatus::Complete,
    DatasetStatus::Partial,
    DatasetStatus::Failed,
    DatasetStatus::Cancelled,
];

impl Progress {
    /// Fresh counters for `dataset`.
    pub fn new(dataset: Dataset) -> Self {
        Progress {
            dataset,
            counters: Arc::default(),
        }
    }

    /// The dataset.
    pub fn dataset(&self) -> Dataset {
        self.dataset
    }

    /// `n` more resources listed.
    pub fn listed_more(&self, n: usize) {
        self.counters.listed.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` more per-resource calls planned.
    pub fn plan_more(&self, n: usize) {
        self.counters.planned.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` per-resource calls finished.
    pub fn done(&self, n: usize) {
        self.counters.done.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `n` more items in the report.
    pub fn items_more(&self, n: usize) {
        self.counters.items.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The dataset finished with `status`.
    pub fn finish(&self, status: DatasetStatus) {
        let position = STATUSES.iter().position(|s| *s == status).unwrap_or(0) as u8;
        self.counters
            .finished
            .store(position + 1, Ordering::Release);
    }

    /// A snapshot.
    pub fn snapshot(&self) -> DatasetProgress {
        let c = &self.counters;
        let finished = match c.finished.load(Ordering::Acquire) {
            0 => None,
            n => STATUSES.get(n as usize - 1).copied(),
        };
        DatasetProgress {
            dataset: self.dataset,
            listed: c.listed.load(Ordering::Relaxed),
            planned: c.planned.load(Ordering::Relaxed),
            done: c.done.load(Ordering::Relaxed),
            items: c.items.load(Ordering::Relaxed),
            finished,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_final_status_show_in_snapshots() {
        let p = Progress::new(Dataset::KmsKeys);
        let reader = p.clone();
        p.listed_more(3);
        p.plan_more(6);
        p.done(2);
        p.items_more(1);
        let s = reader.snapshot();
        assert_eq!((s.listed, s.planned, s.done, s.items), (3, 6, 2, 1));
        assert_eq!(s.finished, None);
        p.finish(DatasetStatus::Partial);
        assert_eq!(reader.snapshot().finished, Some(DatasetStatus::Partial));
    }
}
