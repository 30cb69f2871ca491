//! `--policy-file FILE` and `--policy-file-for HOST=FILE` (issue 23): a policy file in
//! `TOLLGATE_POLICY_FILE`'s format (schedules and allowances included) for every host or
//! for one, so that hosts that disagree can be benchmarked.
//!
//! The bench's shared key is `bench:Shared` in the file; a rate or burst given there wins
//! over `--rate`/`--burst` for that host's workers. Each host's coordinator and workers
//! get `TOLLGATE_POLICY_FILE`, so the calendar is declared on the key's item by whichever
//! process coordinates. The fleet promises the strictest of the hosts' declarations: the
//! bucket bound is checked at the strictest base policy, and an allowance (the smallest
//! declared) by counting the merged grant logs per period.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use tollgate_quota::schedule::WallClock;
use tollgate_quota::{Allowance, Policy, PolicyTable, QuotaKey, ReadTime};

use crate::harness::worker::{GrantLine, BENCH_KEY};

/// Each host's policy file, if any.
#[derive(Debug, Clone, Default)]
pub struct HostPolicies {
    files: Vec<Option<PathBuf>>,
    policies: Vec<Policy>,
    /// Each host's policy as its schedule has it at the run's start.
    in_force: Vec<Policy>,
    allowances: Vec<Allowance>,
}

/// A `--policy-file-for` that is not `HOST=FILE`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyForArgError {
    /// No `=`.
    #[error("{0:?}: expected HOST=FILE, for example 2=strict.toml")]
    NotHostEqualsFile(String),
    /// `HOST` is not a number.
    #[error("{0:?}: HOST must be a host number from 0")]
    HostNotANumber(String),
}

/// `HOST=FILE`.
pub fn parse_policy_for(s: &str) -> Result<(usize, PathBuf), PolicyForArgError> {
    let (host, file) = s
        .split_once('=')
        .ok_or_else(|| PolicyForArgError::NotHostEqualsFile(s.to_string()))?;
    let host = host
        .trim()
        .parse::<usize>()
        .map_err(|_| PolicyForArgError::HostNotANumber(s.to_string()))?;
    Ok((host, PathBuf::from(file)))
}

impl HostPolicies {
    /// The files of `hosts` hosts: `every` for all, `for_host` for some; the key's
    /// policy on each (the file's, else `fallback` from `--rate`/`--burst`).
    pub fn new(
        hosts: usize,
        every: Option<&PathBuf>,
        for_host: &[(usize, PathBuf)],
        fallback: Policy,
    ) -> anyhow::Result<Self> {
        let key: QuotaKey = BENCH_KEY.parse()?;
        let mut out = HostPolicies::default();
        for h in 0..hosts {
            let file = for_host
                .iter()
                .rev()
                .find(|(host, _)| *host == h)
                .map(|(_, f)| f)
                .or(every)
                .cloned();
            let (policy, in_force, allowance) = match &file {
                None => (fallback, fallback, None),
                Some(path) => {
                    let table = tollgate_engine::config::policy_file_table(path)
                        .with_context(|| format!("host {h}'s policy file"))?;
                    let policy = if has_entry(&table) {
                        table.policy_for_key(&key)
                    } else {
                        fallback
                    };
                    let allowance = match table.read_time_for_key(&key) {
                        Some(ReadTime::Allowance(a)) => Some(a.clone()),
                        _ => None,
                    };
                    let now = WallClock::from_timestamp(
                        tollgate_actors::clock::unix_now(),
                        WallClock::UNIX_EPOCH,
                    );
                    let in_force = match table.read_time_for_key(&key) {
                        Some(ReadTime::Schedule(s)) => {
                            tollgate_quota::schedule::resolve(&policy, s, now, now).policy
                        }
                        _ => policy,
                    };
                    (policy, in_force, allowance)
                }
            };
            out.files.push(file);
            out.policies.push(policy);
            out.in_force.push(in_force);
            out.allowances.extend(allowance);
        }
        for (h, _) in for_host {
            anyhow::ensure!(
                *h < hosts,
                "--policy-file-for {h}=...: there are {hosts} hosts"
            );
        }
        Ok(out)
    }

    /// Host `h`'s policy file, for its `TOLLGATE_POLICY_FILE`.
    pub fn file(&self, h: usize) -> Option<&PathBuf> {
        self.files.get(h).and_then(Option::as_ref)
    }

    /// Host `h`'s policy for the key (what its workers ask with).
    pub fn policy(&self, h: usize) -> Policy {
        self.policies[h]
    }

    /// The strictest of the hosts' policies in force at the run's start (schedules
    /// resolved then): what the fleet promises at most. A run across a schedule's
    /// boundary is checked at the parameters of its start.
    pub fn strictest(&self) -> Policy {
        self.in_force
            .iter()
            .copied()
            .reduce(|a, b| a.strictest(&b))
            .expect("at least one host")
    }

    /// The allowance in force on the key: the smallest declared.
    pub fn allowance(&self) -> Option<&Allowance> {
        self.allowances.iter().min_by_key(|a| a.amount())
    }
}

/// True if the table names the bench's key (else `--rate`/`--burst` apply).
fn has_entry(table: &PolicyTable) -> bool {
    table
        .rows()
        .iter()
        .any(|row| row.service == "bench" && row.group == "Shared")
}

/// Grants per allowance period in the merged logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodCount {
    /// The period's start (RFC 3339, UTC).
    pub start: String,
    pub grants: u64,
}

/// The merged `grants` counted per period of `allowance`, in order.
pub fn grants_per_period(allowance: &Allowance, grants: &[GrantLine]) -> Vec<PeriodCount> {
    let mut out: Vec<(WallClock, u64)> = Vec::new();
    for g in grants {
        let at =
            WallClock::from_unix_millis((g.granted_at_us / 1_000) as i64).unwrap_or(WallClock::MAX);
        let start = allowance.period_at(at).start;
        match out.last_mut() {
            Some((s, n)) if *s == start => *n += 1,
            _ => out.push((start, 1)),
        }
    }
    out.into_iter()
        .map(|(s, grants)| PeriodCount {
            start: s.to_rfc3339(),
            grants,
        })
        .collect()
}

/// How long the run should take at least: the rate's ideal, or the periods its
/// admissions need under the allowance.
pub fn ideal_s(admissions: usize, policy: Policy, allowance: Option<&Allowance>) -> f64 {
    let rate_ideal = ((admissions as f64 - policy.burst()) / policy.rate_per_second()).max(0.0);
    let Some(a) = allowance else {
        return rate_ideal;
    };
    let now = tollgate_actors::clock::unix_now();
    let wall = WallClock::from_timestamp(now, WallClock::UNIX_EPOCH);
    let period = a.period_at(wall);
    let length = period
        .next_reset
        .saturating_since(period.start)
        .as_secs_f64();
    let periods = (admissions as u64).div_ceil(a.amount()).saturating_sub(1) as f64;
    rate_ideal.max(periods * length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::CronSchedule;

    #[test]
    fn host_equals_file_is_parsed_and_refused_without_an_equals_sign() {
        assert_eq!(
            parse_policy_for("2=strict.toml"),
            Ok((2, PathBuf::from("strict.toml")))
        );
        assert!(parse_policy_for("strict.toml").is_err());
        assert!(parse_policy_for("x=strict.toml").is_err());
    }

    #[test]
    fn grants_are_counted_per_allowance_period() {
        let a = Allowance::new(50, CronSchedule::parse("* * * * *", "UTC").unwrap()).unwrap();
        let line = |s: u64| GrantLine {
            host: Some(0),
            pid: 1,
            key: BENCH_KEY.into(),
            granted_at_us: s * 1_000_000,
        };
        let grants = [line(59), line(60), line(61), line(119), line(120)];
        let counts: Vec<u64> = grants_per_period(&a, &grants)
            .iter()
            .map(|p| p.grants)
            .collect();
        assert_eq!(counts, [1, 3, 1]);
    }
}
