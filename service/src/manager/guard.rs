//! Guard rails for on-demand scans (seed 001's live-operation guard, for the service).
//!
//! People rarely scan an account twice in a minute; a script or an agent calling the API
//! might, and every scan spends the same account quotas the account's other users need.
//! Identical requests already join (the manager's [`JoinKey`](crate::scan_request::JoinKey)).
//! On top of that:
//!
//! - **per-account cap**: at most `max_scans_per_account` scans of one account run at once
//!   (default 1); the rest wait `queued`, and [`next_to_start`] skips a queued scan whose
//!   account is at its cap so other accounts' scans are not held up behind it;
//! - **cooldown**: after a scan of an account finishes (whatever its status), a new
//!   on-demand scan of that account is refused for `cooldown` (default 60 s; zero turns
//!   it off) with reason `cooldown`, the seconds left and the latest scan's id, so the
//!   caller can read that report instead;
//! - **busy**: an on-demand scan of an account that already has a scan waiting for its
//!   cap is refused with reason `busy` (naming the waiting scan) instead of piling up;
//! - `"force": true` skips the cooldown and the busy refusal, never the cap: a forced scan
//!   queues like any other. Scheduled scans are exempt from both refusals (the schedule
//!   is the operator's decision), not from the cap.
//!
//! The account is not known before a scan resolves it, so it is named by what selects it
//! ([`AccountSelector`]: profile, role, endpoint), the way [`JoinKey`](crate::scan_request::JoinKey)
//! does. Cooldowns live in memory: a restarted service starts without any, and an
//! account's entry is dropped once its cooldown has ended ([`forget_cooled`]), so the
//! map holds the accounts scanned within the last `cooldown`, not every one ever.
//!
//! [`admit`] and [`next_to_start`] are pure (time comes in as an argument) and
//! table-tested; the manager applies them under its lock.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::time::Duration;

use serde::Serialize;
use tollgate_scan::DiscoveryRequest;

use crate::scan_request::ScanOrigin;

/// Default `max_scans_per_account`.
pub const DEFAULT_MAX_SCANS_PER_ACCOUNT: usize = 1;
/// Default `cooldown`.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// The guard's settings (`[service]` `max_scans_per_account`, `cooldown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardSettings {
    /// Scans of one account running at once; more wait `queued`.
    pub max_scans_per_account: NonZeroUsize,
    /// How long after a scan of an account finishes a new on-demand scan of it is
    /// refused; zero: never.
    pub cooldown: Duration,
}

impl Default for GuardSettings {
    fn default() -> Self {
        GuardSettings {
            max_scans_per_account: NonZeroUsize::new(DEFAULT_MAX_SCANS_PER_ACCOUNT)
                .expect("nonzero"),
            cooldown: DEFAULT_COOLDOWN,
        }
    }
}

/// What selects the account a request scans, before the scan resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccountSelector {
    profile: Option<String>,
    role_arn: Option<String>,
    endpoint_url: Option<String>,
}

impl AccountSelector {
    /// The selector of a validated request.
    pub fn of(request: &DiscoveryRequest) -> AccountSelector {
        AccountSelector {
            profile: request.profile.clone(),
            role_arn: request.role.as_ref().map(|r| r.role_arn.clone()),
            endpoint_url: request.endpoint_url.clone(),
        }
    }
}

/// The latest finished scan of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestScan {
    /// Its id.
    pub scan_id: String,
    /// When it finished, microseconds since the epoch.
    pub finished_at: u64,
}

/// Why a submission was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The account's latest scan finished less than `cooldown` ago.
    Cooldown,
    /// A scan of the account is already waiting for the per-account cap.
    Busy,
}

/// A refused on-demand submission: why, when to try again, which scan to read instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// `cooldown` or `busy`.
    pub reason: RefusalReason,
    /// Seconds until a submission may be accepted (at least 1).
    pub retry_after_seconds: u64,
    /// The account's latest scan: the finished one (cooldown) or the waiting one (busy).
    pub latest_scan: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason {
            RefusalReason::Cooldown => write!(
                f,
                "this account was scanned moments ago (scan {}); read that report, retry in \
                 {} s, or send \"force\": true",
                self.latest_scan, self.retry_after_seconds
            ),
            RefusalReason::Busy => write!(
                f,
                "a scan of this account is already waiting to run (scan {}); wait for it, \
                 or send \"force\": true to queue another",
                self.latest_scan
            ),
        }
    }
}

/// What the guard knows of one account when a submission arrives.
#[derive(Debug, Clone, Copy, Default)]
pub struct AccountState<'a> {
    /// Its latest finished scan, if any.
    pub latest: Option<&'a LatestScan>,
    /// A scan of it waiting `queued` for the per-account cap, if any.
    pub waiting: Option<&'a str>,
    /// Scans of it running now.
    pub running: usize,
}

/// Whether a submission of `origin` for an account in `account` may be queued, at `now`
/// (microseconds since the epoch).
pub fn admit(
    settings: &GuardSettings,
    origin: ScanOrigin,
    account: AccountState<'_>,
    now: u64,
) -> Result<(), Refusal> {
    let exempt = matches!(
        origin,
        ScanOrigin::Scheduled | ScanOrigin::OnDemand { force: true }
    );
    if exempt || settings.cooldown.is_zero() {
        return Ok(());
    }
    let cooldown_micros = settings.cooldown.as_micros() as u64;
    if let Some(latest) = account.latest {
        let ends = latest.finished_at.saturating_add(cooldown_micros);
        if now < ends {
            return Err(Refusal {
                reason: RefusalReason::Cooldown,
                retry_after_seconds: (ends - now).div_ceil(1_000_000).max(1),
                latest_scan: latest.scan_id.clone(),
            });
        }
    }
    match account.waiting {
        Some(waiting) if account.running >= settings.max_scans_per_account.get() => Err(Refusal {
            reason: RefusalReason::Busy,
            // The waiting scan's start is not known; a cooldown is the least it takes.
            retry_after_seconds: settings.cooldown.as_secs().max(1),
            latest_scan: waiting.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Drop the latest scans whose cooldown has ended at `now`: they refuse nothing any
/// more, and an organization target's member accounts would otherwise stay in the map
/// for the service's life. With a zero cooldown nothing is kept.
pub fn forget_cooled(
    latest: &mut HashMap<AccountSelector, LatestScan>,
    settings: &GuardSettings,
    now: u64,
) {
    let cooldown_micros = settings.cooldown.as_micros() as u64;
    latest.retain(|_, l| now < l.finished_at.saturating_add(cooldown_micros));
}

/// The position in `queue` (accounts, oldest first) of the first scan whose account has
/// fewer than the cap running.
pub fn next_to_start(
    queue: &[&AccountSelector],
    running: &HashMap<&AccountSelector, usize>,
    cap: NonZeroUsize,
) -> Option<usize> {
    queue
        .iter()
        .position(|account| running.get(account).copied().unwrap_or(0) < cap.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;
    const T0: u64 = 1_800_000_000 * S;

    fn settings(cap: usize, cooldown_s: u64) -> GuardSettings {
        GuardSettings {
            max_scans_per_account: NonZeroUsize::new(cap).unwrap(),
            cooldown: Duration::from_secs(cooldown_s),
        }
    }

    fn refusal(reason: RefusalReason, retry: u64, latest: &str) -> Result<(), Refusal> {
        Err(Refusal {
            reason,
            retry_after_seconds: retry,
            latest_scan: latest.to_string(),
        })
    }

    /// case, settings, origin, account, now → answer.
    type Row<'a> = (
        &'a str,
        GuardSettings,
        ScanOrigin,
        AccountState<'a>,
        u64,
        Result<(), Refusal>,
    );

    #[test]
    fn each_submission_is_admitted_or_refused() {
        use RefusalReason::*;
        let latest = LatestScan {
            scan_id: "scan-a".into(),
            finished_at: T0,
        };
        let on_demand = ScanOrigin::OnDemand { force: false };
        let forced = ScanOrigin::OnDemand { force: true };
        let fresh = AccountState::default();
        let cooled = AccountState {
            latest: Some(&latest),
            ..fresh
        };
        let waiting = AccountState {
            waiting: Some("scan-w"),
            running: 1,
            ..fresh
        };
        #[rustfmt::skip]
        let table: Vec<Row<'_>> = vec![
            ("a first scan of an account runs", settings(1, 60), on_demand, fresh, T0, Ok(())),
            ("within the cooldown: refused with the seconds left", settings(1, 60), on_demand, cooled, T0 + 15 * S, refusal(Cooldown, 45, "scan-a")),
            ("a fraction of a second left rounds up", settings(1, 60), on_demand, cooled, T0 + 59 * S + 1, refusal(Cooldown, 1, "scan-a")),
            ("right at the end of the cooldown: runs", settings(1, 60), on_demand, cooled, T0 + 60 * S, Ok(())),
            ("force skips the cooldown", settings(1, 60), forced, cooled, T0 + S, Ok(())),
            ("scheduled scans are exempt", settings(1, 60), ScanOrigin::Scheduled, cooled, T0 + S, Ok(())),
            ("a zero cooldown turns the guard off", settings(1, 0), on_demand, cooled, T0 + S, Ok(())),
            ("one running and none waiting: this one queues", settings(1, 60), on_demand, AccountState { running: 1, ..fresh }, T0, Ok(())),
            ("one running and one waiting: busy", settings(1, 60), on_demand, waiting, T0, refusal(Busy, 60, "scan-w")),
            ("below a higher cap a waiting scan is no reason", settings(2, 60), on_demand, waiting, T0, Ok(())),
            ("force queues behind the cap instead of busy", settings(1, 60), forced, waiting, T0, Ok(())),
            ("the cooldown is named before busy", settings(1, 60), on_demand, AccountState { latest: Some(&latest), ..waiting }, T0 + S, refusal(Cooldown, 59, "scan-a")),
        ];
        for (case, settings, origin, account, now, want) in table {
            assert_eq!(admit(&settings, origin, account, now), want, "{case}");
        }
    }

    #[test]
    fn a_thousand_accounts_scanned_are_forgotten_once_their_cooldowns_end() {
        let settings = settings(1, 60);
        let mut latest: HashMap<AccountSelector, LatestScan> = (0..1000)
            .map(|i| {
                let selector = AccountSelector {
                    profile: None,
                    role_arn: Some(format!("arn:aws:iam::{:012}:role/scan", i)),
                    endpoint_url: None,
                };
                let finished_at = T0 + (i % 2) * 30 * S;
                let scan_id = format!("scan-{i}");
                (
                    selector,
                    LatestScan {
                        scan_id,
                        finished_at,
                    },
                )
            })
            .collect();
        forget_cooled(&mut latest, &settings, T0 + 60 * S - 1);
        assert_eq!(latest.len(), 1000, "every cooldown still runs");
        forget_cooled(&mut latest, &settings, T0 + 60 * S);
        assert_eq!(latest.len(), 500, "the first half's cooldowns ended");
        forget_cooled(&mut latest, &settings, T0 + 90 * S);
        assert!(latest.is_empty(), "nothing is kept past its cooldown");
        let mut one = HashMap::from([(
            AccountSelector {
                profile: None,
                role_arn: None,
                endpoint_url: None,
            },
            LatestScan {
                scan_id: "scan-z".into(),
                finished_at: T0,
            },
        )]);
        forget_cooled(&mut one, &self::settings(1, 0), T0);
        assert!(one.is_empty(), "a zero cooldown keeps nothing");
    }

    #[test]
    fn a_queued_scan_of_an_account_at_its_cap_lets_others_pass() {
        let selector = |endpoint: &str| AccountSelector {
            profile: None,
            role_arn: None,
            endpoint_url: Some(endpoint.to_string()),
        };
        let (a, b) = (selector("http://a"), selector("http://b"));
        let cap = NonZeroUsize::new(1).unwrap();
        let mut running = HashMap::new();
        assert_eq!(next_to_start(&[&a, &b], &running, cap), Some(0));
        running.insert(&a, 1);
        assert_eq!(next_to_start(&[&a, &b], &running, cap), Some(1));
        assert_eq!(next_to_start(&[&a, &a], &running, cap), None);
        let two = NonZeroUsize::new(2).unwrap();
        assert_eq!(next_to_start(&[&a], &running, two), Some(0));
        assert_eq!(next_to_start(&[], &running, cap), None);
    }
}
