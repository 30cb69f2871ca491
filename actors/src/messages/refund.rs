//! `Refund`: give back a grant that was never sent because its pair could not be charged.
//!
//! A paired admission ([`crate::ops::Operation::AdmitWithBudget`]: a GetMetricData
//! attempt's request token and its datapoints) charges two keys. When the second cannot
//! be charged at the instant the first was granted, the first grant is refunded rather
//! than held, so neither key's charges drift apart from when bytes go out.

use actix::Message;
use tollgate_quota::Grant;

/// Put a never-sent grant's tokens, window start and retry unit (if it spent one) back.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Refund {
    /// The grant's cost.
    pub cost: u32,
    /// The grant (when it was admitted, whether it spent a retry unit).
    pub grant: Grant,
}
