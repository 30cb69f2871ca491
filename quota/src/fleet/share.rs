//! Degraded mode's local share: when the table cannot be used, a host admits at the key's
//! rate (with the fleet factor it last saw) divided by the hosts seen in the last minute,
//! at least 1, from a bucket that starts empty. Never the full rate silently: with every
//! host degraded the fleet stays within its rate; with only this one degraded, within
//! `rate·(1 + 1/hosts)` until it rejoins (documented in docs/fleet.md).
//!
//! A key with a fleet allowance divides it the same way (issue 23): the rest of the
//! current period, as the last grant left it, over the hosts seen (rounded down), and
//! after each reset the amount over the hosts. With every host degraded a later period
//! admits at most the amount; the period of the failure at most the amount plus what
//! other hosts charged after each host's last grant (each divides the remaining it last
//! saw). A host that cannot reach the table waits for the reset like any caller once its
//! part is spent.

use crate::bucket::TokenBucket;
use crate::fleet::calendar::AllowanceSeen;
use crate::schedule::{Allowance, AllowancePeriod, WallClock};
use crate::time::Timestamp;

/// The local bucket of a degraded host.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalShare {
    bucket: TokenBucket,
    rate: f64,
    burst: f64,
    hosts: usize,
    allowance: Option<AllowanceShare>,
}

/// A degraded host's part of the fleet allowance.
#[derive(Debug, Clone, PartialEq)]
struct AllowanceShare {
    allowance: Allowance,
    anchor: WallClock,
    period: AllowancePeriod,
    /// Cost this host may still admit in `period`.
    left: u64,
}

impl AllowanceShare {
    /// The share at `now`: rolled to `now`'s period (the amount over the hosts) if a reset
    /// passed.
    fn at(&self, hosts: usize, now: Timestamp) -> (AllowancePeriod, u64) {
        let wall = WallClock::from_timestamp(now, self.anchor);
        if wall >= self.period.next_reset {
            let period = self.allowance.period_at(wall);
            (period, self.allowance.amount() / hosts as u64)
        } else {
            (self.period, self.left)
        }
    }
}

impl LocalShare {
    /// A share of `rate`·`factor` and `burst` among `hosts`, starting empty at `now`.
    pub fn new(rate: f64, factor: f64, burst: f64, hosts: usize, now: Timestamp) -> Self {
        let hosts = hosts.max(1);
        LocalShare {
            bucket: TokenBucket::empty(now),
            rate: rate * factor / hosts as f64,
            burst: (burst / hosts as f64).max(1.0),
            hosts,
            allowance: None,
        }
    }

    /// Divide the fleet allowance as last seen too (`None`: no allowance in force).
    pub fn with_allowance(mut self, seen: Option<AllowanceSeen>) -> Self {
        self.allowance = seen.map(|s| AllowanceShare {
            left: s.remaining / self.hosts as u64,
            allowance: s.allowance,
            anchor: s.anchor,
            period: s.period,
        });
        self
    }

    /// When `cost` can be admitted, `None` if now: the rate's bucket, and the allowance's
    /// part (its next reset if spent).
    pub fn ready_at(&self, cost: f64, now: Timestamp) -> Option<Timestamp> {
        if let Some(a) = &self.allowance {
            let (period, left) = a.at(self.hosts, now);
            if (cost.ceil() as u64).max(1) > left {
                let reset = period.next_reset.to_timestamp(a.anchor);
                return Some(reset.max(now + std::time::Duration::from_micros(1)));
            }
        }
        self.bucket.ready_at(cost, self.burst, self.rate, now)
    }

    /// Charge an admission (the caller checked [`LocalShare::ready_at`]).
    pub fn take(&mut self, cost: f64, now: Timestamp) {
        self.bucket.take(cost, self.burst, self.rate, now);
        let hosts = self.hosts;
        if let Some(a) = self.allowance.as_mut() {
            let (period, left) = a.at(hosts, now);
            a.period = period;
            a.left = left.saturating_sub((cost.ceil() as u64).max(1));
        }
    }

    /// The share's rate (tokens/s).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The hosts the rate is divided by.
    pub fn hosts(&self) -> usize {
        self.hosts
    }

    /// The allowance this host may still admit in the period of `now`, if one is in force.
    pub fn allowance_left(&self, now: Timestamp) -> Option<u64> {
        self.allowance.as_ref().map(|a| a.at(self.hosts, now).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::CronSchedule;

    #[test]
    fn the_share_divides_the_rate_by_the_hosts_seen() {
        let s = LocalShare::new(20.0, 1.0, 5.0, 4, Timestamp::ZERO);
        assert_eq!(s.rate(), 5.0);
        assert_eq!(
            s.ready_at(1.0, Timestamp::ZERO),
            Some(Timestamp::from_millis(200)),
            "starts empty"
        );
        let alone = LocalShare::new(20.0, 0.5, 5.0, 0, Timestamp::ZERO);
        assert_eq!((alone.rate(), alone.hosts()), (10.0, 1));
    }

    #[test]
    fn the_share_divides_the_allowances_remaining_then_each_period_by_the_hosts_seen() {
        // 50 a minute over 4 hosts; the last grant left 21 of the period ending at 60 s.
        let allowance =
            Allowance::new(50, CronSchedule::parse("* * * * *", "UTC").unwrap()).unwrap();
        let period = allowance.period_at(WallClock::UNIX_EPOCH);
        let seen = AllowanceSeen {
            allowance,
            period,
            remaining: 21,
            anchor: WallClock::UNIX_EPOCH,
        };
        let at = Timestamp::from_millis;
        let mut s = LocalShare::new(1_000.0, 1.0, 1_000.0, 4, at(0)).with_allowance(Some(seen));
        assert_eq!(
            s.allowance_left(at(10_000)),
            Some(5),
            "21 / 4, rounded down"
        );
        let mut admitted = 0;
        let mut t = at(10_000);
        while t < at(59_000) {
            match s.ready_at(1.0, t) {
                None => {
                    s.take(1.0, t);
                    admitted += 1;
                }
                Some(when) => {
                    assert!(when >= at(60_000) || when <= t + std::time::Duration::from_secs(1))
                }
            }
            t = t + std::time::Duration::from_millis(100);
        }
        assert_eq!(admitted, 5, "the share of what remained");
        assert_eq!(
            s.ready_at(1.0, at(59_000)),
            Some(at(60_000)),
            "waits for the reset"
        );
        assert_eq!(
            s.allowance_left(at(60_000)),
            Some(12),
            "then 50 / 4 a period"
        );
    }
}
