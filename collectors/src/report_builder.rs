//! `ReportBuilder`: turns a collector's calls into an honest dataset report.
//!
//! Collectors never decide a status themselves. They hand every failed call to the
//! builder, which knows the rules:
//! - a fatal answer to a per-item read (access denied, an operation the endpoint does not
//!   implement, a response that is not this operation's) leaves that field `null` and is
//!   explained in `reasons`; the list is still complete;
//! - a per-item read lost to throttling, retry exhaustion, transient errors, admission,
//!   credentials (not loaded, or expired mid-scan) or the deadline makes the dataset
//!   `partial`;
//! - a failed listing call makes it `failed` (what was listed before stays in `items`);
//! - cancellation makes it `cancelled`.
//!
//! Reasons are deduplicated by (operation, field, kind, code) and counted.

use crate::output::{
    Coverage, CoverageStatus, DatasetReport, DatasetStatus, Item, Reason, ReasonKind,
};
use tollgate_engine::aws::{CallError, CallErrorKind};

/// Accumulates one dataset's items, reasons and status.
#[derive(Debug, Default)]
pub struct ReportBuilder {
    items: Vec<Item>,
    reasons: Vec<Reason>,
    status: Option<DatasetStatus>,
    coverage: Vec<Coverage>,
    /// The first failed listing's error (code, message, whether access was denied or the
    /// operation is unavailable): what a region's coverage entry says.
    listing_error: Option<ListingError>,
}

#[derive(Debug, Clone)]
struct ListingError {
    status: CoverageStatus,
    reason: String,
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

    /// The items collected so far.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The items collected so far, to complete or drop (a later read of the same items).
    pub fn items_mut(&mut self) -> &mut Vec<Item> {
        &mut self.items
    }

    /// Items collected so far.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when no item was collected.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// A per-item read of `operation` (an [`Operation`](crate::Operation) or
    /// its `service:Operation` name) failed; the item keeps `field` as `null`.
    pub fn value_missing(&mut self, operation: impl AsRef<str>, field: &str, error: &CallError) {
        let kind = reason_kind(error.kind());
        self.note(operation.as_ref(), Some(field), kind, error);
        match error.kind() {
            CallErrorKind::Fatal => {}
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Partial),
        }
    }

    /// A read that adds to items already collected (their CloudWatch activity) failed:
    /// the items stay, `field` is `null` on them, and the dataset is `partial` whatever
    /// the failure (access denied included: the activity asked for is not all there),
    /// or `cancelled`.
    pub fn enrichment_missing(
        &mut self,
        operation: impl AsRef<str>,
        field: &str,
        error: &CallError,
    ) {
        let kind = reason_kind(error.kind());
        self.note(operation.as_ref(), Some(field), kind, error);
        match error.kind() {
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Partial),
        }
    }

    /// An optional value (a public price) could not be had: `field` is `null` on the
    /// items, `message` says why, and the status stays what it was: nothing asked of AWS
    /// is missing.
    pub fn optional_missing(
        &mut self,
        operation: &str,
        field: &str,
        kind: ReasonKind,
        code: Option<String>,
        message: String,
    ) {
        let found = self.reasons.iter_mut().find(|r| {
            r.operation == operation
                && r.field.as_deref() == Some(field)
                && r.kind == kind
                && r.code == code
        });
        match found {
            Some(existing) => existing.count += 1,
            None => self.reasons.push(Reason {
                operation: operation.to_string(),
                field: Some(field.to_string()),
                kind,
                code,
                message,
                count: 1,
            }),
        }
    }

    /// A finished report to add to (a phase after its collector, such as activity).
    pub fn from_report(report: DatasetReport) -> Self {
        ReportBuilder {
            items: report.items,
            reasons: report.reasons,
            status: Some(report.status),
            coverage: report.coverage,
            listing_error: None,
        }
    }

    /// A listing call failed: the inventory is not known.
    pub fn listing_failed(&mut self, operation: impl AsRef<str>, error: &CallError) {
        let kind = reason_kind(error.kind());
        self.note(operation.as_ref(), None, kind, error);
        if self.listing_error.is_none() {
            let status = match (error.kind(), error.code()) {
                (CallErrorKind::Cancelled, _) => CoverageStatus::Cancelled,
                (CallErrorKind::Fatal, Some(code)) if is_access_denied(code) => {
                    CoverageStatus::Denied
                }
                _ => CoverageStatus::Failed,
            };
            self.listing_error = Some(ListingError {
                status,
                reason: format!("{}: {}", operation.as_ref(), error.message()),
            });
        }
        match error.kind() {
            CallErrorKind::Cancelled => self.worsen(DatasetStatus::Cancelled),
            _ => self.worsen(DatasetStatus::Failed),
        }
    }

    /// What this dataset lists under was itself incomplete (a child type under its
    /// parent type's `partial` or `failed` listing): the dataset is at best `status`,
    /// `message` says why (one reason, counted, per distinct cause).
    pub fn inherited(&mut self, status: DatasetStatus, operation: impl AsRef<str>, message: &str) {
        let kind = ReasonKind::of_unfinished(status);
        let operation = operation.as_ref();
        match self.reasons.iter_mut().find(|r| {
            r.operation == operation && r.field.is_none() && r.kind == kind && r.code.is_none()
        }) {
            Some(existing) => existing.count += 1,
            None => self.reasons.push(Reason {
                operation: operation.to_string(),
                field: None,
                kind,
                code: None,
                message: message.to_string(),
                count: 1,
            }),
        }
        self.worsen(status);
    }

    /// The scan was cancelled before this dataset finished.
    pub fn cancelled(&mut self) {
        self.worsen(DatasetStatus::Cancelled);
    }

    /// The status so far.
    pub fn status(&self) -> DatasetStatus {
        self.status.unwrap_or(DatasetStatus::Complete)
    }

    /// Add a coverage entry of its own (a collector that knows better than the status
    /// rules, such as an unsupported Cloud Control type).
    pub fn covered(&mut self, entry: Coverage) {
        self.coverage.push(entry);
    }

    /// The coverage entry of `resource_type` in `account` and `region` (or `global`)
    /// from this builder's status so far, with `count` items: a failed listing says why
    /// (`denied` for an access-denied one).
    pub fn coverage_entry(
        &self,
        resource_type: &str,
        account: Option<&str>,
        region: &str,
        count: u64,
    ) -> Coverage {
        let (status, reason) = match (&self.listing_error, self.status()) {
            (Some(e), _) => (e.status, Some(e.reason.clone())),
            (None, DatasetStatus::Complete) => (CoverageStatus::Complete, None),
            (None, DatasetStatus::Partial) => (
                CoverageStatus::Partial,
                self.reasons
                    .first()
                    .map(|r| format!("{}: {}", r.operation, r.message)),
            ),
            (None, DatasetStatus::Failed) => (CoverageStatus::Failed, None),
            (None, DatasetStatus::Cancelled) => (CoverageStatus::Cancelled, None),
        };
        Coverage {
            resource_type: resource_type.to_string(),
            account: account.map(str::to_string),
            region: region.to_string(),
            status,
            reason,
            count,
        }
    }

    /// Whether a coverage entry was written (by [`ReportBuilder::covered`]).
    pub fn has_coverage(&self) -> bool {
        !self.coverage.is_empty()
    }

    /// Fold `self` (one region's part) into `into`.
    pub fn merge_into(self, into: &mut ReportBuilder) {
        into.items.extend(self.items);
        into.coverage.extend(self.coverage);
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
            coverage: self.coverage,
        }
    }

    fn worsen(&mut self, to: DatasetStatus) {
        self.status = Some(self.status().max(to));
    }

    fn note(&mut self, operation: &str, field: Option<&str>, kind: ReasonKind, error: &CallError) {
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
            kind,
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
pub fn reason_kind(kind: CallErrorKind) -> ReasonKind {
    match kind {
        CallErrorKind::Fatal => ReasonKind::Unavailable,
        CallErrorKind::Throttled => ReasonKind::Throttled,
        CallErrorKind::Transient => ReasonKind::Transient,
        CallErrorKind::RetryAllowanceExhausted => ReasonKind::RetriesExhausted,
        CallErrorKind::DeadlineExceeded => ReasonKind::DeadlineExceeded,
        CallErrorKind::Cancelled => ReasonKind::Cancelled,
        CallErrorKind::AllowanceExhausted => ReasonKind::AllowanceExhausted,
        CallErrorKind::Admission => ReasonKind::Admission,
        CallErrorKind::BreakerOpen => ReasonKind::BreakerOpen,
        CallErrorKind::Credentials => ReasonKind::Credentials,
        #[allow(unreachable_patterns)] // the error taxonomy is non_exhaustive
        _ => ReasonKind::Failed,
    }
}

/// A one-line explanation: operation, kind, code, status, message and attempts; plus what
/// a fatal answer with a success status means.
fn explain(error: &CallError) -> String {
    let text = error.to_string();
    let success_status = error.status().is_some_and(|s| (200..300).contains(&s));
    if error.kind() == CallErrorKind::Fatal && success_status {
        return format!(
            "{text}: the answer is not a {} response; the endpoint (an emulator or proxy?) \
             does not implement this operation",
            error.operation()
        );
    }
    text
}

/// Whether an AWS error code means access denied (`AccessDenied`,
/// `AccessDeniedException`, `UnauthorizedOperation`, `AuthorizationError`).
pub fn is_access_denied(code: &str) -> bool {
    code.starts_with("AccessDenied")
        || code == "UnauthorizedOperation"
        || code == "AuthorizationError"
        || code == "UnauthorizedException"
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallErrorKind::*;

    fn error(kind: CallErrorKind, code: Option<&str>, status: Option<u16>) -> CallError {
        let e = CallError::in_answer(kind, "GetKeyLastUsage", code.map(str::to_string), "message");
        match status {
            Some(status) => e.with_status(status),
            None => e,
        }
    }

    #[test]
    fn status_rules() {
        #[rustfmt::skip]
        let table: &[(&str, CallErrorKind, DatasetStatus)] = &[
            ("value", Fatal, DatasetStatus::Complete),
            ("value", Throttled, DatasetStatus::Partial),
            ("value", Transient, DatasetStatus::Partial),
            ("value", RetryAllowanceExhausted, DatasetStatus::Partial),
            ("value", DeadlineExceeded, DatasetStatus::Partial),
            ("value", Admission, DatasetStatus::Partial),
            ("value", BreakerOpen, DatasetStatus::Partial),
            ("listing", BreakerOpen, DatasetStatus::Failed),
            ("value", AllowanceExhausted, DatasetStatus::Partial),
            ("value", Cancelled, DatasetStatus::Cancelled),
            ("value", Credentials, DatasetStatus::Partial),
            ("listing", Credentials, DatasetStatus::Failed),
            ("listing", Fatal, DatasetStatus::Failed),
            ("listing", Throttled, DatasetStatus::Failed),
            ("listing", Cancelled, DatasetStatus::Cancelled),
        ];
        for (what, kind, want) in table {
            let mut b = ReportBuilder::new();
            let e = error(*kind, None, None);
            match *what {
                "value" => b.value_missing("kms:GetKeyLastUsage", "last_used_at", &e),
                _ => b.listing_failed("kms:ListKeys", &e),
            }
            assert_eq!(b.finish().status, *want, "{what} {kind:?}");
        }
    }

    #[test]
    fn a_failed_enrichment_keeps_the_items_and_makes_even_a_denial_partial() {
        let mut b = ReportBuilder::new();
        b.push(Item::KmsKey(crate::output::KmsKey {
            resource: crate::resource::Resource::new("AWS::KMS::Key", "k".into())
                .region(Some("us-east-1".into())),
            key_id: "k".into(),
            key_manager: None,
            key_state: None,
            last_used_at: None,
        }));
        let mut resumed = ReportBuilder::from_report(b.finish());
        let denied = error(Fatal, Some("AccessDenied"), Some(403));
        resumed.enrichment_missing("cloudwatch:GetMetricData", "activity", &denied);
        resumed.enrichment_missing("cloudwatch:GetMetricData", "activity", &denied);
        let report = resumed.finish();
        assert_eq!(report.status, DatasetStatus::Partial);
        assert_eq!(report.items.len(), 1);
        assert_eq!((report.reasons.len(), report.reasons[0].count), (1, 2));
        let mut cancelled = ReportBuilder::from_report(report);
        cancelled.enrichment_missing(
            "cloudwatch:GetMetricData",
            "activity",
            &error(Cancelled, None, None),
        );
        assert_eq!(cancelled.finish().status, DatasetStatus::Cancelled);
    }

    #[test]
    fn reasons_are_deduplicated_and_counted_across_regions() {
        let denied = error(Fatal, Some("AccessDeniedException"), Some(400));
        let throttled = error(Throttled, Some("ThrottlingException"), Some(400));
        let mut east = ReportBuilder::new();
        east.value_missing("kms:GetKeyLastUsage", "last_used_at", &denied);
        east.value_missing("kms:GetKeyLastUsage", "last_used_at", &denied);
        let mut west = ReportBuilder::new();
        west.value_missing("kms:GetKeyLastUsage", "last_used_at", &denied);
        west.value_missing("kms:GetKeyLastUsage", "last_used_at", &throttled);
        let mut all = ReportBuilder::new();
        east.merge_into(&mut all);
        west.merge_into(&mut all);
        let report = all.finish();
        assert_eq!(report.status, DatasetStatus::Partial);
        assert_eq!(report.reasons.len(), 2);
        assert_eq!(report.reasons[0].count, 3);
        assert_eq!(report.reasons[0].kind, ReasonKind::Unavailable);
        assert_eq!(
            report.reasons[0].code.as_deref(),
            Some("AccessDeniedException")
        );
        assert_eq!(report.reasons[1].kind, ReasonKind::Throttled);
    }

    #[test]
    fn an_inherited_gap_worsens_the_status_with_one_counted_reason() {
        let mut b = ReportBuilder::new();
        b.inherited(
            DatasetStatus::Partial,
            "cloudcontrol:ListResources",
            "parent partial",
        );
        b.inherited(
            DatasetStatus::Partial,
            "cloudcontrol:ListResources",
            "again",
        );
        let report = b.finish();
        assert_eq!(report.status, DatasetStatus::Partial);
        assert_eq!(report.reasons.len(), 1);
        assert_eq!(
            (report.reasons[0].count, report.reasons[0].message.as_str()),
            (2, "parent partial")
        );
        let mut failed = ReportBuilder::new();
        failed.inherited(
            DatasetStatus::Failed,
            "cloudcontrol:ListResources",
            "parent failed",
        );
        assert_eq!(failed.finish().status, DatasetStatus::Failed);
    }

    #[test]
    fn credentials_failures_are_one_reason_of_kind_credentials() {
        let expired = error(Credentials, None, None);
        let mut b = ReportBuilder::new();
        for _ in 0..3 {
            b.value_missing("kms:GetKeyLastUsage", "last_used_at", &expired);
        }
        let report = b.finish();
        assert_eq!(report.reasons.len(), 1);
        assert_eq!(
            (report.reasons[0].kind.as_str(), report.reasons[0].count),
            ("credentials", 3)
        );
    }

    #[test]
    fn an_unreadable_success_says_the_endpoint_lacks_the_operation() {
        let mut b = ReportBuilder::new();
        b.value_missing("s3:X", "f", &error(Fatal, None, Some(200)));
        let report = b.finish();
        assert_eq!(report.status, DatasetStatus::Complete);
        assert!(
            report.reasons[0].message.contains("does not implement"),
            "{}",
            report.reasons[0].message
        );
    }
}
