//! Which listed accounts an organization scan covers, and why the others are skipped: a
//! pure decision over what `ListAccounts` returned and the request's filters, so every
//! rule has a row in a table test.
//!
//! Rules, in order: an account the filters leave out is `excluded` (whatever its state);
//! one that is not `ACTIVE` is `suspended`; every other is scanned, in account-id order.
//! An id named by `--accounts` that the listing does not have is `not_in_organization`.

use std::collections::BTreeSet;

use crate::organization::report::{SkipReason, SkippedAccount};
use crate::organization::request::AccountFilter;

/// One account as `ListAccounts` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedAccount {
    /// The 12-digit id.
    pub id: String,
    /// `ACTIVE`, `SUSPENDED`, `PENDING_CLOSURE`, ... (`State`, else the older `Status`).
    pub state: String,
}

impl ListedAccount {
    /// An account in `state`.
    pub fn new(id: impl Into<String>, state: impl Into<String>) -> ListedAccount {
        ListedAccount {
            id: id.into(),
            state: state.into(),
        }
    }
}

/// What to scan and what not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Accounts to scan, in the order they start.
    pub scan: Vec<String>,
    /// Accounts not scanned, with their reasons.
    pub skipped: Vec<SkippedAccount>,
}

/// The plan for `listed` under `filter`.
pub fn plan(listed: &[ListedAccount], filter: &AccountFilter) -> Plan {
    let mut seen = BTreeSet::new();
    let mut accounts: Vec<&ListedAccount> = listed
        .iter()
        .filter(|a| seen.insert(a.id.as_str()))
        .collect();
    accounts.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out = Plan::default();
    let skip = |account: &str, reason, message: String| SkippedAccount {
        account: account.to_owned(),
        reason,
        code: None,
        message,
    };
    for account in accounts {
        let id = account.id.as_str();
        if filter.exclude.contains(id) {
            out.skipped.push(skip(
                id,
                SkipReason::Excluded,
                "named by --exclude-accounts".into(),
            ));
        } else if !filter.only.is_empty() && !filter.only.contains(id) {
            out.skipped.push(skip(
                id,
                SkipReason::Excluded,
                "not named by --accounts".into(),
            ));
        } else if account.state != "ACTIVE" {
            out.skipped.push(skip(
                id,
                SkipReason::Suspended,
                format!("the account is {}, not ACTIVE", account.state),
            ));
        } else {
            out.scan.push(id.to_owned());
        }
    }
    for id in filter
        .only
        .difference(&seen.iter().map(|s| s.to_string()).collect())
    {
        if !filter.exclude.contains(id) {
            out.skipped.push(skip(
                id,
                SkipReason::NotInOrganization,
                "named by --accounts but not listed by organizations:ListAccounts".into(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(only: &[&str], exclude: &[&str]) -> AccountFilter {
        AccountFilter {
            only: only.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
        }
    }

    const A: &str = "111111111111";
    const B: &str = "222222222222";
    const C: &str = "333333333333";
    const D: &str = "444444444444";

    #[test]
    fn each_rule_has_its_row() {
        let listed = [
            ListedAccount::new(C, "ACTIVE"),
            ListedAccount::new(A, "ACTIVE"),
            ListedAccount::new(B, "SUSPENDED"),
            ListedAccount::new(A, "ACTIVE"),
        ];
        use SkipReason::*;
        /// filter, scanned, skipped.
        type Row<'a> = (AccountFilter, &'a [&'a str], &'a [(&'a str, SkipReason)]);
        let rows: &[Row] = &[
            (filter(&[], &[]), &[A, C], &[(B, Suspended)]),
            (filter(&[], &[A]), &[C], &[(A, Excluded), (B, Suspended)]),
            (filter(&[C], &[]), &[C], &[(A, Excluded), (B, Excluded)]),
            (
                filter(&[B, D], &[]),
                &[],
                &[
                    (A, Excluded),
                    (B, Suspended),
                    (C, Excluded),
                    (D, NotInOrganization),
                ],
            ),
            (
                filter(&[D], &[D]),
                &[],
                &[(A, Excluded), (B, Excluded), (C, Excluded)],
            ),
        ];
        for (f, scan, skipped) in rows {
            let p = plan(&listed, f);
            assert_eq!(p.scan, *scan, "{f:?}");
            let got: Vec<(&str, SkipReason)> = p
                .skipped
                .iter()
                .map(|s| (s.account.as_str(), s.reason))
                .collect();
            assert_eq!(got, *skipped, "{f:?}");
        }
    }

    #[test]
    fn a_suspended_account_says_its_state() {
        let p = plan(
            &[ListedAccount::new(A, "PENDING_CLOSURE")],
            &filter(&[], &[]),
        );
        assert!(p.skipped[0].message.contains("PENDING_CLOSURE"));
    }
}
