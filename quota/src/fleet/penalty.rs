//! The fleet penalty: a throttle seen by any host slows every host together.
//!
//! The item carries a factor on the key's rate. A writer that saw a throttle since its
//! last block halves it, at most once per [`FLEET_COOLDOWN`] (so a storm seen by many
//! hosts at once counts as one event), and remembers the factor it was throttled at as the
//! learned ceiling. A cooldown with no throttle reported lets the factor recover: doubling
//! while under half the ceiling, then in small steps, so the fleet approaches the rate
//! that was throttled slowly; once past it without a throttle, the ceiling rises with it.
//! Every host refills from the item with the item's factor, so all slow at once.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// The fleet factor never falls below 1/32 (as the local penalty, DESIGN §3).
pub const MIN_FACTOR: f64 = 1.0 / 32.0;
/// At most one halving, and at most one recovery step, per cooldown.
pub const FLEET_COOLDOWN: Duration = Duration::from_secs(2);
/// The recovery step near the learned ceiling.
pub const RECOVERY_STEP: f64 = 1.0 / 16.0;

/// The factor, its cooldown and the learned ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FleetPenalty {
    /// Multiplies the key's rate, in `[MIN_FACTOR, 1]`.
    pub factor: f64,
    /// No further change to the factor before this instant (item time).
    pub cooldown_until: Timestamp,
    /// The factor at the last throttle (1 when none was seen).
    pub ceiling: f64,
}

impl Default for FleetPenalty {
    fn default() -> Self {
        FleetPenalty {
            factor: 1.0,
            cooldown_until: Timestamp::ZERO,
            ceiling: 1.0,
        }
    }
}

impl FleetPenalty {
    /// Apply a writer's report at `now` (item time): `throttled` if it saw a throttle
    /// since its last block. Returns true if the factor changed.
    pub fn observe(&mut self, throttled: bool, now: Timestamp) -> bool {
        if now < self.cooldown_until {
            return false;
        }
        if throttled {
            self.ceiling = self.factor;
            self.factor = (self.factor / 2.0).max(MIN_FACTOR);
            self.cooldown_until = now + FLEET_COOLDOWN;
            return true;
        }
        if self.factor >= 1.0 {
            return false;
        }
        let next = if self.factor * 2.0 <= self.ceiling / 2.0 {
            self.factor * 2.0
        } else {
            self.factor + RECOVERY_STEP
        };
        self.factor = next.min(1.0);
        self.ceiling = self.ceiling.max(self.factor);
        self.cooldown_until = now + FLEET_COOLDOWN;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64) -> Timestamp {
        Timestamp::from_millis(v * 1_000)
    }

    #[test]
    fn a_storm_halves_the_factor_once_per_cooldown() {
        let mut p = FleetPenalty::default();
        assert!(p.observe(true, s(10)));
        assert_eq!(p.factor, 0.5);
        for t in [10, 10, 11] {
            assert!(!p.observe(true, s(t)), "within the cooldown");
        }
        assert!(p.observe(true, s(12)));
        assert_eq!(p.factor, 0.25);
        assert_eq!(p.ceiling, 0.5);
    }

    #[test]
    fn the_factor_never_falls_below_the_minimum() {
        let mut p = FleetPenalty::default();
        for i in 0..20 {
            p.observe(true, s(i * 2));
        }
        assert_eq!(p.factor, MIN_FACTOR);
    }

    #[test]
    fn recovery_doubles_under_half_the_ceiling_then_steps() {
        let mut p = FleetPenalty::default();
        p.observe(true, s(0)); // 0.5, ceiling 1
        p.observe(true, s(2)); // 0.25, ceiling 0.5
        p.observe(true, s(4)); // 0.125, ceiling 0.25
        assert!(p.observe(false, s(6)));
        assert_eq!(
            p.factor,
            0.125 + RECOVERY_STEP,
            "0.25 > ceiling/2: a small step"
        );
        assert!(!p.observe(false, s(7)), "one step per cooldown");
        let mut q = FleetPenalty {
            factor: 0.125,
            cooldown_until: s(0),
            ceiling: 1.0,
        };
        q.observe(false, s(1));
        assert_eq!(q.factor, 0.25);
    }

    #[test]
    fn recovery_stops_at_one_and_raises_the_ceiling() {
        let mut p = FleetPenalty {
            factor: 0.97,
            cooldown_until: s(0),
            ceiling: 0.5,
        };
        p.observe(false, s(1));
        assert_eq!(p.factor, 1.0);
        assert_eq!(p.ceiling, 1.0);
        assert!(!p.observe(false, s(5)), "nothing to recover");
    }
}
