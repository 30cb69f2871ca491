//! Failure feedback: the AIMD penalty on the refill rate, the shared cooldown, and the
//! rate the server showed it cannot sustain.
//!
//! A throttle or retryable transient failure halves the effective refill rate (down to
//! 1/32 of the configured rate) and starts a cooldown of 500 ms that doubles per
//! consecutive failure up to 8 s, during which nothing on the key starts. This is the
//! multiplicative decrease.
//!
//! Recovery has two speeds, because seed 000's rule alone (one step back per success
//! admitted after the latest failure) oscillates against a server whose quota is below
//! the policy: it returns to the rate that was just throttled within a few requests, is
//! throttled again, and so on for the whole scan (the fleet benchmark measured it). So the
//! key also remembers the rate at which the latest failure happened, the **ceiling**:
//! - *fast*: each success admitted after the latest failure doubles the rate (one penalty
//!   step off, as seed 000), but only up to 7/8 of the ceiling ([`HEADROOM`]);
//! - *probing*: at that cap, the ceiling rises by 5% of the configured rate at most once
//!   per 5 s without a failure (seed 001's additive increase: [`PROBE_STEP`],
//!   again; once the cap reaches the configured rate the ceiling is forgotten. A throttle
//!   of a key back at its cap confirms the ceiling, so the probe interval doubles (up to
//!   [`MAX_PROBE_INTERVAL`]): a server quota that really is below the policy is probed
//!   ever more rarely instead of being throttled into every 10 s.
//!
//! A key throttled at its full policy rate therefore runs at 7/8 of it at once and is back
//! to the full rate about 20 s after its last failure; a key whose server sustains only
//! 70% of the policy settles just below 70% instead of alternating between 50% and 100%.
//!
//! Only a success *admitted after* the latest failure counts: an old request that was in
//! flight when the failure was seen proves nothing about the server's current state.
//! Failures "within one short interval count as one event": a failure reported for an
//! attempt admitted before the latest recorded failure was in flight at the same time, so
//! it is the same event and does not deepen the penalty. Because the cooldown blocks new
//! starts for at least 500 ms after a failure, that interval is the cooldown itself.
//!
//! The ceiling is the rate at which a run of throttles started (the first throttle after
//! a success): the throttles of a storm that follow, every attempt refused whatever the
//! rate, would otherwise sink it to 1/32.
//!
//! Only throttles teach the ceiling. A transient failure (5xx, timeout) halves the rate
//! and starts the cooldown like a throttle, but neither sets nor confirms a ceiling: it
//! says the service is failing, not what rate it sustains. A ceiling learned from the
//! 503s of a 90-second outage would hold the key near 1/32 of its rate after the
//! recovery, climbing 5% per probe interval (the outage bench measured minutes of it);
//! without one, the successes after the recovery double the rate back to full.
//!
//! The rate factor is fixed-point ([`FULL`] = the configured rate), so the state stays
//! exactly comparable and serialises without rounding.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Deepest penalty: the effective rate never drops below `rate / 2^MAX_PENALTY_STEPS`.
pub const MAX_PENALTY_STEPS: u8 = 5;
/// Cooldown after the first failure of a run.
pub const INITIAL_COOLDOWN: Duration = Duration::from_millis(500);
/// Longest cooldown.
pub const MAX_COOLDOWN: Duration = Duration::from_secs(8);
/// Most doublings of the probe interval (5 s · 2^4 = 80 s).
const MAX_PROBE_BACKOFF: u8 = 4;
/// The rate factor of an unpenalised key (fixed point: 4096 = the configured rate).
pub const FULL: u32 = 4096;
/// The lowest rate factor: 1/32 of the configured rate.
pub const FLOOR: u32 = FULL >> MAX_PENALTY_STEPS;
/// Fast recovery stops at this fraction of the learned ceiling (in eighths: 7/8).
pub const HEADROOM: f64 = 0.875;
/// How much the ceiling rises per probe: 5% of the configured rate.
pub const PROBE_STEP: u32 = FULL / 20;
/// Shortest time between two probes (and from a failure to the first probe).
pub const PROBE_INTERVAL: Duration = Duration::from_secs(5);
/// Longest time between two probes, after repeated confirmations of the ceiling.
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(80);

/// What an attempt's outcome tells the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The server answered; not a capacity signal.
    Success,
    /// The server asked us to slow down.
    Throttled,
    /// A retryable failure (5xx, timeout, reset): treated as pressure too.
    Transient,
    /// A non-retryable answer (access denied, validation): no capacity signal.
    Fatal,
}

/// Rate factor, learned ceiling, consecutive failures and cooldown of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "PenaltyRecord", into = "PenaltyRecord")]
pub struct Penalty {
    factor: u32,
    ceiling: Option<u32>,
    last_probe_at: Option<Timestamp>,
    /// Doublings of the probe interval (failures that confirmed a known ceiling).
    probe_backoff: u8,
    consecutive_failures: u32,
    cooldown_until: Option<Timestamp>,
    last_failure_at: Option<Timestamp>,
}

impl Default for Penalty {
    fn default() -> Self {
        Penalty {
            factor: FULL,
            ceiling: None,
            last_probe_at: None,
            probe_backoff: 0,
            consecutive_failures: 0,
            cooldown_until: None,
            last_failure_at: None,
        }
    }
}

/// The stored form: `steps` is kept beside `factor` so that records written before the
/// factor existed still load (their penalty is `FULL >> steps`).
#[derive(Serialize, Deserialize)]
struct PenaltyRecord {
    #[serde(default)]
    steps: u8,
    #[serde(default)]
    factor: Option<u32>,
    #[serde(default)]
    ceiling: Option<u32>,
    #[serde(default)]
    last_probe_at: Option<Timestamp>,
    #[serde(default)]
    probe_backoff: u8,
    #[serde(default)]
    consecutive_failures: u32,
    #[serde(default)]
    cooldown_until: Option<Timestamp>,
    #[serde(default)]
    last_failure_at: Option<Timestamp>,
}

impl From<PenaltyRecord> for Penalty {
    fn from(r: PenaltyRecord) -> Penalty {
        let factor = r
            .factor
            .unwrap_or(FULL >> r.steps.min(MAX_PENALTY_STEPS))
            .clamp(FLOOR, FULL);
        Penalty {
            factor,
            ceiling: r.ceiling.map(|c| c.max(FLOOR)),
            last_probe_at: r.last_probe_at,
            probe_backoff: r.probe_backoff.min(MAX_PROBE_BACKOFF),
            consecutive_failures: r.consecutive_failures,
            cooldown_until: r.cooldown_until,
            last_failure_at: r.last_failure_at,
        }
    }
}

impl From<Penalty> for PenaltyRecord {
    fn from(p: Penalty) -> PenaltyRecord {
        PenaltyRecord {
            steps: p.steps(),
            factor: Some(p.factor),
            ceiling: p.ceiling,
            last_probe_at: p.last_probe_at,
            probe_backoff: p.probe_backoff,
            consecutive_failures: p.consecutive_failures,
            cooldown_until: p.cooldown_until,
            last_failure_at: p.last_failure_at,
        }
    }
}

impl Penalty {
    /// The refill rate after the penalty.
    pub fn effective_rate(&self, configured_rate: f64) -> f64 {
        configured_rate * f64::from(self.factor) / f64::from(FULL)
    }

    /// Halvings currently applied, rounded to the nearest whole step (0 = none or less
    /// than half a step; the probing phase sits between whole steps).
    pub fn steps(&self) -> u8 {
        let halvings = (f64::from(FULL) / f64::from(self.factor)).log2();
        (halvings.round() as u8).min(MAX_PENALTY_STEPS)
    }

    /// The effective rate as a fraction of the configured one (1.0 = no penalty).
    pub fn rate_fraction(&self) -> f64 {
        f64::from(self.factor) / f64::from(FULL)
    }

    /// The learned ceiling as a fraction of the configured rate: the rate at which the
    /// latest failure happened, raised by probing; `None` once fully recovered.
    pub fn ceiling_fraction(&self) -> Option<f64> {
        self.ceiling.map(|c| f64::from(c) / f64::from(FULL))
    }

    /// Whether the key runs at its full configured rate with no cooldown or ceiling.
    pub fn is_clear(&self) -> bool {
        self.factor == FULL && self.ceiling.is_none() && self.cooldown_until.is_none()
    }

    /// End of the current cooldown, if one is running at `now`.
    pub fn cooldown_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.cooldown_until.filter(|until| *until > now)
    }

    /// When the latest failure event was recorded.
    pub fn last_failure_at(&self) -> Option<Timestamp> {
        self.last_failure_at
    }

    /// Cooldown for the `n`th consecutive failure (n ≥ 1).
    pub fn cooldown_for(n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(16);
        INITIAL_COOLDOWN
            .saturating_mul(1u32 << doublings)
            .min(MAX_COOLDOWN)
    }

    /// Current time between probes.
    pub fn probe_interval(&self) -> Duration {
        PROBE_INTERVAL
            .saturating_mul(1u32 << self.probe_backoff)
            .min(MAX_PROBE_INTERVAL)
    }

    /// Where fast recovery stops: 7/8 of the ceiling (never below the floor, never above
    /// the configured rate).
    fn recovery_cap(&self) -> u32 {
        match self.ceiling {
            None => FULL,
            Some(c) => ((f64::from(c) * HEADROOM) as u32).clamp(FLOOR, FULL),
        }
    }

    /// Apply an attempt's outcome, reported at `now`, for an attempt admitted at
    /// `admitted_at`. Returns true if the state changed.
    pub fn observe(&mut self, outcome: Outcome, admitted_at: Timestamp, now: Timestamp) -> bool {
        // Strictly after: the failure starts a cooldown, so nothing is admitted at the
        // instant it is recorded; an attempt admitted at that very instant was admitted
        // before it (with instant answers, as in simulations, the instants coincide).
        let after_latest_failure = self.last_failure_at.is_none_or(|at| admitted_at > at);
        match outcome {
            Outcome::Throttled | Outcome::Transient => {
                if !after_latest_failure {
                    return false; // same event as the latest failure
                }
                // Only a throttle says what rate the server sustains; a 5xx says the
                // service is failing, and a ceiling learned during an outage would keep
                // the key at a fraction of its rate long after the recovery.
                // The ceiling is the rate at which a run of failures started: the first
                // throttle after a success. The throttles of a storm that follow it (every
                // attempt refused whatever the rate, one after the other) say nothing
                // about the rate the server sustains: letting each of them set the
                // ceiling sank it to 1/32 and left the key creeping back 5% per probe
                // for minutes after the storm (the outage bench measured it). A throttle
                // of a key back at its cap confirms the ceiling and slows the probing.
                if outcome == Outcome::Throttled && self.consecutive_failures == 0 {
                    if self.ceiling.is_some() && self.factor >= self.recovery_cap() {
                        self.probe_backoff = (self.probe_backoff + 1).min(MAX_PROBE_BACKOFF);
                    }
                    self.ceiling = Some(self.factor);
                    self.last_probe_at = Some(now);
                }
                self.factor = (self.factor / 2).max(FLOOR);
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.cooldown_until = Some(now + Self::cooldown_for(self.consecutive_failures));
                self.last_failure_at = Some(now);
                true
            }
            Outcome::Success => {
                if !after_latest_failure || self.is_clear() {
                    return false;
                }
                let before = *self;
                self.consecutive_failures = 0;
                self.cooldown_until = None;
                let cap = self.recovery_cap();
                if self.factor < cap {
                    self.factor = (self.factor * 2).min(cap);
                } else if self
                    .last_probe_at
                    .is_none_or(|at| now >= at + self.probe_interval())
                {
                    self.last_probe_at = Some(now);
                    self.ceiling = self.ceiling.map(|c| c + PROBE_STEP);
                    let cap = self.recovery_cap();
                    if cap >= FULL {
                        self.ceiling = None;
                        self.probe_backoff = 0;
                    }
                    self.factor = self.factor.max(cap);
                }
                *self != before
            }
            Outcome::Fatal => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn cooldown_doubles_to_eight_seconds() {
        let got: Vec<u64> = (1..=7)
            .map(|n| Penalty::cooldown_for(n).as_millis() as u64)
            .collect();
        assert_eq!(got, [500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    }

    #[test]
    fn halves_down_to_one_thirty_second() {
        let mut p = Penalty::default();
        for i in 0..10u64 {
            // each failure is from an attempt admitted after the previous one
            p.observe(Outcome::Throttled, ms(i * 10_000), ms(i * 10_000 + 1));
        }
        assert_eq!(p.steps(), MAX_PENALTY_STEPS);
        assert_eq!(p.effective_rate(32.0), 1.0);
    }

    #[test]
    fn concurrent_failures_count_once() {
        let mut p = Penalty::default();
        assert!(p.observe(Outcome::Throttled, ms(0), ms(10)));
        assert!(!p.observe(Outcome::Throttled, ms(5), ms(12)));
        assert_eq!(p.steps(), 1);
        assert_eq!(p.cooldown_until(ms(12)), Some(ms(510)));
    }

    /// Regression: two attempts admitted at one instant and answered "throttled" at that
    /// same instant (zero transport time) counted as two failure events, deepening the
    /// penalty twice and doubling the cooldown (seed 000's sustained-throttling fixture).
    #[test]
    fn failures_of_attempts_admitted_at_the_failure_instant_count_once() {
        let mut p = Penalty::default();
        assert!(p.observe(Outcome::Throttled, ms(0), ms(0)));
        assert!(!p.observe(Outcome::Throttled, ms(0), ms(0)));
        assert_eq!(p.steps(), 1);
        assert_eq!(p.cooldown_until(ms(0)), Some(ms(500)));
        // nor does a success admitted at that instant clear the failure
        assert!(!p.observe(Outcome::Success, ms(0), ms(0)));
        assert_eq!(p.steps(), 1);
    }

    #[test]
    fn only_a_success_admitted_after_the_failure_recovers() {
        let mut p = Penalty::default();
        p.observe(Outcome::Throttled, ms(0), ms(100));
        // in flight before the failure was seen: clears nothing
        assert!(!p.observe(Outcome::Success, ms(50), ms(120)));
        assert_eq!(p.steps(), 1);
        assert!(p.cooldown_until(ms(120)).is_some());
        // admitted after: one step off, cooldown cleared
        assert!(p.observe(Outcome::Success, ms(700), ms(720)));
        assert_eq!(p.steps(), 0);
        assert_eq!(p.cooldown_until(ms(720)), None);
    }

    #[test]
    fn recovery_stops_below_the_learned_ceiling_then_probes_back_to_full() {
        let mut p = Penalty::default();
        p.observe(Outcome::Throttled, ms(0), ms(0));
        assert_eq!(p.rate_fraction(), 0.5);
        assert_eq!(p.ceiling_fraction(), Some(1.0));
        // fast: one success doubles, capped at 7/8 of the rate that was throttled
        p.observe(Outcome::Success, ms(600), ms(600));
        assert_eq!(p.rate_fraction(), 0.875);
        // at the cap, nothing more until PROBE_INTERVAL after the failure
        assert!(!p.observe(Outcome::Success, ms(4_000), ms(4_000)));
        assert_eq!(p.rate_fraction(), 0.875);
        // each probe raises the ceiling by 5% of the configured rate, every 5 s at most
        let mut t = 5_000;
        let mut fractions = Vec::new();
        while p.ceiling_fraction().is_some() {
            assert!(p.observe(Outcome::Success, ms(t), ms(t)));
            assert!(
                !p.observe(Outcome::Success, ms(t + 1), ms(t + 1)),
                "once per interval"
            );
            fractions.push((p.rate_fraction() * 1000.0).round() / 1000.0);
            t += 5_000;
        }
        assert_eq!(fractions, [0.918, 0.962, 1.0]);
        assert!(p.is_clear());
        assert_eq!(t, 20_000, "full rate 15 s after the failure");
    }

    #[test]
    fn failures_that_confirm_a_ceiling_slow_the_probing() {
        let mut p = Penalty::default();
        p.observe(Outcome::Throttled, ms(0), ms(0));
        assert_eq!(p.probe_interval().as_secs(), 5);
        // each time the key is back at 7/8 of its ceiling and throttled there, the
        // ceiling is confirmed and the probing slows down
        let mut t = 1_000u64;
        for expected in [10, 20, 40, 80, 80] {
            while p.factor < p.recovery_cap() {
                p.observe(Outcome::Success, ms(t), ms(t));
                t += 1;
            }
            p.observe(Outcome::Throttled, ms(t), ms(t));
            t += 1;
            assert_eq!(p.probe_interval().as_secs(), expected);
        }
    }

    #[test]
    fn a_throttle_storm_keeps_the_ceiling_it_started_at() {
        // every attempt refused whatever the rate, one throttle after the other: the rate
        // sinks to the floor, the ceiling stays where the storm started, the probing is
        // not slowed, and after the storm the successes double the rate back to 7/8 of
        // that ceiling
        let mut p = Penalty::default();
        for i in 0..30u64 {
            p.observe(Outcome::Throttled, ms(i * 3_000), ms(i * 3_000 + 1));
        }
        assert_eq!(p.rate_fraction(), f64::from(FLOOR) / f64::from(FULL));
        assert_eq!(p.ceiling_fraction(), Some(1.0));
        assert_eq!(p.probe_interval(), PROBE_INTERVAL);
        let last = 29 * 3_000 + 1;
        for i in 1..=MAX_PENALTY_STEPS as u64 {
            p.observe(Outcome::Success, ms(last + i), ms(last + i));
        }
        assert_eq!(p.rate_fraction(), HEADROOM);
    }

    #[test]
    fn settles_below_a_server_quota_under_the_policy_instead_of_oscillating() {
        const POLICY: f64 = 10.0;
        let server_rate = 0.7 * POLICY;
        let (mut server_tokens, server_burst) = (server_rate, server_rate);
        let mut p = Penalty::default();
        let (mut credit, mut failures, mut sent) = (0.0, 0u32, 0u64);
        let step_ms = 10u64;
        let minutes = 10u64;
        for tick in 0..(minutes * 60_000 / step_ms) {
            let now = ms(tick * step_ms);
            server_tokens =
                (server_tokens + server_rate * step_ms as f64 / 1000.0).min(server_burst);
            if p.cooldown_until(now).is_some() {
                continue;
            }
            credit += p.effective_rate(POLICY) * step_ms as f64 / 1000.0;
            while credit >= 1.0 {
                credit -= 1.0;
                sent += 1;
                let admitted = now;
                if server_tokens >= 1.0 {
                    server_tokens -= 1.0;
                    p.observe(Outcome::Success, admitted, now);
                } else if p.observe(Outcome::Throttled, admitted, now) {
                    failures += 1;
                }
            }
        }
        let achieved = sent as f64 / (minutes * 60) as f64;
        eprintln!("{failures} failure events in {minutes} min, {achieved:.2}/s of {server_rate}/s");
        // seed 000's rule alone: a failure event about every 1-2 s (300-600 in 10 min)
        assert!(failures <= 40, "{failures} failure events in {minutes} min");
        assert!(achieved >= 0.85 * server_rate, "achieved {achieved:.2}/s");
        assert!(achieved <= server_rate * 1.01, "achieved {achieved:.2}/s");
    }

    #[test]
    fn records_without_a_factor_load_from_their_steps() {
        let old =
            r#"{"steps":2,"consecutive_failures":1,"cooldown_until":null,"last_failure_at":null}"#;
        let p: Penalty = serde_json::from_str(old).unwrap();
        assert_eq!(p.steps(), 2);
        assert_eq!(p.rate_fraction(), 0.25);
        let back: Penalty = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn transient_failures_slow_the_key_but_teach_no_ceiling() {
        let mut p = Penalty::default();
        // a 90-second outage: a transient failure every few seconds, each admitted after
        // the previous one
        for i in 0..30u64 {
            assert!(p.observe(Outcome::Transient, ms(i * 3_000), ms(i * 3_000 + 1)));
        }
        assert_eq!(p.rate_fraction(), f64::from(FLOOR) / f64::from(FULL));
        assert_eq!(p.ceiling_fraction(), None);
        assert_eq!(p.probe_interval(), PROBE_INTERVAL);
        // after the recovery, each success admitted after the last failure doubles the
        // rate: five of them and the key is back at its configured rate
        let last = ms(29 * 3_000 + 1);
        for i in 1..=MAX_PENALTY_STEPS as u64 {
            p.observe(
                Outcome::Success,
                last + Duration::from_millis(i),
                last + Duration::from_millis(i + 1),
            );
        }
        assert!(p.is_clear(), "{p:?}");
        // a ceiling learned from a throttle is kept (and not confirmed) by a 5xx
        let mut q = Penalty::default();
        q.observe(Outcome::Throttled, ms(0), ms(1));
        let ceiling = q.ceiling_fraction();
        q.observe(Outcome::Transient, ms(10_000), ms(10_001));
        assert_eq!(q.ceiling_fraction(), ceiling);
        assert_eq!(q.probe_interval(), PROBE_INTERVAL);
    }

    #[test]
    fn fatal_is_not_a_capacity_signal() {
        let mut p = Penalty::default();
        assert!(!p.observe(Outcome::Fatal, ms(0), ms(1)));
        assert_eq!(p, Penalty::default());
    }
}
