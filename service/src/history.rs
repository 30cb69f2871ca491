//! `History`: scan records and reports on disk (sled, in `STATE_DIR/history-v1.sled`,
//! apart from the admission directory's quota state).
//!
//! Durability: a record is written when a scan is queued and when it starts, so a
//! service killed with SIGKILL finds its scans at the next start and marks them
//! `interrupted` ([`History::interrupt_unfinished`]). A finished scan's record and report
//! are written together and flushed before the API reports it finished, so a scan
//! reported finished is never lost. [`History::apply_retention`] keeps the newest
//! reports per target and drops old ones. Schedule cursors (what each `[[schedule]]`
//! entry has handled) live here too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tollgate_collectors::DiscoveryReport;

use crate::config::Retention;
use crate::record::{ScanRecord, ScanStatus};

const RECORDS_TREE: &str = "scan-records-v1";
const REPORTS_TREE: &str = "scan-reports-v1";
const CURSORS_TREE: &str = "schedule-cursors-v1";

/// The history could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("scan history {}: {message}", .path.display())]
pub struct HistoryError {
    path: PathBuf,
    message: String,
}

/// The scan history.
#[derive(Debug, Clone)]
pub struct History {
    path: PathBuf,
    records: sled::Tree,
    reports: sled::Tree,
    cursors: sled::Tree,
    db: sled::Db,
}

impl History {
    /// Open (or create) the database at `path`.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        let fail = |e: sled::Error| HistoryError {
            path: path.to_path_buf(),
            message: format!(
                "{e}; another `tollgate serve` may be using this state directory \
                 (set TOLLGATE_STATE_DIR to give each service its own)"
            ),
        };
        let db = sled::Config::new().path(path).open().map_err(fail)?;
        Ok(History {
            path: path.to_path_buf(),
            records: db.open_tree(RECORDS_TREE).map_err(fail)?,
            reports: db.open_tree(REPORTS_TREE).map_err(fail)?,
            cursors: db.open_tree(CURSORS_TREE).map_err(fail)?,
            db,
        })
    }

    fn error(&self, what: &str, e: impl std::fmt::Display) -> HistoryError {
        HistoryError {
            path: self.path.clone(),
            message: format!("{what}: {e}"),
        }
    }

    /// Write a record (queued or running) and flush it: a service killed right after
    /// must find it at the next start.
    pub fn put(&self, record: &ScanRecord) -> Result<(), HistoryError> {
        self.insert(record)?;
        self.db.flush().map_err(|e| self.error("flushing", e))?;
        Ok(())
    }

    fn insert(&self, record: &ScanRecord) -> Result<(), HistoryError> {
        let bytes = serde_json::to_vec(record).map_err(|e| self.error("encoding a record", e))?;
        self.records
            .insert(record.scan_id.as_bytes(), bytes)
            .map_err(|e| self.error("writing a record", e))?;
        Ok(())
    }

    /// Write a finished scan's record and report, then flush both to disk.
    pub async fn finish<R: serde::Serialize + ?Sized>(
        &self,
        record: &ScanRecord,
        report: Option<&R>,
    ) -> Result<(), HistoryError> {
        if let Some(report) = report {
            let text = serde_json::to_vec_pretty(report)
                .map_err(|e| self.error("encoding a report", e))?;
            self.reports
                .insert(record.scan_id.as_bytes(), text)
                .map_err(|e| self.error("writing a report", e))?;
        }
        self.insert(record)?;
        self.db
            .flush_async()
            .await
            .map_err(|e| self.error("flushing", e))?;
        Ok(())
    }

    /// One record.
    pub fn record(&self, scan_id: &str) -> Result<Option<ScanRecord>, HistoryError> {
        match self.records.get(scan_id.as_bytes()) {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| self.error("decoding a record", e)),
            Ok(None) => Ok(None),
            Err(e) => Err(self.error("reading a record", e)),
        }
    }

    /// One report, as the pretty JSON `tollgate discover` writes.
    pub fn report_json(&self, scan_id: &str) -> Result<Option<Vec<u8>>, HistoryError> {
        self.reports
            .get(scan_id.as_bytes())
            .map(|r| r.map(|bytes| bytes.to_vec()))
            .map_err(|e| self.error("reading a report", e))
    }

    /// One report, decoded.
    pub fn report(&self, scan_id: &str) -> Result<Option<DiscoveryReport>, HistoryError> {
        match self.report_json(scan_id)? {
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| self.error("decoding a report", e)),
            None => Ok(None),
        }
    }

    /// Every record, newest queued first.
    pub fn records(&self) -> Result<Vec<ScanRecord>, HistoryError> {
        let mut records = Vec::new();
        for entry in self.records.iter() {
            let (_, bytes) = entry.map_err(|e| self.error("reading records", e))?;
            records.push(
                serde_json::from_slice::<ScanRecord>(&bytes)
                    .map_err(|e| self.error("decoding a record", e))?,
            );
        }
        records.sort_by(|a, b| {
            b.queued_at
                .cmp(&a.queued_at)
                .then(b.scan_id.cmp(&a.scan_id))
        });
        Ok(records)
    }

    /// At start-up: scans recorded queued or running belong to a service that did not
    /// stop cleanly; mark them `interrupted`, finished `now`. Returns their ids.
    pub async fn interrupt_unfinished(&self, now: u64) -> Result<Vec<String>, HistoryError> {
        let mut ids = Vec::new();
        for mut record in self.records()? {
            if record.status.is_active() {
                record.status = ScanStatus::Interrupted;
                record.finished_at = Some(now);
                self.insert(&record)?;
                ids.push(record.scan_id);
            }
        }
        self.db
            .flush_async()
            .await
            .map_err(|e| self.error("flushing", e))?;
        Ok(ids)
    }

    /// Drop finished scans beyond the newest `reports_per_target` of each target, and
    /// those finished more than `max_age` before `now`. Returns how many were dropped.
    pub fn apply_retention(&self, retention: Retention, now: u64) -> Result<usize, HistoryError> {
        let max_age = u64::try_from(retention.max_age.as_micros()).unwrap_or(u64::MAX);
        let oldest = now.saturating_sub(max_age);
        let mut by_target: BTreeMap<Option<String>, Vec<ScanRecord>> = BTreeMap::new();
        for record in self.records()? {
            if !record.status.is_active() {
                by_target
                    .entry(record.target.clone())
                    .or_default()
                    .push(record);
            }
        }
        let mut dropped = 0;
        for (_, mut records) in by_target {
            records.sort_by(|a, b| {
                b.finished_at
                    .cmp(&a.finished_at)
                    .then(b.queued_at.cmp(&a.queued_at))
            });
            for (i, record) in records.iter().enumerate() {
                let too_old = record.finished_at.unwrap_or(record.queued_at) < oldest;
                if i >= retention.reports_per_target.get() || too_old {
                    self.records
                        .remove(record.scan_id.as_bytes())
                        .and_then(|_| self.reports.remove(record.scan_id.as_bytes()))
                        .map_err(|e| self.error("dropping an old scan", e))?;
                    dropped += 1;
                }
            }
        }
        Ok(dropped)
    }
}

/// Schedule cursors: one big-endian microsecond timestamp per schedule entry.
impl crate::scheduler::CursorStore for History {
    fn cursor(&self, id: &str) -> Option<tollgate_quota::Timestamp> {
        let bytes = self.cursors.get(id.as_bytes()).ok()??;
        let micros = u64::from_be_bytes(bytes.as_ref().try_into().ok()?);
        Some(tollgate_quota::Timestamp::from_micros(micros))
    }

    fn set_cursor(&self, id: &str, at: tollgate_quota::Timestamp) {
        let stored = self
            .cursors
            .insert(id.as_bytes(), &at.as_micros().to_be_bytes())
            .and_then(|_| self.db.flush());
        if let Err(e) = stored {
            tracing::warn!(schedule = %id, error = %e, "could not store the schedule's cursor");
        }
    }
}

#[cfg(test)]
mod tests;
