//! The ideal completion of `bench org`: the shortest time the scenario's server quotas
//! allow for one organization scan, the maximum over the binding constraints:
//! - per account-region: each account's own buckets (`fleet::ideal::per_operation` of
//!   the account's scenario, one discovery), since a member's calls are charged to its
//!   own quotas;
//! - the hub, charged to the management account in its home region: ListAccounts'
//!   pages and one AssumeRole per member, each `(calls − burst) / rate`;
//! - ListRegions, once per account, charged to the account that signs it (its own).
//!
//! Like `bench fleet`'s, the figure ignores latency, the accounts-in-flight limit and the
//! order between calls (a member's scan cannot start before its AssumeRole), so a real
//! run is above it by those.

use tollgate_sim::Scenario;

/// One constraint: what it is and how long it needs, in seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Constraint {
    pub what: String,
    pub seconds: f64,
}

fn drain(scenario: &Scenario, operation: &str, calls: u64) -> f64 {
    let (rate, burst) = scenario.server_quota(operation);
    let share = rate * (1.0 - scenario.quotas.background_share);
    (calls as f64 - f64::from(burst)).max(0.0) / share
}

/// Every constraint of one scan of `scenario`'s organization (every member scanned).
pub fn constraints(scenario: &Scenario) -> Vec<Constraint> {
    let mut out = Vec::new();
    let members = scenario
        .organization
        .as_ref()
        .map_or(&[][..], |o| &o.members[..]);
    let page = scenario
        .organization
        .as_ref()
        .map_or(20, |o| o.list_accounts_page);
    let listed = members.len() as u64 + 1;
    let pages = listed.div_ceil(page as u64);
    out.push(Constraint {
        what: format!("hub organizations:ListAccounts ({pages} pages)"),
        seconds: drain(scenario, "organizations:ListAccounts", pages),
    });
    out.push(Constraint {
        what: format!("hub sts:AssumeRole ({} members)", members.len()),
        seconds: drain(scenario, "sts:AssumeRole", members.len() as u64),
    });
    let accounts = std::iter::once(scenario).chain(members.iter().map(|m| &m.scenario));
    for account in accounts {
        out.push(Constraint {
            what: format!("{} account:ListRegions", account.account),
            seconds: drain(account, "account:ListRegions", 1),
        });
        for (region, op, seconds) in crate::fleet::ideal::per_operation(account, 1) {
            out.push(Constraint {
                what: format!("{} {region} {op}", account.account),
                seconds,
            });
        }
    }
    out
}

/// The binding constraint (the slowest), or a zero one.
pub fn binding(scenario: &Scenario) -> Constraint {
    constraints(scenario)
        .into_iter()
        .fold(None::<Constraint>, |best, c| match best {
            Some(b) if b.seconds >= c.seconds => Some(b),
            _ => Some(c),
        })
        .unwrap_or(Constraint {
            what: "none".into(),
            seconds: 0.0,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::org::scenario::{scenario, Shape};

    #[test]
    fn fifty_members_assume_roles_through_the_hub_quota_which_binds() {
        let s = scenario(Shape {
            accounts: 51,
            regions: 2,
            items_per_region: 1,
        })
        .unwrap();
        let b = binding(&s);
        // 50 AssumeRoles at 10/s after a burst of 5: 4.5 s; 51 accounts in 3 pages of 20
        // at 2/s after 1: 1 s; each account-region's few calls fit its burst of 50.
        assert!((b.seconds - 4.5).abs() < 1e-9, "{b:?}");
        assert!(b.what.contains("sts:AssumeRole"), "{b:?}");
        let pages = constraints(&s)
            .into_iter()
            .find(|c| c.what.contains("ListAccounts"))
            .unwrap();
        assert!((pages.seconds - 1.0).abs() < 1e-9, "{pages:?}");
    }

    #[test]
    fn an_account_region_with_more_calls_than_its_burst_can_bind() {
        let s = scenario(Shape {
            accounts: 2,
            regions: 1,
            items_per_region: 60,
        })
        .unwrap();
        // one region's DynamoDB: 1 listing + 60 descriptions; KMS: 1 + 60 + 60 = 121
        // calls on the default bucket (50/s, burst 50) if grouped so; whatever binds is
        // an account-region's, above the hub's 0 s.
        let b = binding(&s);
        assert!(b.seconds > 0.0 && !b.what.starts_with("hub"), "{b:?}");
    }
}
