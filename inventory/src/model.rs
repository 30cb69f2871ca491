//! The values the store takes and gives: keys, scan metadata, statuses and the rows a
//! reader gets back (all `Serialize`, for `--json`, CSV and the service's pages).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the store writes for an account or a region the report gives as `null`.
pub const UNKNOWN: &str = "unknown";

/// A scan in the store (the `scans.id` column), not the report's own `scan_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScanId(pub i64);

impl fmt::Display for ScanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A resource's identity: account, region (or `global`), type and identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceKey {
    pub account: String,
    pub region: String,
    pub resource_type: String,
    pub id: String,
}

/// What a scan is, known when it starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanMeta {
    /// The report's `scan_id`.
    pub report_scan_id: Option<String>,
    /// RFC 3339 UTC; see [`crate::time::normalize`].
    pub started_at: String,
    /// The account whose credentials ran the scan.
    pub caller_account: Option<String>,
    /// An organization scan (`accounts[]`) or one account.
    pub organization: bool,
    /// The options that shaped coverage (`--types`, `--regions`, `--no-tags`, ...), as JSON.
    pub options: Value,
}

/// How a scan ended, and so its exit code (docs/discovery.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScanStatus {
    /// Started, not finished (or the process died).
    Running,
    Complete,
    Partial,
    Failed,
    Cancelled,
}

impl ScanStatus {
    /// The status's name in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            ScanStatus::Running => "running",
            ScanStatus::Complete => "complete",
            ScanStatus::Partial => "partial",
            ScanStatus::Failed => "failed",
            ScanStatus::Cancelled => "cancelled",
        }
    }

    /// The exit code of `discover` for this status, and its meaning.
    pub fn exit_code(self) -> Option<(i32, &'static str)> {
        match self {
            ScanStatus::Running => None,
            ScanStatus::Complete => Some((0, "every dataset complete")),
            ScanStatus::Partial => Some((2, "at least one dataset partial (none failed)")),
            ScanStatus::Failed => Some((1, "an error, or a dataset failed")),
            ScanStatus::Cancelled => Some((130, "cancelled")),
        }
    }

    /// The worse of two: cancelled > failed > partial > complete.
    pub fn worst(self, other: ScanStatus) -> ScanStatus {
        fn rank(status: ScanStatus) -> u8 {
            match status {
                ScanStatus::Complete => 0,
                ScanStatus::Partial => 1,
                ScanStatus::Failed => 2,
                ScanStatus::Cancelled => 3,
                ScanStatus::Running => 4,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// How a scan ended, written by [`crate::Store::finish_scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOutcome {
    pub status: ScanStatus,
    /// RFC 3339 UTC.
    pub finished_at: String,
}

/// A coverage line's status (docs/report.md "Coverage").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoverageStatus {
    Complete,
    Partial,
    Failed,
    Unsupported,
    Denied,
    Skipped,
    Cancelled,
    TagsOnly,
}

impl CoverageStatus {
    /// The status's name, as in the report and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageStatus::Complete => "complete",
            CoverageStatus::Partial => "partial",
            CoverageStatus::Failed => "failed",
            CoverageStatus::Unsupported => "unsupported",
            CoverageStatus::Denied => "denied",
            CoverageStatus::Skipped => "skipped",
            CoverageStatus::Cancelled => "cancelled",
            CoverageStatus::TagsOnly => "tags-only",
        }
    }
}

/// A row of `changes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Removed,
    NotVerified,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Removed => "removed",
            ChangeKind::NotVerified => "not_verified",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<ChangeKind> {
        [
            ChangeKind::Added,
            ChangeKind::Modified,
            ChangeKind::Removed,
            ChangeKind::NotVerified,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == text)
    }
}

/// A JSON document as the store holds it, handed on as its text: a reader of 10,000
/// rows mostly prints or serves them, and building each row's tags, properties and
/// fields as a `Value` only to serialize them again was a third of the query's time
/// (issue 34's ≤ 50 ms). [`Json::value`] parses it when a caller needs to look inside.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Json(Box<serde_json::value::RawValue>);

impl Json {
    /// The stored text (checked to be JSON, without building it; text that is not JSON,
    /// which the store never writes, reads as `null`).
    pub fn from_text(text: String) -> Json {
        use serde_json::value::RawValue;
        Json(RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The document, parsed.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for Json {
    /// Equal documents, however each is spelled (PostgreSQL's `jsonb` respaces them).
    fn eq(&self, other: &Json) -> bool {
        self.text() == other.text() || self.value() == other.value()
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// A row of `resources`, the current view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceRow {
    pub resource_type: String,
    pub id: String,
    pub arn: Option<String>,
    pub account: String,
    pub region: String,
    pub tags: Json,
    pub properties: Json,
    /// The dataset's own fields (`name`, `item_count`, ...).
    pub fields: Json,
    /// Seen only through the tagging sweep.
    pub tags_only: bool,
    pub first_seen: String,
    pub last_seen: String,
    pub gone_since: Option<String>,
    pub last_scan: ScanId,
}

/// A row of `changes`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangeRow {
    pub change: i64,
    pub scan: ScanId,
    pub at: String,
    pub kind: ChangeKind,
    pub resource_type: String,
    pub account: String,
    pub region: String,
    pub id: String,
    /// For `modified`: the fields that changed (`tags.Env`, `properties.BucketName`);
    /// for `not_verified`: why (`coverage partial`, `not covered`, `tags-only sighting`).
    pub detail: Vec<String>,
}

/// A row of `resource_versions`: the resource as it was from `scan` on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionRow {
    pub scan: ScanId,
    pub seen_at: String,
    pub arn: Option<String>,
    pub tags: Value,
    pub properties: Value,
}

/// What one account's write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WriteCounts {
    /// Items of the report written (added, modified or seen again).
    pub resources_written: u64,
    pub added: u64,
    pub modified: u64,
    pub removed: u64,
    pub not_verified: u64,
}

impl WriteCounts {
    pub(crate) fn add(&mut self, other: WriteCounts) {
        self.resources_written += other.resources_written;
        self.added += other.added;
        self.modified += other.modified;
        self.removed += other.removed;
        self.not_verified += other.not_verified;
    }
}

/// The `store` field of a report: where the scan went and what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreSummary {
    /// The store, its password redacted.
    pub url: String,
    pub scan: ScanId,
    pub accounts: u64,
    #[serde(flatten)]
    pub counts: WriteCounts,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_json_is_handed_on_verbatim_equal_however_spelled_and_null_when_not_json() {
        let sqlite = Json::from_text(r#"{"env":"prod","n":"1"}"#.to_owned());
        let postgres = Json::from_text(r#"{"n": "1", "env": "prod"}"#.to_owned());
        assert_eq!(sqlite, postgres);
        assert_ne!(
            sqlite,
            Json::from_text(r#"{"env":"dev","n":"1"}"#.to_owned())
        );
        assert_eq!(
            serde_json::to_string(&json!({"tags": sqlite})).unwrap(),
            r#"{"tags":{"env":"prod","n":"1"}}"#
        );
        assert_eq!(postgres.value()["env"], json!("prod"));
        assert_eq!(Json::from_text("{not json".to_owned()).text(), "null");
    }
}
