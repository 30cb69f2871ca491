//! The host's side of a key's fleet admission: the block being spent, the request in
//! flight, the retry units held, and the mode (fleet, or degraded when the table fails).
//!
//! Pure bookkeeping in the manner of [`crate::LeaseLedger`]: the quota actor asks
//! [`HostLedger::gate`] before each grant, [`HostLedger::charge`]s grants, starts a
//! request when [`HostLedger::wants_request`] says so and reports its answer. Rules:
//! - a grant happens only under the current block, while the host's clock is before the
//!   block's `expires − skew` (see the skew argument in [`crate::fleet`]);
//! - asking for a block voids the current one at once ([`HostLedger::begin`]): the write
//!   may land at any moment and void it on the item, so nothing more is spent from it;
//! - a zero grant says when the level allows a block: no request before then;
//! - a failed request degrades the key (local share or stop, [`super::OnError`]) and
//!   retries the table with a backoff; the first answer rejoins.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fleet::share::LocalShare;
use crate::fleet::sizing::DemandMeter;
use crate::fleet::take::{BlockGrant, BlockRequest};
use crate::fleet::{FleetConfig, HostId, OnError};
use crate::policy::Policy;
use crate::time::Timestamp;

/// Retry units a host keeps on hand (drawn from the item in blocks of at most this).
pub const RETRY_BLOCK: u32 = 2;
/// The first retry of a failed table after this; doubling up to [`REJOIN_MAX`].
pub const REJOIN_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two attempts to rejoin the table.
pub const REJOIN_MAX: Duration = Duration::from_secs(5);

/// What the fleet says about one admission.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetGate {
    /// The current block (or the local share) covers it.
    Go,
    /// Not before this instant (local share refill, or the level's promised instant).
    Wait(Timestamp),
    /// A block is needed: ask for one if none is in flight, then wait for its answer.
    NeedBlock,
    /// A retry, and the fleet's shared retry units are used up: it is not sent.
    RetryRefused,
    /// The table failed and the mode is `stop`: refuse, with this reason.
    Stopped(String),
}

/// How the key admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FleetMode {
    /// Under blocks from the table.
    Fleet,
    /// Table failed: a local share of the rate.
    LocalShare,
    /// Table failed: requests refused.
    Stop,
}

/// A change of mode, for a warning (once per transition).
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// The table failed; the key now admits in `mode`.
    Degraded { mode: FleetMode, error: String },
    /// The table answered again.
    Rejoined,
}

/// The host's view of one key, for `tollgate status --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetView {
    pub mode: FleetMode,
    /// Tokens left in the current block (fleet mode).
    pub block_left: u64,
    /// The block is spent only before this instant (host clock).
    pub spend_until: Option<Timestamp>,
    pub retry_units_held: u32,
    /// The fleet factor last seen.
    pub factor: f64,
    /// Hosts seen on the item in the last minute (last read).
    pub hosts_seen: usize,
    /// The local share's rate (local-share mode).
    pub local_share_rate: Option<f64>,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Spendable {
    left: u64,
    spend_until: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
enum Mode {
    Fleet,
    LocalShare(LocalShare),
    Stop,
}

/// The host's bookkeeping for one key.
#[derive(Debug, Clone)]
pub struct HostLedger {
    host: HostId,
    config: FleetConfig,
    block: Option<Spendable>,
    in_flight: Option<(bool, u32)>,
    retry_held: u32,
    retry_empty: bool,
    throttled: bool,
    refunds: u32,
    next_try_at: Option<Timestamp>,
    demand: DemandMeter,
    mode: Mode,
    last_error: Option<String>,
    failures: u32,
    rejoin_at: Option<Timestamp>,
    factor: f64,
    hosts_seen: usize,
}

impl HostLedger {
    /// A ledger with no block: the first grant asks for one.
    pub fn new(host: HostId, config: FleetConfig) -> Self {
        HostLedger {
            host,
            config,
            block: None,
            in_flight: None,
            retry_held: 0,
            retry_empty: false,
            throttled: false,
            refunds: 0,
            next_try_at: None,
            demand: DemandMeter::default(),
            mode: Mode::Fleet,
            last_error: None,
            failures: 0,
            rejoin_at: None,
            factor: 1.0,
            hosts_seen: 1,
        }
    }

    /// May an admission of `cost` (a retry if `retry`) go now?
    pub fn gate(&self, cost: u64, retry: bool, now: Timestamp) -> FleetGate {
        match &self.mode {
            Mode::Stop => FleetGate::Stopped(self.last_error.clone().unwrap_or_default()),
            Mode::LocalShare(share) => match share.ready_at(cost as f64, now) {
                None => FleetGate::Go,
                Some(at) => FleetGate::Wait(at),
            },
            Mode::Fleet => {
                if retry && self.retry_held == 0 {
                    return if self.retry_empty && self.in_flight.is_none() {
                        FleetGate::RetryRefused
                    } else {
                        FleetGate::NeedBlock
                    };
                }
                match self.block {
                    Some(b) if b.left >= cost && now < b.spend_until => FleetGate::Go,
                    _ => match self.next_try_at {
                        Some(at) if at > now && self.in_flight.is_none() => FleetGate::Wait(at),
                        _ => FleetGate::NeedBlock,
                    },
                }
            }
        }
    }

    /// Charge a granted admission.
    pub fn charge(&mut self, cost: u64, retry: bool, now: Timestamp) {
        self.demand.record(cost as f64, now);
        match &mut self.mode {
            Mode::Fleet => {
                if let Some(b) = &mut self.block {
                    b.left = b.left.saturating_sub(cost);
                }
                if retry {
                    self.retry_held = self.retry_held.saturating_sub(1);
                }
            }
            Mode::LocalShare(share) => share.take(cost as f64, now),
            Mode::Stop => {}
        }
    }

    /// An attempt's outcome: a throttle is reported with the next block (the fleet
    /// penalty); a success refunds one shared retry unit.
    pub fn feedback(&mut self, throttled: bool, success: bool) {
        self.throttled |= throttled;
        if success {
            self.refunds = self.refunds.saturating_add(1);
        }
    }

    /// Should a request start now? `blocked` if a waiter needs a block, `active` if the
    /// key has waiters at all (degraded keys retry the table only while in use).
    pub fn wants_request(&self, blocked: bool, active: bool, now: Timestamp) -> bool {
        if self.in_flight.is_some() {
            return false;
        }
        match self.mode {
            Mode::Fleet => blocked && self.next_try_at.is_none_or(|at| at <= now),
            _ => (blocked || active) && self.rejoin_at.is_none_or(|at| at <= now),
        }
    }

    /// True while a request is in flight.
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// The next instant the ledger itself may change its answer (a promised level, a
    /// rejoin attempt), if any.
    pub fn wake_at(&self, now: Timestamp) -> Option<Timestamp> {
        [self.next_try_at, self.rejoin_at]
            .into_iter()
            .flatten()
            .filter(|at| *at > now)
            .min()
    }

    /// Start a request: the current block is void from now on. `head` is the head
    /// waiter's cost (1 if none), `waiting` the cost queued.
    pub fn begin(
        &mut self,
        head: u64,
        waiting: u64,
        policy: &Policy,
        now: Timestamp,
    ) -> BlockRequest {
        self.block = None;
        let (wanted, at_least) = self.demand.block_size(head, waiting, policy.burst(), now);
        let target = RETRY_BLOCK.min(policy.retry_capacity());
        let request = BlockRequest {
            host: self.host.clone(),
            wanted,
            at_least,
            rate: policy.rate_per_second(),
            burst: policy.burst(),
            retry_capacity: policy.retry_capacity(),
            throttled: self.throttled,
            retry_want: target.saturating_sub(self.retry_held),
            retry_refund: self.refunds,
            ttl: self.config.block_ttl(),
        };
        self.in_flight = Some((self.throttled, self.refunds));
        self.throttled = false;
        self.refunds = 0;
        request
    }

    /// The request's answer arrived. Returns a transition if the key was degraded.
    pub fn granted(&mut self, grant: &BlockGrant) -> Option<Transition> {
        self.in_flight = None;
        self.block = Some(Spendable {
            left: grant.tokens,
            spend_until: grant.expires_at.saturating_sub(self.config.skew),
        });
        self.retry_held += grant.retry_units;
        self.retry_empty = grant.retry_empty;
        self.next_try_at = grant.next_at;
        self.factor = grant.factor;
        self.hosts_seen = grant.hosts_seen;
        self.failures = 0;
        self.rejoin_at = None;
        let was = self.mode();
        self.mode = Mode::Fleet;
        (was != FleetMode::Fleet).then_some(Transition::Rejoined)
    }

    /// The request lost every conditional write to other hosts: not a table failure
    /// (no degraded mode), ask again at `retry_at` with the reports kept.
    pub fn contended(&mut self, retry_at: Timestamp) {
        if let Some((throttled, refunds)) = self.in_flight.take() {
            self.throttled |= throttled;
            self.refunds = self.refunds.saturating_add(refunds);
        }
        self.next_try_at = Some(retry_at);
    }

    /// The request failed with `error` (already naming the table). Returns a transition
    /// if the key was in fleet mode.
    pub fn failed(&mut self, error: String, policy: &Policy, now: Timestamp) -> Option<Transition> {
        if let Some((throttled, refunds)) = self.in_flight.take() {
            self.throttled |= throttled;
            self.refunds = self.refunds.saturating_add(refunds);
        }
        self.failures = self.failures.saturating_add(1);
        let backoff = REJOIN_FIRST
            .saturating_mul(1 << self.failures.min(8).saturating_sub(1))
            .min(REJOIN_MAX);
        self.rejoin_at = Some(now + backoff);
        self.last_error = Some(error.clone());
        if self.mode() != FleetMode::Fleet {
            return None;
        }
        self.block = None;
        self.mode = match self.config.on_error {
            OnError::LocalShare => Mode::LocalShare(LocalShare::new(
                policy.rate_per_second(),
                self.factor,
                policy.burst(),
                self.hosts_seen,
                now,
            )),
            OnError::Stop => Mode::Stop,
        };
        Some(Transition::Degraded {
            mode: self.mode(),
            error,
        })
    }

    /// The mode now.
    pub fn mode(&self) -> FleetMode {
        match self.mode {
            Mode::Fleet => FleetMode::Fleet,
            Mode::LocalShare(_) => FleetMode::LocalShare,
            Mode::Stop => FleetMode::Stop,
        }
    }

    /// A read-only view for status output.
    pub fn view(&self) -> FleetView {
        FleetView {
            mode: self.mode(),
            block_left: self.block.map_or(0, |b| b.left),
            spend_until: self.block.map(|b| b.spend_until),
            retry_units_held: self.retry_held,
            factor: self.factor,
            hosts_seen: self.hosts_seen,
            local_share_rate: match &self.mode {
                Mode::LocalShare(s) => Some(s.rate()),
                _ => None,
            },
            last_error: self.last_error.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    fn policy() -> Policy {
        Policy::new(20.0, 5.0, 10, 4).unwrap()
    }

    fn grant(tokens: u64, expires_ms: u64) -> BlockGrant {
        BlockGrant {
            tokens,
            granted_at: ms(0),
            expires_at: ms(expires_ms),
            retry_units: 0,
            retry_empty: false,
            next_at: None,
            factor: 1.0,
            hosts_seen: 4,
            level: 0.0,
        }
    }

    fn ledger(on_error: OnError) -> HostLedger {
        HostLedger::new(
            "h".into(),
            FleetConfig {
                on_error,
                ..FleetConfig::default()
            },
        )
    }

    #[test]
    fn a_block_is_spent_until_its_expiry_less_the_skew() {
        let mut l = ledger(OnError::Stop);
        assert_eq!(l.gate(1, false, ms(0)), FleetGate::NeedBlock);
        assert!(l.wants_request(true, true, ms(0)));
        l.begin(1, 1, &policy(), ms(0));
        assert!(!l.wants_request(true, true, ms(0)), "one request at a time");
        l.granted(&grant(2, 3_000));
        assert_eq!(l.gate(1, false, ms(1_999)), FleetGate::Go);
        assert_eq!(
            l.gate(1, false, ms(2_000)),
            FleetGate::NeedBlock,
            "3 s − 1 s skew"
        );
        l.charge(1, false, ms(10));
        l.charge(1, false, ms(10));
        assert_eq!(l.gate(1, false, ms(20)), FleetGate::NeedBlock);
    }

    #[test]
    fn asking_for_a_block_voids_the_current_one() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        l.granted(&grant(5, 3_000));
        l.begin(1, 1, &policy(), ms(0));
        assert_eq!(l.gate(1, false, ms(0)), FleetGate::NeedBlock);
    }

    #[test]
    fn a_zero_grant_waits_for_the_promised_instant() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        let mut g = grant(0, 3_000);
        g.next_at = Some(ms(150));
        l.granted(&g);
        assert_eq!(l.gate(1, false, ms(100)), FleetGate::Wait(ms(150)));
        assert!(!l.wants_request(true, true, ms(100)));
        assert!(l.wants_request(true, true, ms(150)));
    }

    #[test]
    fn retries_stop_when_the_fleets_units_are_gone() {
        let mut l = ledger(OnError::Stop);
        let r = l.begin(1, 1, &policy(), ms(0));
        assert_eq!(r.retry_want, 2);
        let mut g = grant(5, 3_000);
        g.retry_units = 1;
        l.granted(&g);
        assert_eq!(l.gate(1, true, ms(0)), FleetGate::Go);
        l.charge(1, true, ms(0));
        assert_eq!(l.gate(1, true, ms(0)), FleetGate::NeedBlock);
        l.begin(1, 1, &policy(), ms(0));
        let mut g = grant(5, 3_000);
        g.retry_empty = true;
        l.granted(&g);
        assert_eq!(l.gate(1, true, ms(0)), FleetGate::RetryRefused);
        assert_eq!(
            l.gate(1, false, ms(0)),
            FleetGate::Go,
            "first attempts still go"
        );
    }

    #[test]
    fn a_failed_table_degrades_to_the_local_share_and_rejoins() {
        let mut l = ledger(OnError::LocalShare);
        l.begin(1, 1, &policy(), ms(0));
        l.granted(&grant(1, 3_000));
        l.feedback(true, true);
        l.begin(1, 1, &policy(), ms(0));
        let t = l.failed("table t: unreachable".into(), &policy(), ms(0));
        assert!(matches!(
            t,
            Some(Transition::Degraded {
                mode: FleetMode::LocalShare,
                ..
            })
        ));
        assert_eq!(l.view().local_share_rate, Some(5.0), "20/s over 4 hosts");
        assert_eq!(l.gate(1, false, ms(0)), FleetGate::Wait(ms(200)));
        assert!(!l.wants_request(true, true, ms(100)), "backoff");
        assert!(l.wants_request(false, true, ms(250)));
        let r = l.begin(1, 1, &policy(), ms(250));
        assert!(
            r.throttled && r.retry_refund == 1,
            "reports survive a failed request"
        );
        assert_eq!(
            l.failed("again".into(), &policy(), ms(250)),
            None,
            "no new transition"
        );
        l.begin(1, 1, &policy(), ms(800));
        assert_eq!(l.granted(&grant(2, 3_800)), Some(Transition::Rejoined));
        assert_eq!(l.mode(), FleetMode::Fleet);
    }

    #[test]
    fn stop_mode_refuses_with_the_reason() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        l.failed("table t: AccessDenied".into(), &policy(), ms(0));
        assert_eq!(
            l.gate(1, false, ms(0)),
            FleetGate::Stopped("table t: AccessDenied".into())
        );
    }
}
