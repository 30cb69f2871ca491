//! How a failed Cloud Control call leaves a type's coverage: `unsupported` for
//! `UnsupportedActionException`, `TypeNotFoundException` or an endpoint without the API
//! (including one that answers 5xx with no mark of an AWS service, which the gate does
//! not retry: moto answers every service it lacks so), `denied` for access denied (both with their reason, never a failed scan: the dataset
//! stays `complete`); a `GeneralServiceException` is read by its message: a throttle
//! (`partial`, the listing's prefix kept), a missing service or resource (`unsupported`),
//! anything else `failed`.
//!
//! A listing under one parent item, and a `GetResource`, may also meet a resource that is
//! gone ([`is_gone`]): the parent (or the item) was deleted after it was listed. That
//! is an answer, not a gap: no children under it, or the item dropped.

use tollgate_engine::aws::{CallError, CallErrorKind};

use super::LIST_RESOURCES;
use crate::output::CoverageStatus;
use crate::ReportBuilder;

/// How a failed `ListResources` leaves the type's coverage in its region.
pub fn failure_status(error: &CallError) -> CoverageStatus {
    let code = error.code().unwrap_or_default();
    let message = error.message().to_ascii_lowercase();
    match (error.kind(), code) {
        (CallErrorKind::Cancelled, _) => CoverageStatus::Cancelled,
        (_, "UnsupportedActionException" | "TypeNotFoundException") => CoverageStatus::Unsupported,
        (CallErrorKind::Fatal, c) if crate::report_builder::is_access_denied(c) => {
            CoverageStatus::Denied
        }
        // A fatal 5xx: the gate found no AWS service behind the answer (an emulator
        // without Cloud Control, such as moto); AWS's own 5xx are transient.
        (CallErrorKind::Fatal, "") if error.status().is_some_and(|s| s >= 500) => {
            CoverageStatus::Unsupported
        }
        (_, "GeneralServiceException") if is_throttle_message(&message) => CoverageStatus::Partial,
        (_, "GeneralServiceException")
            if [
                "not found",
                "does not exist",
                "not supported",
                "not available",
            ]
            .iter()
            .any(|m| message.contains(m)) =>
        {
            CoverageStatus::Unsupported
        }
        _ => match crate::tagging::failure_coverage(error) {
            CoverageStatus::Unsupported => CoverageStatus::Unsupported,
            _ => CoverageStatus::Failed,
        },
    }
}

fn is_throttle_message(message: &str) -> bool {
    message.contains("throttl") || message.contains("rate exceeded")
}

/// Whether the call met a resource that is gone: `ResourceNotFoundException`, or a
/// handler's `GeneralServiceException` / `NotFound` naming a missing resource.
pub fn is_gone(error: &CallError) -> bool {
    if error.kind() != CallErrorKind::Fatal {
        return false;
    }
    let message = error.message().to_ascii_lowercase();
    match error.code().unwrap_or_default() {
        "ResourceNotFoundException" | "NotFound" => true,
        "GeneralServiceException" => ["not found", "does not exist"]
            .iter()
            .any(|m| message.contains(m)),
        _ => false,
    }
}

/// The coverage a failure decides on its own, with its reason: unsupported, denied, or a
/// throttled handler's partial listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decided {
    pub status: CoverageStatus,
    pub reason: String,
}

/// Note a failed listing call on `out`: unsupported and denied types leave the dataset
/// untouched (a reason is noted), a throttled handler makes it `partial`, the rest fail
/// it (or mark it cancelled) as any listing. Returns the coverage the failure decides;
/// `None` leaves it to `out`'s status rules.
pub(super) fn note_listing_failure(out: &mut ReportBuilder, error: &CallError) -> Option<Decided> {
    let status = failure_status(error);
    let reason = format!("{LIST_RESOURCES}: {}", error.message());
    match status {
        CoverageStatus::Unsupported | CoverageStatus::Denied => {
            out.value_missing(LIST_RESOURCES, "items", error);
        }
        CoverageStatus::Partial => out.enrichment_missing(LIST_RESOURCES, "items", error),
        _ => {
            out.listing_failed(LIST_RESOURCES, error);
            return None;
        }
    }
    Some(Decided { status, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: CallErrorKind, code: &str, message: &str) -> CallError {
        let code = (!code.is_empty()).then(|| code.to_string());
        let status = if code.is_none() { 500 } else { 400 };
        CallError::in_answer(kind, "ListResources", code, message).with_status(status)
    }

    #[test]
    fn each_failure_leaves_the_coverage_its_class_says() {
        use CallErrorKind::{Cancelled, Fatal, Throttled};
        use CoverageStatus::*;
        let cases = [
            (Fatal, "UnsupportedActionException", "no LIST", Unsupported),
            (Fatal, "TypeNotFoundException", "no such type", Unsupported),
            (Fatal, "AccessDeniedException", "not authorized", Denied),
            (
                Fatal,
                "GeneralServiceException",
                "Rate exceeded (Service: Iam)",
                Partial,
            ),
            (
                Fatal,
                "GeneralServiceException",
                "The resource does not exist",
                Unsupported,
            ),
            (Fatal, "GeneralServiceException", "something else", Failed),
            (Throttled, "ThrottlingException", "Rate exceeded", Failed),
            (Fatal, "", "does not serve Cloud Control", Unsupported),
            (Cancelled, "", "cancelled", CoverageStatus::Cancelled),
        ];
        for (kind, code, message, want) in cases {
            assert_eq!(
                failure_status(&error(kind, code, message)),
                want,
                "{code}: {message}"
            );
        }
    }

    #[test]
    fn a_missing_resource_is_gone_and_nothing_else_is() {
        use CallErrorKind::{Fatal, Throttled};
        let cases = [
            (Fatal, "ResourceNotFoundException", "not found", true),
            (Fatal, "NotFound", "Function not found", true),
            (
                Fatal,
                "GeneralServiceException",
                "Cluster prod does not exist",
                true,
            ),
            (Fatal, "GeneralServiceException", "Rate exceeded", false),
            (Fatal, "AccessDeniedException", "not found", false),
            (Throttled, "ResourceNotFoundException", "odd", false),
        ];
        for (kind, code, message, want) in cases {
            assert_eq!(
                is_gone(&error(kind, code, message)),
                want,
                "{code}: {message}"
            );
        }
    }

    #[test]
    fn a_noted_failure_says_which_coverage_it_decides() {
        use CallErrorKind::Fatal;
        let mut out = ReportBuilder::new();
        let decided =
            note_listing_failure(&mut out, &error(Fatal, "UnsupportedActionException", "no"));
        assert_eq!(decided.map(|d| d.status), Some(CoverageStatus::Unsupported));
        assert_eq!(out.status(), crate::DatasetStatus::Complete);
        let mut out = ReportBuilder::new();
        assert_eq!(
            note_listing_failure(&mut out, &error(Fatal, "InvalidRequestException", "bad")),
            None
        );
        assert_eq!(out.status(), crate::DatasetStatus::Failed);
    }
}
