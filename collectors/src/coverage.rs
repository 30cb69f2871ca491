//! Coverage: how completely each resource type was listed in each account and region
//! (or `global`), the answer to "is a resource missing from this report gone, or only not
//! reached?".
//!
//! Every dataset report carries one [`Coverage`] entry per account and region it ran in
//! (`per_region` writes them; a collector that knows better writes its own, such as an
//! unsupported Cloud Control type). [`CoverageSummary`] tallies them for the summary
//! line, the service's scan view and the live page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One type's coverage in one account and region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// CloudFormation type name.
    pub resource_type: String,
    /// The account; `null` when the caller's identity was not resolved.
    pub account: Option<String>,
    /// The region, or `global` for a global type.
    pub region: String,
    /// How complete the type's listing there is.
    pub status: CoverageStatus,
    /// Why it is not `complete` (the first cause; the dataset's `reasons` count them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Items found there.
    pub count: u64,
}

/// How completely one type was listed in one account and region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoverageStatus {
    /// Every listing call answered.
    Complete,
    /// Listed, but calls were lost (throttling, retries, the deadline): items may miss.
    Partial,
    /// The listing failed: what was found is not the inventory.
    Failed,
    /// The endpoint or the collection path does not support the type there (Cloud
    /// Control `UnsupportedActionException`, `TypeNotFoundException`, an emulator
    /// without the API): not a failed scan, and nothing is known of the type.
    Unsupported,
    /// Access denied: not a failed scan, and nothing is known of the type.
    Denied,
    /// Not listed on purpose (a parent type not in the scan, the deadline before it
    /// started).
    Skipped,
    /// The scan was cancelled before the listing ended.
    Cancelled,
    /// Only the tagging sweep saw the type's resources: those with tags, never proof
    /// that others are absent.
    TagsOnly,
}

impl CoverageStatus {
    /// Every status, from best to worst.
    pub const ALL: [CoverageStatus; 8] = [
        CoverageStatus::Complete,
        CoverageStatus::Partial,
        CoverageStatus::Failed,
        CoverageStatus::Unsupported,
        CoverageStatus::Denied,
        CoverageStatus::Skipped,
        CoverageStatus::Cancelled,
        CoverageStatus::TagsOnly,
    ];

    /// The JSON spelling.
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

/// Coverage entries counted by status, with the entries that are not `complete`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageSummary {
    /// Entries per status (`complete`, `unsupported`, ...), statuses with none absent.
    pub counts: BTreeMap<CoverageStatus, u64>,
    /// The entries that are not `complete`, at most [`CoverageSummary::MAX_GAPS`], worst
    /// status first.
    pub gaps: Vec<Coverage>,
    /// Entries that are not `complete` beyond those in `gaps`.
    #[serde(default)]
    pub gaps_left_out: u64,
}

impl CoverageSummary {
    /// Gaps listed by name; the rest are counted.
    pub const MAX_GAPS: usize = 50;

    /// The summary of `entries`.
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a Coverage>) -> Self {
        let mut summary = CoverageSummary::default();
        let mut gaps = Vec::new();
        for entry in entries {
            *summary.counts.entry(entry.status).or_default() += 1;
            if entry.status != CoverageStatus::Complete {
                gaps.push(entry);
            }
        }
        gaps.sort_by(|a, b| worst_first(a, b));
        summary.gaps_left_out = gaps.len().saturating_sub(Self::MAX_GAPS) as u64;
        summary.gaps = gaps.into_iter().take(Self::MAX_GAPS).cloned().collect();
        summary
    }

    /// Add `other`'s entries (another account's): the counts summed, the worst
    /// [`CoverageSummary::MAX_GAPS`] gaps of both kept, the rest counted. Equal to the
    /// summary of both sets of entries at once, since each side kept its own worst.
    pub fn merge(&mut self, other: &CoverageSummary) {
        for (status, n) in &other.counts {
            *self.counts.entry(*status).or_default() += n;
        }
        let mut gaps: Vec<Coverage> = self
            .gaps
            .drain(..)
            .chain(other.gaps.iter().cloned())
            .collect();
        gaps.sort_by(worst_first);
        let cut = gaps.len().saturating_sub(Self::MAX_GAPS) as u64;
        gaps.truncate(Self::MAX_GAPS);
        self.gaps = gaps;
        self.gaps_left_out += other.gaps_left_out + cut;
    }

    /// `182 complete, 3 unsupported, 1 denied` (`none` without entries).
    pub fn counts_line(&self) -> String {
        if self.counts.is_empty() {
            return "none".to_string();
        }
        self.counts
            .iter()
            .map(|(status, n)| format!("{n} {}", status.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The order of gaps: worst status first, then by type, account and region.
fn worst_first(a: &Coverage, b: &Coverage) -> std::cmp::Ordering {
    (b.status, &a.resource_type, &a.account, &a.region).cmp(&(
        a.status,
        &b.resource_type,
        &b.account,
        &b.region,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_statuses_keep_their_json_spelling() {
        for status in CoverageStatus::ALL {
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, status.as_str());
            assert_eq!(
                serde_json::from_value::<CoverageStatus>(json).unwrap(),
                status
            );
        }
        assert_eq!(CoverageStatus::TagsOnly.as_str(), "tags-only");
    }

    fn entry(resource_type: &str, region: &str, status: CoverageStatus) -> Coverage {
        Coverage {
            resource_type: resource_type.into(),
            account: Some("111111111111".into()),
            region: region.into(),
            status,
            reason: None,
            count: 0,
        }
    }

    #[test]
    fn a_summary_counts_every_status_and_lists_the_worst_gaps_first() {
        use CoverageStatus::*;
        let entries = [
            entry("AWS::S3::Bucket", "us-east-1", Complete),
            entry("AWS::SNS::Topic", "us-east-1", Unsupported),
            entry("AWS::IAM::Role", "global", Denied),
            entry("AWS::KMS::Key", "eu-west-1", Complete),
        ];
        let s = CoverageSummary::of(&entries);
        assert_eq!(s.counts_line(), "2 complete, 1 unsupported, 1 denied");
        let gaps: Vec<_> = s.gaps.iter().map(|g| g.resource_type.as_str()).collect();
        assert_eq!(gaps, ["AWS::IAM::Role", "AWS::SNS::Topic"]);
        assert_eq!(s.gaps_left_out, 0);
        assert_eq!(CoverageSummary::of([]).counts_line(), "none");
    }

    #[test]
    fn a_summary_keeps_at_most_max_gaps_and_counts_the_rest() {
        let entries: Vec<_> = (0..60)
            .map(|i| {
                entry(
                    &format!("AWS::X::T{i}"),
                    "us-east-1",
                    CoverageStatus::Failed,
                )
            })
            .collect();
        let s = CoverageSummary::of(&entries);
        assert_eq!(s.gaps.len(), CoverageSummary::MAX_GAPS);
        assert_eq!(s.gaps_left_out, 10);
        assert_eq!(s.counts[&CoverageStatus::Failed], 60);
    }

    #[test]
    fn merged_summaries_equal_the_summary_of_all_their_entries() {
        use CoverageStatus::*;
        let statuses = [Complete, Partial, Failed, Unsupported, Denied];
        let entries: Vec<_> = (0..170)
            .map(|i| {
                let mut e = entry(
                    &format!("AWS::X::T{}", i % 37),
                    "us-east-1",
                    statuses[i % 5],
                );
                e.account = Some(format!("{:012}", i % 7));
                e
            })
            .collect();
        for split in [0, 1, 49, 50, 51, 100, 170] {
            let (a, b) = entries.split_at(split);
            let mut merged = CoverageSummary::of(a);
            merged.merge(&CoverageSummary::of(b));
            assert_eq!(merged, CoverageSummary::of(&entries), "split at {split}");
        }
    }
}
