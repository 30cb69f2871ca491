//! The host's side of a key's fleet admission: the block being spent, the request in
//! flight, the retry units held, and the mode (fleet, or degraded when the table fails).
//!
//! Pure bookkeeping in the manner of [`crate::LeaseLedger`]: the quota actor asks
//! [`HostLedger::gate`] before each grant, [`HostLedger::charge`]s grants, starts a
//! request when [`HostLedger::wants_request`] says so and reports its answer. Rules:
//! - a grant spends the next tokens in hand, in order, each only inside its window (on
//!   this host's clock); a token whose window passed unspent is dropped, never returned;
//! - a host asks for its next block before its tokens run out (prefetch), one request in
//!   flight at a time; the tokens in hand stay valid while it asks (they are future-dated
//!   on the item, nobody else can be handed them);
//! - a grant refused by the horizon says when to ask again: no request before then;
//! - a failed request degrades the key (local share or stop, [`super::OnError`]) and
//!   retries the table with a backoff; the first answer rejoins.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fleet::share::LocalShare;
use crate::fleet::sizing::{DemandMeter, SizeHints};
use crate::fleet::take::{BlockGrant, BlockRequest};
use crate::fleet::window::TokenRun;
use crate::fleet::{FleetConfig, HostId, OnError};
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
}

/// A granted run and how far it is spent.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Held {
    run: TokenRun,
    /// The next token to spend (tokens before it were spent or lapsed).
    next: u64,
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
    /// The runs in hand, oldest first (at most the current one and a prefetched one).
    held: VecDeque<Held>,
    in_flight: Option<(bool, u32)>,
    retry_held: u32,
    retry_empty: bool,
    throttled: bool,
    refunds: u32,
    next_try_at: Option<Timestamp>,
    demand: DemandMeter,
    /// The last block asked for, and whether a token lapsed unspent since.
    last_size: u64,
    lapsed: bool,
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
            held: VecDeque::new(),
            in_flight: None,
            retry_held: 0,
            retry_empty: false,
            throttled: false,
            refunds: 0,
            next_try_at: None,
            demand: DemandMeter::default(),
            last_size: 0,
            lapsed: false,
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
                match self.spendable_at(cost, now) {
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
        self.demand.record(cost as f64, now);
        match &mut self.mode {
            Mode::Fleet => {
                self.drop_lapsed(now);
                let mut cost = cost;
                while cost > 0 {
                    let Some(h) = self.held.front_mut() else {
                        break;
                    };
                    let spent = cost.min(h.run.count - h.next);
                    h.next += spent;
                    cost -= spent;
                    if h.next == h.run.count {
                        self.held.pop_front();
                    }
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
            Mode::Fleet => {
                (blocked || (active && self.running_low(now)))
                    && self.next_try_at.is_none_or(|at| at <= now)
            }
            _ => (blocked || active) && self.rejoin_at.is_none_or(|at| at <= now),
        }
    }

    /// True while a request is in flight.
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// The next instant the ledger itself may change its answer (a refused grant's instant to ask again, a
    /// rejoin attempt), if any.
    pub fn wake_at(&self, now: Timestamp) -> Option<Timestamp> {
        [self.next_try_at, self.rejoin_at]
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
        self.drop_lapsed(now);
        let hints = SizeHints {
            head,
            waiting,
            last: self.last_size,
            last_spent: !self.lapsed,
            rate: policy.rate_per_second() * self.factor,
            hosts: self.hosts_seen,
            refresh: self.config.refresh,
        };
        let wanted = self.demand.block_size(&hints, now);
        self.last_size = wanted;
        self.lapsed = false;
        let target = RETRY_BLOCK.min(policy.retry_capacity());
        let request = BlockRequest {
            host: self.host.clone(),
            wanted,
            rate: policy.rate_per_second(),
            burst: policy.burst(),
            retry_capacity: policy.retry_capacity(),
            throttled: self.throttled,
            retry_want: target.saturating_sub(self.retry_held),
            retry_refund: self.refunds,
            horizon: self.config.horizon(),
        };
        self.in_flight = Some((self.throttled, self.refunds));
        self.throttled = false;
        self.refunds = 0;
        request
    }

    /// The request's answer arrived. Returns a transition if the key was degraded.
    pub fn granted(&mut self, grant: &BlockGrant) -> Option<Transition> {
        self.in_flight = None;
        if grant.run.count > 0 {
            self.held.push_back(Held {
                run: grant.run,
                next: 0,
            });
        }
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
        self.held.clear();
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
            block_left: self.held.iter().map(|h| h.run.count - h.next).sum(),
            spend_until: self.held.back().map(|h| h.run.closes(h.run.count - 1)),
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

impl HostLedger {
    /// The unspent tokens in hand whose window has not passed at `now`, in order:
    /// (opens, closes) of each.
    fn tokens(&self, now: Timestamp) -> impl Iterator<Item = (Timestamp, Timestamp)> + '_ {
        self.held
            .iter()
            .flat_map(|h| (h.next..h.run.count).map(|j| (h.run.opens(j), h.run.closes(j))))
            .filter(move |(_, closes)| *closes >= now)
    }

    /// When the next `cost` tokens in hand are all spendable (`None`: not enough tokens).
    fn spendable_at(&self, cost: u64, now: Timestamp) -> Option<Timestamp> {
        let mut open = Timestamp::ZERO;
        let mut close = Timestamp::from_micros(u64::MAX);
        let mut n = 0;
        for (opens, closes) in self.tokens(now).take(cost.max(1) as usize) {
            open = open.max(opens);
            close = close.min(closes);
            n += 1;
        }
        if n < cost.max(1) {
            return None;
        }
        // Windows of tokens from two runs may not overlap: wait for the first to lapse.
        Some(if open <= close {
            open.max(now)
        } else {
            close + Duration::from_micros(1)
        })
    }

    /// Drop the tokens whose window passed unspent (they are lost, never returned).
    fn drop_lapsed(&mut self, now: Timestamp) {
        while let Some(h) = self.held.front_mut() {
            while h.next < h.run.count && h.run.closes(h.next) < now {
                h.next += 1;
                self.lapsed = true;
            }
            if h.next < h.run.count {
                break;
            }
            self.held.pop_front();
        }
    }

    /// Will the tokens in hand run out within [`PREFETCH`]? They last until the last one's
    /// window opens or until the host's demand has spent them, whichever is later.
    fn running_low(&self, now: Timestamp) -> bool {
        let (left, last_open) = self
            .tokens(now)
            .fold((0u64, now), |(n, _), (opens, _)| (n + 1, opens));
        if left == 0 {
            return true;
        }
        let demand = self.demand.rate_at(now);
        let spent_by = if demand > 0.0 {
            now + crate::time::secs_ceil(left as f64 / demand)
        } else {
            Timestamp::from_micros(u64::MAX)
        };
        last_open.max(spent_by) <= now + PREFETCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::window::SpendWindow;

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
        assert!(l.wants_request(true, true, ms(0)));
        l.begin(1, 1, &policy(), ms(0));
        assert!(!l.wants_request(true, true, ms(0)), "one request at a time");
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
            if asked_at.is_none() && l.wants_request(false, true, t) {
                asked_at = Some(j);
                assert!(!l.wants_request(false, false, t), "no waiter, no prefetch");
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
        assert!(!l.wants_request(true, true, ms(100)));
        assert!(l.wants_request(true, true, ms(150)));
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
}
