//! The ideal completion of `bench org`: the shortest time the scenario's server quotas
//! and its latencies allow for one organization scan.
//!
//! Each constraint is one server bucket's drain, `(calls − burst) / rate` (0 when its
//! calls fit the burst), plus the calls that must be answered one after another around
//! it (the *path*, each at its operation's median latency in the scenario):
//! `GetCallerIdentity`, the `ListAccounts` pages (each needs the previous page's token),
//! the member's `AssumeRole`, its `ListRegions`, and in a region a listing followed by a
//! call about one listed item (every generated account-region has one: a function, a
//! table, a key, or the bucket). The ideal is the largest constraint:
//! - the hub's `AssumeRole`, one per member, charged to the management account in its
//!   home region: the first cannot be sent before the last page's answer and the last
//!   member's scan cannot start before its answer, so the whole path plus the drain;
//! - the hub's `ListAccounts` pages: the drain, plus the path without the pages' own
//!   latencies but the last page's (the drain already spaces the pages);
//! - `ListRegions`, once per account, and each account-region's buckets
//!   (`fleet::ideal::per_operation` of the account's scenario, one discovery), charged
//!   to the account itself: the drain plus the path (without `AssumeRole` for the
//!   management account, which scans with its own credentials).
//!
//! What an account's scan calls is its plan ([`plan`]): without `--breadth` the four
//! first datasets' calls alone (`Scenario::expected_calls_by_region` without EC2 and the
//! tagging sweep, which that scan leaves out); with it, every native type's, the tagging
//! sweep's and the Cloud Control sweep's, each `ListResources` page also counted on its
//! type's underlying operations' server buckets (`Scenario::expected_sweep_calls_by_region`:
//! IAM's in the region `global`, one bucket per account).
//!
//! With no bucket drained (a small organization) the ideal is the path alone, so the
//! ratio is defined at every size. Like `bench fleet`'s, the figure ignores process
//! start-up, CPU time, the accounts-in-flight limit and the order between accounts, so a
//! real run is above it by those.

use std::collections::BTreeMap;

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

/// The median latency of `operation` in `scenario`, in seconds.
fn latency(scenario: &Scenario, operation: &str) -> f64 {
    scenario.latency.of(operation).median().as_secs_f64()
}

/// The calls every member's scan answers one after another, in seconds: what the hub
/// leads with (`GetCallerIdentity`, then `pages` pages), then the member's `AssumeRole`
/// (charged to the hub: `hub`'s latency), `ListRegions` and a listing followed by one
/// item call (the fastest pair of the member's operations).
struct Path {
    identity: f64,
    page: f64,
    pages: u64,
    assume_role: f64,
    list_regions: f64,
    region_pair: f64,
}

/// Region (of the server bucket) → operation → calls of one scan of `account`.
pub type Plan = BTreeMap<String, BTreeMap<String, u64>>;

/// What one scan of `account` calls (see the module's docs).
pub fn plan(account: &Scenario, breadth: bool) -> Plan {
    let mut plan = account.expected_calls_by_region();
    if !breadth {
        for ops in plan.values_mut() {
            ops.retain(|op, _| !op.starts_with("ec2:") && !op.starts_with("tag:"));
        }
        plan.retain(|_, ops| !ops.is_empty());
        return plan;
    }
    for (region, ops) in account.expected_sweep_calls_by_region() {
        let into = plan.entry(region).or_default();
        for (op, n) in ops {
            *into.entry(op).or_default() += n;
        }
    }
    plan
}

/// `(region, operation, seconds)`: how long the server bucket of each planned operation
/// needs to serve one scan's calls against it (operations sharing a bucket add up).
fn per_operation(account: &Scenario, plan: &Plan) -> Vec<(String, String, f64)> {
    let share_left = 1.0 - account.quotas.background_share;
    let mut out = Vec::new();
    for (region, calls) in plan {
        let mut per_bucket: BTreeMap<&str, u64> = BTreeMap::new();
        for (op, n) in calls {
            *per_bucket.entry(account.quota_bucket(op)).or_default() += n;
        }
        for op in calls.keys() {
            let (rate, burst) = account.server_quota(op);
            let total = per_bucket[account.quota_bucket(op)] as f64;
            let seconds = (total - f64::from(burst)).max(0.0) / (rate * share_left);
            out.push((region.clone(), op.clone(), seconds));
        }
    }
    out
}

impl Path {
    fn of(hub: &Scenario, member: &Scenario, pages: u64, breadth: bool) -> Path {
        let fastest = plan(member, breadth)
            .into_values()
            .flat_map(BTreeMap::into_keys)
            .map(|op| latency(member, &op))
            .fold(f64::INFINITY, f64::min);
        let fastest = if fastest.is_finite() { fastest } else { 0.0 };
        Path {
            identity: latency(hub, "sts:GetCallerIdentity"),
            page: latency(hub, "organizations:ListAccounts"),
            pages,
            assume_role: latency(hub, "sts:AssumeRole"),
            list_regions: latency(member, "account:ListRegions"),
            region_pair: 2.0 * fastest,
        }
    }

    /// The whole path (a member's).
    fn member(&self) -> f64 {
        self.identity
            + self.page * self.pages as f64
            + self.assume_role
            + self.list_regions
            + self.region_pair
    }

    /// The management account's own path (no `AssumeRole`).
    fn management(&self) -> f64 {
        self.member() - self.assume_role
    }

    /// Around the pages' drain: every call but the pages, and the last page's answer.
    fn around_pages(&self) -> f64 {
        self.member() - self.page * self.pages.saturating_sub(1) as f64
    }
}

/// Every constraint of one scan of `scenario`'s organization (every member scanned).
pub fn constraints(scenario: &Scenario, breadth: bool) -> Vec<Constraint> {
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
    // The hub's constraints hold for every member; the slowest member path bounds them.
    let hub_path = members
        .iter()
        .map(|m| Path::of(scenario, &m.scenario, pages, breadth))
        .max_by(|a, b| a.member().total_cmp(&b.member()));
    if let Some(path) = &hub_path {
        out.push(Constraint {
            what: format!("hub organizations:ListAccounts ({pages} pages)"),
            seconds: drain(scenario, "organizations:ListAccounts", pages) + path.around_pages(),
        });
        out.push(Constraint {
            what: format!("hub sts:AssumeRole ({} members)", members.len()),
            seconds: drain(scenario, "sts:AssumeRole", members.len() as u64) + path.member(),
        });
    }
    let own = Path::of(scenario, scenario, pages, breadth);
    let accounts = std::iter::once((scenario, own.management())).chain(members.iter().map(|m| {
        let path = Path::of(scenario, &m.scenario, pages, breadth);
        (&m.scenario, path.member())
    }));
    for (account, path) in accounts {
        out.push(Constraint {
            what: format!("{} account:ListRegions", account.account),
            seconds: drain(account, "account:ListRegions", 1) + path,
        });
        for (region, op, seconds) in per_operation(account, &plan(account, breadth)) {
            out.push(Constraint {
                what: format!("{} {region} {op}", account.account),
                seconds: seconds + path,
            });
        }
    }
    out
}

/// The binding constraint (the slowest; there is always one, the management account's
/// `ListRegions`).
pub fn binding(scenario: &Scenario, breadth: bool) -> Constraint {
    constraints(scenario, breadth)
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

    /// The generated scenario's median latency (5 ms) times the calls of a member's path
    /// with `pages` pages: GetCallerIdentity, the pages, AssumeRole, ListRegions, a
    /// listing and an item call.
    fn path(pages: u64) -> f64 {
        0.005 * (5 + pages) as f64
    }

    #[test]
    fn fifty_members_assume_roles_through_the_hub_quota_which_binds() {
        let s = scenario(Shape {
            accounts: 51,
            regions: 2,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        let b = binding(&s, false);
        // 50 AssumeRoles at 10/s after a burst of 5: 4.5 s, plus the path (3 pages);
        // 51 accounts in 3 pages of 20 at 2/s after 1: 1 s plus the path without two
        // pages; each account-region's few calls fit its burst of 50.
        assert!((b.seconds - (4.5 + path(3))).abs() < 1e-9, "{b:?}");
        assert!(b.what.contains("sts:AssumeRole"), "{b:?}");
        let pages = constraints(&s, false)
            .into_iter()
            .find(|c| c.what.contains("ListAccounts"))
            .unwrap();
        assert!((pages.seconds - (1.0 + path(1))).abs() < 1e-9, "{pages:?}");
    }

    #[test]
    fn a_small_organization_whose_calls_fit_every_burst_is_bound_by_its_path() {
        // 3 accounts × 2 regions (bench/tests/org.rs's size): nothing drains, so the
        // ideal is one member's path, 6 calls of 5 ms, and the ratio is defined.
        let s = scenario(Shape {
            accounts: 3,
            regions: 2,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        let b = binding(&s, false);
        assert!((b.seconds - path(1)).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn a_management_account_alone_needs_no_assume_role() {
        let s = scenario(Shape {
            accounts: 1,
            regions: 1,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        let b = binding(&s, false);
        assert!((b.seconds - (path(1) - 0.005)).abs() < 1e-9, "{b:?}");
        assert!(!b.what.contains("AssumeRole"), "{b:?}");
    }

    #[test]
    fn an_account_region_with_more_calls_than_its_burst_can_bind() {
        let s = scenario(Shape {
            accounts: 2,
            regions: 1,
            items_per_region: 60,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        // one region's DynamoDB: 1 listing + 60 descriptions; KMS: 1 + 60 + 60 = 121
        // calls on the default bucket (50/s, burst 50) if grouped so; whatever binds is
        // an account-region's, above the hub's path alone.
        let b = binding(&s, false);
        assert!(b.seconds > path(1) && !b.what.starts_with("hub"), "{b:?}");
    }

    #[test]
    fn with_breadth_the_sweeps_underlying_quotas_bind_and_without_it_nothing_does() {
        let s = scenario(Shape {
            accounts: 2,
            regions: 1,
            items_per_region: 1,
            ec2_per_region: 2,
            cloudcontrol_per_region: 100,
        })
        .unwrap();
        // 100 queues per region: 4 pages of 25, each one sqs:ListQueues token of the
        // account-region's bucket (2/s, burst 2): 1 s, plus the member's path; the
        // 100 roles' 4 pages on IAM's global bucket (2/s, burst 3) take 0.5 s.
        let b = binding(&s, true);
        // (ECR's 4 DescribeRepositories pages at 2/s burst 2: 1 s too.)
        assert!(
            b.what.ends_with("sqs:ListQueues") || b.what.contains(" ecr:"),
            "{b:?}"
        );
        assert!((b.seconds - (1.0 + path(1))).abs() < 1e-9, "{b:?}");
        let roles = constraints(&s, true)
            .into_iter()
            .find(|c| c.what == "100000000001 global iam:ListRoles")
            .unwrap();
        assert!((roles.seconds - (0.5 + path(1))).abs() < 1e-9, "{roles:?}");
        // A member's queues: 4 pages at 2/s after 2, 1 s, a constraint of their own.
        let queues = constraints(&s, true)
            .into_iter()
            .find(|c| c.what == "100000000001 us-east-1 sqs:ListQueues")
            .unwrap();
        assert!(
            (queues.seconds - (1.0 + path(1))).abs() < 1e-9,
            "{queues:?}"
        );
        // Without --breadth the scan sweeps nothing, and neither EC2 nor tags count.
        let narrow = binding(&s, false);
        assert!((narrow.seconds - path(1)).abs() < 1e-9, "{narrow:?}");
        assert!(constraints(&s, false)
            .iter()
            .all(|c| !c.what.contains("ec2:") && !c.what.contains("cloudcontrol")));
    }
}
