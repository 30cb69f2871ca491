//! Which listed accounts an organization scan covers, and why the others are skipped: a
//! pure decision over what `ListAccounts` returned and the request's filters, so every
//! rule has a row in a table test.
//!
//! Rules, in order: an account the filters leave out is `excluded` (whatever its state);
//! one that is not `ACTIVE` is `suspended`; every other is scanned, page by page in
//! listing order, ids ascending within a page ([`Planner`]: a page's accounts start while
//! the next page is fetched). An id named by `--accounts` that the listing does not have
//! is `not_in_organization`, known once the listing ends.

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

/// The plan for `listed` (every page at once) under `filter`.
pub fn plan(listed: &[ListedAccount], filter: &AccountFilter) -> Plan {
    let mut planner = Planner::new(filter.clone());
    let mut out = planner.page(listed);
    out.skipped.extend(planner.finish());
    out
}

/// The plan built page by page, so that an organization scan starts the accounts of the
/// first `ListAccounts` page while the next pages are fetched: each page's accounts are
/// decided as it arrives (ids ascending within the page; an id a previous page already
/// had is ignored), and the ids `--accounts` names that no page had are only known when
/// the listing ends ([`Planner::finish`]).
#[derive(Debug, Clone)]
pub struct Planner {
    filter: AccountFilter,
    seen: BTreeSet<String>,
}

impl Planner {
    /// A planner for `filter`, before any page.
    pub fn new(filter: AccountFilter) -> Planner {
        Planner {
            filter,
            seen: BTreeSet::new(),
        }
    }

    /// Accounts listed so far (each id once).
    pub fn listed(&self) -> u64 {
        self.seen.len() as u64
    }

    /// The plan for one page.
    pub fn page(&mut self, page: &[ListedAccount]) -> Plan {
        let mut accounts: Vec<&ListedAccount> = page
            .iter()
            .filter(|a| self.seen.insert(a.id.clone()))
            .collect();
        accounts.sort_by(|a, b| a.id.cmp(&b.id));
        let filter = &self.filter;
        let mut out = Plan::default();
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
        out
    }

    /// The listing ended: the ids `--accounts` named that no page listed (those it also
    /// excludes aside).
    pub fn finish(&self) -> Vec<SkippedAccount> {
        self.filter
            .only
            .difference(&self.seen)
            .filter(|id| !self.filter.exclude.contains(*id))
            .map(|id| {
                skip(
                    id,
                    SkipReason::NotInOrganization,
                    "named by --accounts but not listed by organizations:ListAccounts".into(),
                )
            })
            .collect()
    }
}

fn skip(account: &str, reason: SkipReason, message: String) -> SkippedAccount {
    SkippedAccount {
        account: account.to_owned(),
        reason,
        code: None,
        message,
    }
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
    fn pages_planned_one_by_one_decide_as_the_whole_listing_would_except_for_order() {
        let pages = [
            vec![
                ListedAccount::new(C, "ACTIVE"),
                ListedAccount::new(A, "ACTIVE"),
            ],
            vec![
                ListedAccount::new(B, "SUSPENDED"),
                ListedAccount::new(A, "ACTIVE"),
            ],
        ];
        let f = filter(&[A, B, D], &[]);
        let mut planner = Planner::new(f.clone());
        let first = planner.page(&pages[0]);
        // The first page's accounts are decided before the second page is asked for.
        assert_eq!(first.scan, [A]);
        assert_eq!(first.skipped[0].account, C);
        let second = planner.page(&pages[1]);
        assert!(second.scan.is_empty(), "A was already planned");
        assert_eq!(second.skipped[0].account, B);
        assert_eq!(planner.listed(), 3);
        let late = planner.finish();
        assert_eq!(late.len(), 1);
        assert_eq!(
            (late[0].account.as_str(), late[0].reason),
            (D, SkipReason::NotInOrganization)
        );
        let whole = plan(&pages.concat(), &f);
        assert_eq!(whole.scan, [A]);
        assert_eq!(whole.skipped.len(), 3);
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
