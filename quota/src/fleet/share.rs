//! Degraded mode's local share: when the table cannot be used, a host admits at the key's
//! rate (with the fleet factor it last saw) divided by the hosts seen in the last minute,
//! at least 1, from a bucket that starts empty. Never the full rate silently: with every
//! host degraded the fleet stays within its rate; with only this one degraded, within
//! `rate·(1 + 1/hosts)` until it rejoins (documented in docs/fleet.md).

use crate::bucket::TokenBucket;
use crate::time::Timestamp;

/// The local bucket of a degraded host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalShare {
    bucket: TokenBucket,
    rate: f64,
    burst: f64,
    hosts: usize,
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
        }
    }

    /// When `cost` can be admitted, `None` if now.
    pub fn ready_at(&self, cost: f64, now: Timestamp) -> Option<Timestamp> {
        self.bucket.ready_at(cost, self.burst, self.rate, now)
    }

    /// Charge an admission (the caller checked [`LocalShare::ready_at`]).
    pub fn take(&mut self, cost: f64, now: Timestamp) {
        self.bucket.take(cost, self.burst, self.rate, now);
    }

    /// The share's rate (tokens/s).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The hosts the rate is divided by.
    pub fn hosts(&self) -> usize {
        self.hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
