//! `ReportBuilder`: turns a collector's calls into an honest dataset report.
//!
//! Collectors never decide a status themselves. They hand every failed call to the
//! builder, which knows the rules:
//! - a fatal answer to a per-item read (access denied, an operation the endpoint does not
//!   implement, a response that is not this operation's) leaves that field `null` and is
//!   explained in `reasons`; the list is still complete;
//! - a per-item read lost to throttling, retry exhaustion, transient errors, admission or
//!   the deadline makes the dataset `partial`;
//! - a failed listing call makes it `failed` (what was listed before stays in `items`);
//! - cancellation makes it `cancelled`.
//!
//! Reasons are deduplicated by (operation, field, kind, code) and counted.

use crate::aws::{CallError, CallErrorKind};
use crate::output::{DatasetReport, DatasetStatus, Item, Reason};

/// Accumulates one dataset's items, reasons and status.
#[derive(Debug, Default)]
pub struct ReportBuilder {
    items: Vec<Item>,
    reasons: Vec<Reason>,
    status: Option<DatasetStatus>,
}

impl ReportBuilder {
    /// An empty, so far complete, dataset.
    pub fn new() -> Self {
        ReportBuilder::default()
    }

    /// Add an item.
    pub fn push(&mut self, item: Item) {
        self.items.push(item);
    }

    /// Items collected so far.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when no item was collected.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// A per-item read failed; the item keeps `field` as `null`.
    pub fn value_missing(&mut self, operation: &str, field: &str, error: &CallError) {
        let kind = reason_kind(error.kind());
        self.note(operation, Some(field), kind, error);
        match error.kind() {
            CallErrorKind::Fatal => {}
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Partial),
        }
    }

    /// A per-item read the dataset cannot do without failed, so the item is missing
    /// from `items` altogether (for example a page of versions of one function).
    pub fn item_missing(&mut self, operation: &str, error: &CallError) {
        let kind = reason_kind(error.kind());
        self.note(operation, None, kind, error);
        match error.kind() {
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Partial),
        }
    }

    /// A listing call failed: the inventory is not known.
    pub fn listing_failed(&mut self, operation: &str, error: &CallError) {
        let kind = reason_kind(error.kind());
        self.note(operation, None, kind, error);
        match error.kind() {
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Failed),
        }
    }

    /// The scan was cancelled before this dataset finished.
    pub fn cancelled(&mut self) {
        self.worsen(DatasetStatus::Cancelled);
    }

    /// The status so far.
    pub fn status(&self) -> DatasetStatus {
        self.status.unwrap_or(DatasetStatus::Complete)
    }

    /// Fold `self` (one region's part) into `into`.
    pub fn merge_into(self, into: &mut ReportBuilder) {
        into.items.extend(self.items);
        for reason in self.reasons {
            match into.reasons.iter_mut().find(|r| same_cause(r, &reason)) {
                Some(existing) => existing.count += reason.count,
                None => into.reasons.push(reason),
            }
        }
        if let Some(status) = self.status {
            into.worsen(status);
        }
    }

    /// The finished report.
    pub fn finish(self) -> DatasetReport {
        DatasetReport {
            status: self.status(),
            reasons: self.reasons,
            items: self.items,
        }
    }

    fn worsen(&mut self, to: DatasetStatus) {
        self.status = Some(self.status().max(to));
    }

    fn note(&mut self, operation: &str, field: Option<&str>, kind: &str, error: &CallError) {
        let code = error.code().map(str::to_string);
        if let Some(existing) = self.reasons.iter_mut().find(|r| {
            r.operation == operation
                && r.field.as_deref() == field
                && r.kind == kind
                && r.code == code
        }) {
            existing.count += 1;
            return;
        }
        self.reasons.push(Reason {
            operation: operation.to_string(),
            field: field.map(str::to_string),
            kind: kind.to_string(),
            code,
            message: explain(error),
            count: 1,
        });
    }
}

fn same_cause(a: &Reason, b: &Reason) -> bool {
    a.operation == b.operation && a.field == b.field && a.kind == b.kind && a.code == b.code
}

/// The `kind` spelled in a reason.
fn reason_kind(kind: CallErrorKind) -> &'static str {
    match kind {
        CallErrorKind::Fatal => "unavailable",
        CallErrorKind::Throttled => "throttled",
        CallErrorKind::Transient => "transient",
        CallErrorKind::RetryAllowanceExhausted => "retries_exhausted",
        CallErrorKind::DeadlineExceeded => "deadline_exceeded",
        CallErrorKind::Cancelled => "cancelled",
        CallErrorKind::Admission => "admission",
        #[allow(unreachable_patterns)] // the error taxonomy is non_exhaustive
        _ => "failed",
    }
}

/// A one-line explanation: operation, kind, code, status, message and attempts.
fn explain(error: &CallError) -> String {
    error.to_string()
}
