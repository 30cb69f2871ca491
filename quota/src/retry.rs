//! The shared retry allowance of one key.
//!
//! Why an allowance and not only "max attempts"? Max attempts bounds one call; a fleet of
//! calls each retrying up to its maximum still multiplies load by that maximum exactly
//! when the service is struggling. The allowance bounds retries across every call on the
//! key, and elapsed time alone never refills it, so a continuing failure drains it and
//! stops retries while first attempts still go out to probe for recovery.
//!
//! The policy's retry capacity sizes it; a [`RetryCosts`] model says what a retry costs
//! and what a success gives back (issue 14, item 3):
//! - [`RetryCosts::Flat`]: capacity units, each retry spends one, each success refunds
//!   one;
//! - [`RetryCosts::Asymmetric`]: seed 004's SDK retry quota, scaled to the capacity:
//!   [`ASYMMETRIC_TOKENS_PER_UNIT`] tokens per unit (the default capacity of 20 holds the
//!   SDK's 500), a retry after a transient failure costs 14, after a throttle 5 ("retrying
//!   into a broken service is priced higher than retrying into a busy one"), a success
//!   refunds 1. (The SDK refunds 1 for a first-attempt success and gives a successful
//!   retry its cost back; a key's feedback does not say which attempt succeeded, so every
//!   success refunds 1, which errs towards fewer retries.)
//!
//! [`RETRY_COSTS`] is the model in force; docs/benchmarks.md ("The 90-second outage")
//! has the measurements it was chosen by. Nothing here reads a clock.

use serde::{Deserialize, Serialize};

use crate::penalty::Outcome;

/// How retries are charged against a key's allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCosts {
    /// One unit per retry, one back per success.
    Flat,
    /// Seed 004's SDK quota scaled to the capacity: 14 per transient retry, 5 per
    /// throttled retry, 1 back per success, 25 tokens per unit of capacity.
    Asymmetric,
}

/// The cost model in force (see the module docs and docs/benchmarks.md).
pub const RETRY_COSTS: RetryCosts = RetryCosts::Flat;

/// Tokens per unit of retry capacity in the asymmetric model: 20 units hold the SDK's
/// 500 tokens.
pub const ASYMMETRIC_TOKENS_PER_UNIT: u32 = 25;
/// Seed 004: a retry after a transient failure.
pub const ASYMMETRIC_TRANSIENT_COST: u32 = 14;
/// Seed 004: a retry after a throttle.
pub const ASYMMETRIC_THROTTLE_COST: u32 = 5;
/// Seed 004: a success gives back this much.
pub const ASYMMETRIC_SUCCESS_REFUND: u32 = 1;

impl RetryCosts {
    /// Tokens a full allowance of `capacity` units holds.
    pub fn tokens(self, capacity: u32) -> u32 {
        match self {
            RetryCosts::Flat => capacity,
            RetryCosts::Asymmetric => capacity.saturating_mul(ASYMMETRIC_TOKENS_PER_UNIT),
        }
    }

    /// What a retry after a failure of `class` costs. Anything but a throttle is priced
    /// as transient (the dearer): a retry is only asked for after one of the two.
    pub fn retry_cost(self, class: Outcome) -> u32 {
        match (self, class) {
            (RetryCosts::Flat, _) => 1,
            (RetryCosts::Asymmetric, Outcome::Throttled) => ASYMMETRIC_THROTTLE_COST,
            (RetryCosts::Asymmetric, _) => ASYMMETRIC_TRANSIENT_COST,
        }
    }

    /// What a success gives back.
    pub fn success_refund(self) -> u32 {
        match self {
            RetryCosts::Flat => 1,
            RetryCosts::Asymmetric => ASYMMETRIC_SUCCESS_REFUND,
        }
    }
}

/// Retry tokens left for one key (in the cost model's tokens: units for [`RetryCosts::Flat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryAllowance {
    units: u32,
}

impl RetryAllowance {
    /// A full allowance of `capacity` units under `costs`.
    pub fn full(costs: RetryCosts, capacity: u32) -> Self {
        RetryAllowance {
            units: costs.tokens(capacity),
        }
    }

    /// Tokens left.
    pub fn units(&self) -> u32 {
        self.units
    }

    /// Whether a retry after a failure of `class` can be paid for.
    pub fn can_spend(&self, costs: RetryCosts, class: Outcome) -> bool {
        self.units >= costs.retry_cost(class)
    }

    /// Spend one retry's cost after a failure of `class`; false (nothing spent) when the
    /// allowance cannot pay it.
    pub fn try_spend(&mut self, costs: RetryCosts, class: Outcome) -> bool {
        let cost = costs.retry_cost(class);
        if self.units < cost {
            return false;
        }
        self.units -= cost;
        true
    }

    /// A success: give back the model's refund, up to `capacity` units.
    pub fn refund_success(&mut self, costs: RetryCosts, capacity: u32) {
        self.units = self
            .units
            .saturating_add(costs.success_refund())
            .min(costs.tokens(capacity));
    }

    /// Return a retry's cost (a retry after `class` that never dispatched), up to
    /// `capacity` units.
    pub fn refund_retry(&mut self, costs: RetryCosts, class: Outcome, capacity: u32) {
        self.units = self
            .units
            .saturating_add(costs.retry_cost(class))
            .min(costs.tokens(capacity));
    }

    /// Take `retries` retries' worth at once, priced as transient (the dearer), as many
    /// as are left: on restore after a crash, the retries the dead coordinator may have
    /// granted after its last snapshot.
    pub fn charge(&mut self, costs: RetryCosts, retries: u32) {
        let cost = retries.saturating_mul(costs.retry_cost(Outcome::Transient));
        self.units = self.units.saturating_sub(cost);
    }

    /// Clamp to a (possibly lowered) capacity of `capacity` units.
    pub fn clamp(&mut self, costs: RetryCosts, capacity: u32) {
        self.units = self.units.min(costs.tokens(capacity));
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
