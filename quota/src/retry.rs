//! The shared retry allowance of one key.
//!
//! Why an allowance and not only "max attempts"? Max attempts bounds one call; a fleet of
//! calls each retrying up to its maximum still multiplies load by that maximum exactly
//! when the service is struggling. The allowance bounds retries across every call on the
//! key: each retry spends one unit, each success refunds one, and elapsed time alone never
//! refills it, so a continuing failure drains it and stops retries while first attempts
//! still go out to probe for recovery.

use serde::{Deserialize, Serialize};

/// Retry units left for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryAllowance {
    units: u32,
}

impl RetryAllowance {
    /// A full allowance.
    pub fn full(capacity: u32) -> Self {
        RetryAllowance { units: capacity }
    }

    /// Units left.
    pub fn units(&self) -> u32 {
        self.units
    }

    /// Spend one unit for a retry; false when the allowance is empty.
    pub fn try_spend(&mut self) -> bool {
        if self.units == 0 {
            return false;
        }
        self.units -= 1;
        true
    }

    /// Return one unit (a success, or a retry that never dispatched), up to `capacity`.
    pub fn refund(&mut self, capacity: u32) {
        self.units = (self.units + 1).min(capacity);
    }

    /// Take `units` at once (as many as are left): on restore after a crash, the retries
    /// the dead coordinator may have granted after its last snapshot.
    pub fn charge(&mut self, units: u32) {
        self.units = self.units.saturating_sub(units);
    }

    /// Clamp to a (possibly lowered) capacity.
    pub fn clamp(&mut self, capacity: u32) {
        self.units = self.units.min(capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_refunds_and_never_exceeds_capacity() {
        let mut a = RetryAllowance::full(2);
        assert!(a.try_spend() && a.try_spend());
        assert!(!a.try_spend());
        a.refund(2);
        a.refund(2);
        a.refund(2);
        assert_eq!(a.units(), 2);
        a.clamp(1);
        assert_eq!(a.units(), 1);
        a.charge(5);
        assert_eq!(a.units(), 0);
    }
}
