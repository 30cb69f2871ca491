//! The host's side of a key's fleet admission: the block being spent, the request in
//! flight, the retry units held, and the mode (fleet, or degraded when the table fails).
//!
//! Pure bookkeeping in the manner of [`crate::LeaseLedger`]: the quota actor asks
//! [`HostLedger::gate`] before each grant, [`HostLedger::charge`]s grants, starts a
//! request when [`HostLedger::wants_request`] says so and reports its answer. Rules:
//! - a grant spends the next tokens in hand, in order, each only inside its window (on
//!   this host's clock); a token whose window passed unspent is dropped, never returned
//!   (`hand`);
//! - a host asks for its next block before its tokens run out (prefetch), one request in
//!   flight at a time; the tokens in hand stay valid while it asks (they are future-dated
//!   on the item, nobody else can be handed them);
//! - a grant refused by the horizon says when to ask again: no request before then;
//! - a failed request degrades the key (local share or stop, [`super::OnError`]) and
//!   retries the table with a backoff; the first answer rejoins.
//!
//! Each mode carries its own data (`Mode`): only fleet mode holds tokens, only a
//! degraded key counts failures and waits to rejoin. What survives a degraded spell
//! (retry units held, reports not yet sent, the demand, the fleet as last seen) sits
//! beside the mode.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fleet::calendar::AllowanceSeen;
use crate::fleet::declaration::Declared;
use crate::fleet::hand::Hand;
use crate::fleet::share::LocalShare;
use crate::fleet::sizing::{DemandMeter, SizeHints};
use crate::fleet::take::{BlockGrant, BlockRequest, ItemSizing};
use crate::fleet::{FleetConfig, HostId, OnError};
use crate::penalty::Outcome;
use crate::policy::Policy;
use crate::time::Timestamp;

/// Retry units a host keeps on hand (drawn from the item in blocks of at most this).
pub const RETRY_BLOCK: u32 = 2;
/// The first retry of a failed table after this; doubling up to [`REJOIN_MAX`].
pub const REJOIN_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two attempts to rejoin the table.
pub const REJOIN_MAX: Duration = Duration::from_secs(5);
/// Ask for the next block when the tokens in hand will run out within this (at the
/// host's demand, or when the last one's window opens, whichever is later): a table
/// round trip with room to spare, so a busy host has no gap.
pub const PREFETCH: Duration = Duration::from_millis(250);

/// What the fleet says about one admission.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetGate {
    /// The current block (or the local share) covers it.
    Go,
    /// Not before this instant (a token's window opens, the local share refills, or a
    /// refused grant's instant to ask again).
    Wait(Timestamp),
    /// Tokens are needed: ask for a block if none is in flight, then wait for its answer.
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

/// How much the key's waiters need the table now: what [`HostLedger::wants_request`]
/// weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Nobody waits or asked the fleet gate: no request (a degraded key retries the
    /// table only while in use).
    Idle,
    /// Waiters are being served: fleet mode asks ahead when its tokens run low, a
    /// degraded key tries to rejoin.
    InUse,
    /// A waiter needs a block before it can go.
    NeedsBlock,
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
    /// Tokens in hand, unspent (fleet mode; some may lapse before they are spent).
    pub block_left: u64,
    /// The last token in hand may be spent until this instant (host clock).
    pub spend_until: Option<Timestamp>,
    pub retry_units_held: u32,
    /// The fleet factor last seen.
    pub factor: f64,
    /// Hosts seen on the item in the last minute (last read).
    pub hosts_seen: usize,
    /// The local share's rate (local-share mode).
    pub local_share_rate: Option<f64>,
    pub last_error: Option<String>,
    /// Hosts seen that declare another calendar for the key than this host (warned
    /// about once; the strictest is in force).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declarations_differ: Vec<HostId>,
}

/// How the key admits, with what each mode needs.
#[derive(Debug, Clone, PartialEq)]
enum Mode {
    /// Under blocks from the table.
    Fleet {
        /// The tokens in hand.
        hand: Hand,
        /// The last grant said the item's retry units are used up.
        retry_empty: bool,
    },
    /// The table failed.
    Degraded {
        /// What admits meanwhile.
        fallback: Fallback,
        /// Requests failed in a row (the rejoin backoff doubles with each).
        failures: u32,
        /// No attempt to rejoin before this instant.
        rejoin_at: Timestamp,
    },
}

/// What admits while the table fails ([`OnError`]).
#[derive(Debug, Clone, PartialEq)]
enum Fallback {
    LocalShare(LocalShare),
    Stop,
}

impl Mode {
    const FRESH: Mode = Mode::Fleet {
        hand: Hand::EMPTY,
        retry_empty: false,
    };
}

/// The attempts' outcomes a host reports with its next block request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Reports {
    /// A throttle since the last report: the fleet penalty.
    throttled: bool,
    /// Successes since the last report: each refunds a shared retry unit.
    refunds: u32,
}

impl Reports {
    /// Add `other`'s reports (a request that did not land keeps what it carried).
    fn merge(&mut self, other: Reports) {
        self.throttled |= other.throttled;
        self.refunds = self.refunds.saturating_add(other.refunds);
    }
}

/// How the next block is sized: the host's demand, and the last block asked for.
#[derive(Debug, Clone)]
struct Sizing {
    demand: DemandMeter,
    last_size: u64,
    /// A token lapsed unspent since the last request.
    lapsed: bool,
}

/// The host's bookkeeping for one key.
#[derive(Debug, Clone)]
pub struct HostLedger {
    host: HostId,
    config: FleetConfig,
    mode: Mode,
    /// Shared retry units drawn from the item, unspent (kept through a degraded spell).
    retry_held: u32,
    /// Reports for the next request.
    unsent: Reports,
    /// The request in flight, with the reports it carries.
    in_flight: Option<Reports>,
    /// A refused grant's (or a contended request's) instant to ask again.
    next_try_at: Option<Timestamp>,
    sizing: Sizing,
    /// The table's last error (kept after a rejoin, for status).
    last_error: Option<String>,
    /// The fleet factor and the hosts seen, as of the last grant.
    factor: f64,
    hosts_seen: usize,
    /// This host's calendar for the key, sent with every request.
    declared: Option<Declared>,
    /// The rate and burst in force on the item and its allowance, as of the last grant
    /// (degraded mode's local share divides them).
    fleet_policy: Option<(f64, f64)>,
    allowance: Option<AllowanceSeen>,
    /// The hosts last warned about for declaring a different calendar.
    warned: Vec<HostId>,
    /// How long the last block request took to be answered (sent with the next one, so
    /// its first tokens are placed to be open when the answer arrives).
    round_trip: Duration,
    /// A grant has brought tokens: later blocks are sized from the demand measured.
    granted_any: bool,
}

impl HostLedger {
    /// A ledger with no block: the first grant asks for one.
    pub fn new(host: HostId, config: FleetConfig) -> Self {
        HostLedger {
            host,
            config,
            mode: Mode::FRESH,
            retry_held: 0,
            unsent: Reports::default(),
            in_flight: None,
            next_try_at: None,
            sizing: Sizing {
                demand: DemandMeter::default(),
                last_size: 0,
                lapsed: false,
            },
            last_error: None,
            factor: 1.0,
            hosts_seen: 1,
            declared: None,
            fleet_policy: None,
            allowance: None,
            warned: Vec::new(),
            round_trip: Duration::ZERO,
            granted_any: false,
        }
    }

    /// Declare this host's calendar for the key (its base policy and schedule or
    /// allowance) with every request.
    pub fn declare(&mut self, declared: Declared) {
        self.declared = Some(declared);
    }

    /// May an admission of `cost` (a retry if `retry`) go now?
    pub fn gate(&self, cost: u64, retry: bool, now: Timestamp) -> FleetGate {
        match &self.mode {
            Mode::Degraded {
                fallback: Fallback::Stop,
                ..
            } => FleetGate::Stopped(self.last_error.clone().unwrap_or_default()),
            Mode::Degraded {
                fallback: Fallback::LocalShare(share),
                ..
            } => match share.ready_at(cost as f64, now) {
                None => FleetGate::Go,
                Some(at) => FleetGate::Wait(at),
            },
            Mode::Fleet { hand, retry_empty } => {
                if retry && self.retry_held == 0 {
                    return if *retry_empty && self.in_flight.is_none() {
                        FleetGate::RetryRefused
                    } else {
                        FleetGate::NeedBlock
                    };
                }
                match hand.spendable_at(cost, now) {
                    Some(at) if at <= now => FleetGate::Go,
                    Some(at) => FleetGate::Wait(at),
                    None => match self.next_try_at {
                        Some(at) if at > now && self.in_flight.is_none() => FleetGate::Wait(at),
                        _ => FleetGate::NeedBlock,
                    },
                }
            }
        }
    }

    /// Charge a granted admission.
    pub fn charge(&mut self, cost: u64, retry: bool, now: Timestamp) {
        self.sizing.demand.record(cost as f64, now);
        match &mut self.mode {
            Mode::Fleet { hand, .. } => {
                self.sizing.lapsed |= hand.drop_lapsed(now);
                hand.spend(cost);
                if retry {
                    self.retry_held = self.retry_held.saturating_sub(1);
                }
            }
            Mode::Degraded {
                fallback: Fallback::LocalShare(share),
                ..
            } => share.take(cost as f64, now),
            Mode::Degraded {
                fallback: Fallback::Stop,
                ..
            } => {}
        }
    }

    /// An attempt's outcome, reported with the next block: a throttle is the fleet
    /// penalty; a success refunds one shared retry unit; other outcomes say nothing to
    /// the fleet.
    pub fn feedback(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Throttled => self.unsent.throttled = true,
            Outcome::Success => self.unsent.refunds = self.unsent.refunds.saturating_add(1),
            Outcome::Transient | Outcome::Fatal => {}
        }
    }

    /// Should a request start now, with the key's waiters in `key_use`? One at a time;
    /// fleet mode asks when a waiter needs a block or, in use, when its tokens run low
    /// (not before a refused grant's instant); a degraded key tries to rejoin while in
    /// use, after its backoff.
    pub fn wants_request(&self, key_use: KeyUse, now: Timestamp) -> bool {
        if self.in_flight.is_some() {
            return false;
        }
        match &self.mode {
            Mode::Fleet { hand, .. } => {
                let wanted = match key_use {
                    KeyUse::NeedsBlock => true,
                    KeyUse::InUse => self.running_low(hand, now),
                    KeyUse::Idle => false,
                };
                wanted && self.next_try_at.is_none_or(|at| at <= now)
            }
            Mode::Degraded { rejoin_at, .. } => key_use != KeyUse::Idle && *rejoin_at <= now,
        }
    }

    /// True while a request is in flight.
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// The next instant the ledger itself may change its answer (a refused grant's instant to ask again, a
    /// rejoin attempt), if any.
    pub fn wake_at(&self, now: Timestamp) -> Option<Timestamp> {
        let rejoin_at = match &self.mode {
            Mode::Degraded { rejoin_at, .. } => Some(*rejoin_at),
            Mode::Fleet { .. } => None,
        };
        [self.next_try_at, rejoin_at]
            .into_iter()
            .flatten()
            .filter(|at| *at > now)
            .min()
    }

    /// Start a request. `head` is the head waiter's cost (1 if none), `waiting` the cost
    /// queued. The tokens in hand stay valid.
    pub fn begin(
        &mut self,
        head: u64,
        waiting: u64,
        policy: &Policy,
        now: Timestamp,
    ) -> BlockRequest {
        if let Mode::Fleet { hand, .. } = &mut self.mode {
            self.sizing.lapsed |= hand.drop_lapsed(now);
        }
        let hints = SizeHints {
            head,
            waiting,
            last: self.sizing.last_size,
            last_spent: !self.sizing.lapsed,
            rate: policy.rate_per_second() * self.factor,
            hosts: self.hosts_seen,
            refresh: self.config.refresh_for(self.hosts_seen),
            cap: self.config.block_cap_for(self.hosts_seen),
        };
        let wanted = self.sizing.demand.block_size(&hints, now);
        self.sizing.last_size = wanted;
        self.sizing.lapsed = false;
        let target = RETRY_BLOCK.min(policy.retry_capacity());
        let reports = std::mem::take(&mut self.unsent);
        let request = BlockRequest {
            host: self.host.clone(),
            wanted,
            rate: policy.rate_per_second(),
            // The admission burst: the fleet's spend windows allow for arrival jitter too.
            burst: policy.admission_burst(),
            retry_capacity: policy.retry_capacity(),
            throttled: reports.throttled,
            retry_want: target.saturating_sub(self.retry_held),
            retry_refund: reports.refunds,
            horizon: self.config.horizon_for(self.hosts_seen),
            round_trip: self.round_trip,
            declared: self.declared.clone(),
            item_sizing: Some(ItemSizing {
                config: self.config,
                first: !self.granted_any,
            }),
        };
        self.in_flight = Some(reports);
        request
    }

    /// The last block request took `took` from its start to its answer (reads, writes
    /// and lost writes included; at most [`ROUND_TRIP_MAX`] is kept).
    pub fn answered_after(&mut self, took: Duration) {
        self.round_trip = took.min(ROUND_TRIP_MAX);
    }

    /// The request's answer arrived. Returns a transition if the key was degraded.
    pub fn granted(&mut self, grant: &BlockGrant) -> Option<Transition> {
        self.in_flight = None;
        self.retry_held += grant.retry_units;
        self.next_try_at = grant.next_at;
        self.factor = grant.factor;
        self.hosts_seen = grant.hosts_seen;
        self.fleet_policy = Some((grant.rate, grant.burst));
        if grant.allowance.is_some() || grant.run.count > 0 {
            self.allowance = grant.allowance.clone();
        }
        if grant.run.count > 0 {
            // A first block is sized by the write (`first_block_sized`): the next may
            // double from what came, not from what was asked.
            self.granted_any = true;
            self.sizing.last_size = self.sizing.last_size.max(grant.run.count);
        }
        let was = self.mode();
        let mut hand = match std::mem::replace(&mut self.mode, Mode::FRESH) {
            Mode::Fleet { hand, .. } => hand,
            Mode::Degraded { .. } => Hand::EMPTY,
        };
        hand.push(grant.run);
        self.mode = Mode::Fleet {
            hand,
            retry_empty: grant.retry_empty,
        };
        (was != FleetMode::Fleet).then_some(Transition::Rejoined)
    }

    /// The request lost every conditional write to other hosts: not a table failure
    /// (no degraded mode), ask again at `retry_at` with the reports kept.
    pub fn contended(&mut self, retry_at: Timestamp) {
        if let Some(carried) = self.in_flight.take() {
            self.unsent.merge(carried);
        }
        self.next_try_at = Some(retry_at);
    }

    /// The request failed with `error` (already naming the table). Returns a transition
    /// if the key was in fleet mode.
    pub fn failed(&mut self, error: String, policy: &Policy, now: Timestamp) -> Option<Transition> {
        if let Some(carried) = self.in_flight.take() {
            self.unsent.merge(carried);
        }
        self.last_error = Some(error.clone());
        if let Mode::Degraded {
            failures,
            rejoin_at,
            ..
        } = &mut self.mode
        {
            *failures = failures.saturating_add(1);
            *rejoin_at = now + rejoin_backoff(*failures);
            return None;
        }
        let (rate, burst) = match self.fleet_policy {
            Some((rate, burst)) => (
                rate.min(policy.rate_per_second()),
                burst.min(policy.admission_burst()),
            ),
            None => (policy.rate_per_second(), policy.admission_burst()),
        };
        let fallback = match self.config.on_error {
            OnError::LocalShare => Fallback::LocalShare(
                LocalShare::new(rate, self.factor, burst, self.hosts_seen, now)
                    .with_allowance(self.allowance.clone()),
            ),
            OnError::Stop => Fallback::Stop,
        };
        self.mode = Mode::Degraded {
            fallback,
            failures: 1,
            rejoin_at: now + rejoin_backoff(1),
        };
        Some(Transition::Degraded {
            mode: self.mode(),
            error,
        })
    }

    /// The hosts to warn about after a grant: those seen that declare a calendar other
    /// than this host's, when they differ from the last warning's (`None`: nothing new
    /// to say). One warning per change, not per block.
    pub fn disagreement(&mut self, grant: &BlockGrant) -> Option<Vec<HostId>> {
        if grant.disagreeing == self.warned {
            return None;
        }
        self.warned = grant.disagreeing.clone();
        (!self.warned.is_empty()).then(|| self.warned.clone())
    }

    /// The mode now.
    pub fn mode(&self) -> FleetMode {
        match &self.mode {
            Mode::Fleet { .. } => FleetMode::Fleet,
            Mode::Degraded {
                fallback: Fallback::LocalShare(_),
                ..
            } => FleetMode::LocalShare,
            Mode::Degraded {
                fallback: Fallback::Stop,
                ..
            } => FleetMode::Stop,
        }
    }

    /// A read-only view for status output.
    pub fn view(&self) -> FleetView {
        let (block_left, spend_until, local_share_rate) = match &self.mode {
            Mode::Fleet { hand, .. } => (hand.left(), hand.spend_until(), None),
            Mode::Degraded { fallback, .. } => {
                let rate = match fallback {
                    Fallback::LocalShare(s) => Some(s.rate()),
                    Fallback::Stop => None,
                };
                (0, None, rate)
            }
        };
        FleetView {
            mode: self.mode(),
            block_left,
            spend_until,
            retry_units_held: self.retry_held,
            factor: self.factor,
            hosts_seen: self.hosts_seen,
            local_share_rate,
            last_error: self.last_error.clone(),
            declarations_differ: self.warned.clone(),
        }
    }

    /// Will the tokens in `hand` run out within [`PREFETCH`]? They last until the last
    /// one's window opens or until the host's demand has spent them, whichever is later.
    fn running_low(&self, hand: &Hand, now: Timestamp) -> bool {
        let (left, last_open) = hand
            .tokens(now)
            .fold((0u64, now), |(n, _), (opens, _)| (n + 1, opens));
        if left == 0 {
            return true;
        }
        let demand = self.sizing.demand.rate_at(now);
        let spent_by = if demand > 0.0 {
            now + crate::time::secs_ceil(left as f64 / demand)
        } else {
            Timestamp::from_micros(u64::MAX)
        };
        last_open.max(spent_by) <= now + PREFETCH
    }
}

/// The longest round trip a block request's placement allows for: beyond it the lead
/// would push first tokens toward the horizon.
pub const ROUND_TRIP_MAX: Duration = Duration::from_millis(500);

/// How long a degraded key waits before its next attempt to rejoin, after `failures`
/// failed requests in a row: [`REJOIN_FIRST`], doubling, at most [`REJOIN_MAX`].
fn rejoin_backoff(failures: u32) -> Duration {
    REJOIN_FIRST
        .saturating_mul(1 << failures.min(8).saturating_sub(1))
        .min(REJOIN_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::window::{SpendWindow, TokenRun};

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    fn policy() -> Policy {
        Policy::new(20.0, 5.0, 10, 4).unwrap()
    }

    /// `count` tokens at 20/s burst 5, the first due at `first_ms`: token j may be spent
    /// in [first + 50·j − 250, first + 50·j − 50] ms.
    fn grant(count: u64, first_ms: u64) -> BlockGrant {
        BlockGrant {
            run: TokenRun {
                first_due: ms(first_ms),
                spacing: Duration::from_millis(50),
                count,
                window: SpendWindow::for_policy(20.0, 5.0),
            },
            written_at: ms(0),
            retry_units: 0,
            retry_empty: false,
            next_at: None,
            factor: 1.0,
            hosts_seen: 4,
            tat: ms(first_ms + 50 * count.saturating_sub(1)),
            rate: 20.0,
            burst: 5.0,
            allowance: None,
            disagreeing: Vec::new(),
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
    fn tokens_are_spent_in_order_each_inside_its_window() {
        let mut l = ledger(OnError::Stop);
        assert_eq!(l.gate(1, false, ms(0)), FleetGate::NeedBlock);
        assert!(l.wants_request(KeyUse::NeedsBlock, ms(0)));
        l.begin(1, 1, &policy(), ms(0));
        assert!(
            !l.wants_request(KeyUse::NeedsBlock, ms(0)),
            "one request at a time"
        );
        l.granted(&grant(3, 400));
        // Token 0: [150, 350]; token 1: [200, 400]; token 2: [250, 450].
        assert_eq!(l.gate(1, false, ms(100)), FleetGate::Wait(ms(150)));
        assert_eq!(l.gate(1, false, ms(150)), FleetGate::Go);
        l.charge(1, false, ms(150));
        assert_eq!(l.gate(1, false, ms(150)), FleetGate::Wait(ms(200)));
        assert_eq!(l.gate(2, false, ms(200)), FleetGate::Wait(ms(250)));
        l.charge(2, false, ms(250));
        assert_eq!(l.gate(1, false, ms(250)), FleetGate::NeedBlock);
    }

    #[test]
    fn a_token_whose_window_passed_is_dropped_not_kept() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        l.granted(&grant(3, 400));
        // At 420 ms tokens 0 and 1 have lapsed; token 2 closes at 450.
        assert_eq!(l.gate(1, false, ms(420)), FleetGate::Go);
        l.charge(1, false, ms(420));
        assert_eq!(l.view().block_left, 0);
        assert_eq!(l.gate(1, false, ms(420)), FleetGate::NeedBlock);
        // A lapse means demand, not a fast-spending host: no doubling.
        let r = l.begin(1, 1, &policy(), ms(420));
        assert!(r.wanted <= 2, "{}", r.wanted);
    }

    #[test]
    fn a_busy_host_asks_for_its_next_block_before_its_tokens_run_out() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        l.granted(&grant(40, 500)); // token j opens at 250 + 50·j ms
        let mut asked_at = None;
        for j in 0..40 {
            let t = ms(250 + 50 * j);
            assert_eq!(l.gate(1, false, t), FleetGate::Go);
            l.charge(1, false, t);
            if asked_at.is_none() && l.wants_request(KeyUse::InUse, t) {
                asked_at = Some(j);
                assert!(!l.wants_request(KeyUse::Idle, t), "no waiter, no prefetch");
            }
        }
        let j = asked_at.expect("asked before the last token");
        assert!((30..39).contains(&j), "asked after token {j}");
    }

    #[test]
    fn a_refused_grant_waits_for_the_instant_it_names() {
        let mut l = ledger(OnError::Stop);
        l.begin(1, 1, &policy(), ms(0));
        let mut g = grant(0, 3_000);
        g.next_at = Some(ms(150));
        l.granted(&g);
        assert_eq!(l.gate(1, false, ms(100)), FleetGate::Wait(ms(150)));
        assert!(!l.wants_request(KeyUse::NeedsBlock, ms(100)));
        assert!(l.wants_request(KeyUse::NeedsBlock, ms(150)));
    }

    #[test]
    fn retries_stop_when_the_fleets_units_are_gone() {
        let mut l = ledger(OnError::Stop);
        let r = l.begin(1, 1, &policy(), ms(0));
        assert_eq!(r.retry_want, 2);
        let mut g = grant(5, 200);
        g.retry_units = 1;
        l.granted(&g);
        assert_eq!(l.gate(1, true, ms(0)), FleetGate::Go);
        l.charge(1, true, ms(0));
        assert_eq!(l.gate(1, true, ms(0)), FleetGate::NeedBlock);
        l.begin(1, 1, &policy(), ms(0));
        let mut g = grant(5, 400);
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
        l.granted(&grant(1, 200));
        l.feedback(Outcome::Throttled);
        l.feedback(Outcome::Success);
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
        assert!(!l.wants_request(KeyUse::NeedsBlock, ms(100)), "backoff");
        assert!(l.wants_request(KeyUse::InUse, ms(250)));
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
        assert_eq!(l.granted(&grant(2, 1_000)), Some(Transition::Rejoined));
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

    #[test]
    fn each_mode_asks_the_table_when_its_waiters_need_it() {
        use KeyUse::*;
        // A fleet key with no tokens (running low), one with plenty, one told to wait
        // until 150 ms, one with a request in flight, a degraded key backing off until
        // 250 ms.
        let empty = ledger(OnError::Stop);
        let mut stocked = ledger(OnError::Stop);
        stocked.begin(1, 1, &policy(), ms(0));
        stocked.granted(&grant(40, 2_000));
        let mut refused = ledger(OnError::Stop);
        refused.begin(1, 1, &policy(), ms(0));
        let mut g = grant(0, 3_000);
        g.next_at = Some(ms(150));
        refused.granted(&g);
        let mut asking = ledger(OnError::Stop);
        asking.begin(1, 1, &policy(), ms(0));
        let mut degraded = ledger(OnError::LocalShare);
        degraded.begin(1, 1, &policy(), ms(0));
        degraded.failed("table t: unreachable".into(), &policy(), ms(0));
        // (case, ledger, key use, at, wants a request)
        let table: &[(&str, &HostLedger, KeyUse, u64, bool)] = &[
            ("an idle key never asks", &empty, Idle, 0, false),
            ("a key in use with no tokens asks", &empty, InUse, 0, true),
            ("a blocked waiter asks", &empty, NeedsBlock, 0, true),
            ("plenty in hand: no prefetch", &stocked, InUse, 0, false),
            (
                "plenty in hand, but a waiter is blocked",
                &stocked,
                NeedsBlock,
                0,
                true,
            ),
            (
                "a refused grant waits for its instant",
                &refused,
                NeedsBlock,
                100,
                false,
            ),
            ("and asks at it", &refused, NeedsBlock, 150, true),
            ("one request at a time", &asking, NeedsBlock, 0, false),
            (
                "a degraded key backs off",
                &degraded,
                NeedsBlock,
                100,
                false,
            ),
            (
                "a degraded key in use rejoins after its backoff",
                &degraded,
                InUse,
                250,
                true,
            ),
            (
                "a degraded key rejoins only while in use",
                &degraded,
                Idle,
                250,
                false,
            ),
        ];
        for (case, l, key_use, at, wants) in table {
            assert_eq!(l.wants_request(*key_use, ms(*at)), *wants, "{case}");
        }
    }

    #[test]
    fn only_throttles_and_successes_are_reported_to_the_fleet() {
        // (outcome, the next request reports a throttle, its refunds)
        let table = [
            (Outcome::Throttled, true, 0),
            (Outcome::Success, false, 1),
            (Outcome::Transient, false, 0),
            (Outcome::Fatal, false, 0),
        ];
        for (outcome, throttled, refunds) in table {
            let mut l = ledger(OnError::Stop);
            l.feedback(outcome);
            let r = l.begin(1, 1, &policy(), ms(0));
            assert_eq!(
                (r.throttled, r.retry_refund),
                (throttled, refunds),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn a_contended_request_keeps_its_reports_for_the_next() {
        let mut l = ledger(OnError::Stop);
        l.feedback(Outcome::Throttled);
        l.feedback(Outcome::Success);
        l.begin(1, 1, &policy(), ms(0));
        l.feedback(Outcome::Success);
        l.contended(ms(20));
        assert_eq!(l.mode(), FleetMode::Fleet, "contention is not a failure");
        assert_eq!(l.wake_at(ms(0)), Some(ms(20)));
        let r = l.begin(1, 1, &policy(), ms(20));
        assert!(r.throttled);
        assert_eq!(r.retry_refund, 2);
    }

    #[test]
    fn hosts_that_declare_another_calendar_are_warned_about_once_per_change() {
        let mut l = ledger(OnError::Stop);
        let with = |hosts: &[&str]| {
            let mut g = grant(1, 200);
            g.disagreeing = hosts.iter().map(|h| h.to_string()).collect();
            g
        };
        // (case, the grant's disagreeing hosts, the warning)
        type Case<'a> = (&'a str, &'a [&'a str], Option<&'a [&'a str]>);
        let table: &[Case] = &[
            ("all agree: nothing to say", &[], None),
            ("host b differs: warn naming it", &["b"], Some(&["b"])),
            ("the same again: no second warning", &["b"], None),
            (
                "c joins b: warn naming both",
                &["b", "c"],
                Some(&["b", "c"]),
            ),
            ("they agree again: nothing, and view clears", &[], None),
            ("b differs again: warned anew", &["b"], Some(&["b"])),
        ];
        for (case, hosts, warning) in table {
            let got = l.disagreement(&with(hosts));
            let want = warning.map(|w| w.iter().map(|h| h.to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{case}");
            assert_eq!(l.view().declarations_differ.len(), hosts.len(), "{case}");
        }
    }

    #[test]
    fn the_refresh_grows_with_the_hosts_seen_beyond_four_and_blocks_stay_near_a_share() {
        let c = FleetConfig::default();
        // (hosts seen, refresh ms, horizon ms, block cap ms of the fleet rate)
        let table = [
            (1, 1_000, 2_000, 1_000),
            (4, 1_000, 2_000, 1_000),
            (8, 2_828, 5_656, 1_000),
            (16, 8_000, 16_000, 1_000),
            (64, 64_000, 128_000, 2_000),
        ];
        for (hosts, refresh, horizon, cap) in table {
            let ms = |d: Duration| d.as_millis() as u64;
            assert_eq!(ms(c.refresh_for(hosts)), refresh, "{hosts} hosts");
            assert_eq!(ms(c.horizon_for(hosts)), horizon, "{hosts} hosts");
            assert_eq!(ms(c.block_cap_for(hosts)), cap, "{hosts} hosts");
        }
    }

    #[test]
    fn the_rejoin_backoff_doubles_up_to_its_cap() {
        let table = [
            (1, 250),
            (2, 500),
            (3, 1_000),
            (4, 2_000),
            (5, 4_000),
            (6, 5_000),
        ];
        for (failures, wait_ms) in table {
            assert_eq!(
                rejoin_backoff(failures),
                Duration::from_millis(wait_ms),
                "{failures}"
            );
        }
        let mut l = ledger(OnError::Stop);
        for (at, rejoin_at) in [(0, 250), (250, 750), (750, 1_750)] {
            l.begin(1, 1, &policy(), ms(at));
            l.failed("table t: unreachable".into(), &policy(), ms(at));
            assert_eq!(l.wake_at(ms(at)), Some(ms(rejoin_at)));
        }
    }
}
