//! `OrganizationReport`: one JSON document per organization scan.
//!
//! `{scan_id, partition, started_at, finished_at, organization, accounts}`:
//! `organization` says what was listed and what became of it (management account,
//! accounts listed, scanned, and each skipped account with its reason: the role could
//! not be assumed — naming the role ARN —, suspended, excluded, not reached before the
//! deadline, cancelled), plus the hub's own throttling block; `accounts` holds, for every
//! scanned account, exactly the single-account report ([`DiscoveryReport`]: `account`,
//! `datasets`, reasons, throttled gaps, fleet degradation), spooled to disk as each
//! account finished ([`AccountReports`]) and streamed when the report is written.

use serde::{Deserialize, Serialize};

use tollgate_collectors::output::{DatasetStatus, DiscoveryReport, Reason, ThrottlingSummary};

use crate::organization::spool::{AccountReports, SpoolError};

/// One organization scan's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganizationReport {
    /// The organization scan's id (the attribution id of its hub calls).
    pub scan_id: String,
    /// The caller's partition.
    pub partition: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Wall-clock end, RFC 3339 UTC.
    pub finished_at: String,
    /// What was listed and what became of each account.
    pub organization: OrganizationSummary,
    /// Every scanned account's report, by account id (spooled: read back on demand).
    pub accounts: AccountReports,
}

/// The report's `organization` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganizationSummary {
    /// The organization's management account (`DescribeOrganization`), when known.
    pub management_account: Option<String>,
    /// The caller's account (the hub every listing and `AssumeRole` is charged to).
    pub caller_account: Option<String>,
    /// The role assumed in member accounts.
    pub role_name: String,
    /// Accounts `ListAccounts` returned (every status).
    pub listed: u64,
    /// Accounts scanned (each has a report in `accounts`).
    pub scanned: u64,
    /// Accounts not scanned, each with its reason.
    pub skipped: Vec<SkippedAccount>,
    /// Why the organization could not be listed or the caller resolved (then `accounts`
    /// is empty and the scan failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Reason>,
    /// The hub calls' throttling block (`ListAccounts`, `AssumeRole` under the caller's
    /// account), as a single-account report has it; `null` when uneventful.
    #[serde(default)]
    pub hub_throttling: Option<ThrottlingSummary>,
}

/// An account that was not scanned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedAccount {
    /// The account id.
    pub account: String,
    /// Why (see [`SkipReason`]).
    pub reason: SkipReason,
    /// The AWS error code, when an AWS call decided it (`AccessDenied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What happened, readable (names the role ARN for a refused role).
    pub message: String,
}

/// Why an account was not scanned. Serialised in snake case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// `AssumeRole` into the member's role failed (refused, or not answered).
    RoleNotAssumable,
    /// Listed, but not `ACTIVE` (suspended, pending closure, closed).
    Suspended,
    /// Left out by `--exclude-accounts` or not named by `--accounts`.
    Excluded,
    /// Named by `--accounts` but not listed by `ListAccounts`.
    NotInOrganization,
    /// Not reached before the organization's deadline.
    Deadline,
    /// The scan was cancelled before the account started.
    Cancelled,
}

impl SkipReason {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::RoleNotAssumable => "role_not_assumable",
            SkipReason::Suspended => "suspended",
            SkipReason::Excluded => "excluded",
            SkipReason::NotInOrganization => "not_in_organization",
            SkipReason::Deadline => "deadline",
            SkipReason::Cancelled => "cancelled",
        }
    }

    /// What the skip does to the scan's status: the user's own choices and accounts AWS
    /// will not scan leave it complete; an account that should have been scanned and
    /// was not makes it partial.
    pub fn status(self) -> DatasetStatus {
        match self {
            SkipReason::Suspended | SkipReason::Excluded => DatasetStatus::Complete,
            SkipReason::RoleNotAssumable | SkipReason::NotInOrganization | SkipReason::Deadline => {
                DatasetStatus::Partial
            }
            SkipReason::Cancelled => DatasetStatus::Cancelled,
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl OrganizationReport {
    /// The worst status over every account's datasets and every skip (`failed` when the
    /// organization could not be listed, `cancelled` when that was cut short).
    pub fn overall_status(&self) -> DatasetStatus {
        if let Some(error) = &self.organization.error {
            return match error.kind {
                tollgate_collectors::output::ReasonKind::Cancelled => DatasetStatus::Cancelled,
                _ => DatasetStatus::Failed,
            };
        }
        let accounts = self.accounts.digests().map(|d| d.status);
        let skips = self.organization.skipped.iter().map(|s| s.reason.status());
        accounts
            .chain(skips)
            .max()
            .unwrap_or(DatasetStatus::Complete)
    }

    /// One account's report, read back from the spool (`Ok(None)`: not scanned).
    pub fn account(&self, id: &str) -> Result<Option<DiscoveryReport>, SpoolError> {
        self.accounts.get(id)
    }

    /// One skipped account.
    pub fn skipped(&self, id: &str) -> Option<&SkippedAccount> {
        self.organization.skipped.iter().find(|s| s.account == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_reasons_keep_their_json_spelling_and_decide_the_status() {
        use DatasetStatus::{Complete, Partial};
        use SkipReason::*;
        for (reason, text, status) in [
            (RoleNotAssumable, "role_not_assumable", Partial),
            (Suspended, "suspended", Complete),
            (Excluded, "excluded", Complete),
            (NotInOrganization, "not_in_organization", Partial),
            (Deadline, "deadline", Partial),
            (Cancelled, "cancelled", DatasetStatus::Cancelled),
        ] {
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, text);
            assert_eq!(reason.as_str(), text);
            assert_eq!(serde_json::from_value::<SkipReason>(json).unwrap(), reason);
            assert_eq!(reason.status(), status, "{reason}");
        }
    }

    fn report(skipped: Vec<SkippedAccount>) -> OrganizationReport {
        OrganizationReport {
            scan_id: "scan-1".into(),
            partition: "aws".into(),
            started_at: "t".into(),
            finished_at: "t".into(),
            organization: OrganizationSummary {
                management_account: Some("111111111111".into()),
                caller_account: Some("111111111111".into()),
                role_name: "OrganizationAccountAccessRole".into(),
                listed: 3,
                scanned: 0,
                skipped,
                error: None,
                hub_throttling: None,
            },
            accounts: AccountReports::default(),
        }
    }

    #[test]
    fn a_refused_role_makes_the_scan_partial_and_an_exclusion_does_not() {
        let skip = |reason| SkippedAccount {
            account: "222222222222".into(),
            reason,
            code: None,
            message: String::new(),
        };
        assert_eq!(report(vec![]).overall_status(), DatasetStatus::Complete);
        assert_eq!(
            report(vec![
                skip(SkipReason::Excluded),
                skip(SkipReason::Suspended)
            ])
            .overall_status(),
            DatasetStatus::Complete
        );
        assert_eq!(
            report(vec![
                skip(SkipReason::Excluded),
                skip(SkipReason::RoleNotAssumable)
            ])
            .overall_status(),
            DatasetStatus::Partial
        );
        let mut failed = report(vec![]);
        failed.organization.error = Some(Reason {
            operation: "organizations:ListAccounts".into(),
            field: None,
            kind: tollgate_collectors::output::ReasonKind::Unavailable,
            code: Some("AccessDeniedException".into()),
            message: "denied".into(),
            count: 1,
        });
        assert_eq!(failed.overall_status(), DatasetStatus::Failed);
        let json = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            json["organization"]["error"]["code"],
            "AccessDeniedException"
        );
        assert_eq!(
            serde_json::from_value::<OrganizationReport>(json).unwrap(),
            failed
        );
    }
}
