//! CloudWatch datapoint budgets (issue 22; seed 000's "CloudWatch datapoints"): which
//! budget a GetMetricData attempt charges, and how many datapoints it must reserve.
//!
//! GetMetricData is metered twice by AWS: per request (`cloudwatch:GetMetricData`, an
//! ordinary key) and per datapoint, against one of two account/region quotas chosen by
//! the age of `StartTime`. A gate that charged only requests would let a few wide
//! queries exhaust the datapoint quota and be throttled; so each attempt reserves an
//! upper bound of what it can return, computed here before the response exists.
//!
//! Pure like the rest of the crate: the attempt instant comes in as a [`WallClock`]
//! (UTC; request times are Unix milliseconds, so the age of a start is a difference of
//! two wall-clock instants). Charging the budgets atomically with the request key, and
//! replaying, reporting and simulating them, happen elsewhere.
//!
//! # Layout
//! - `query`: [`MetricDataRequest`] and [`MetricQuery`] as the gate sees them, and their
//!   validated parts: [`Period`], [`TimeRange`], [`PageCap`].
//! - `rounding`: [`StartRounding`], CloudWatch's rounding of `StartTime`, by period and
//!   age (with the 15- and 63-day boundaries).
//! - `bound`: [`datapoint_bound`], the per-attempt sum of period buckets, capped.
//! - `budget`: [`DatapointBudget`], `recent` or `older` by the 3-hour rule.
//! - `charge`: [`DatapointCharge`], budget and cost of one attempt.

mod bound;
mod budget;
mod charge;
mod query;
mod rounding;

#[cfg(test)]
mod bound_tests;

pub use bound::{datapoint_bound, series_buckets, Basis, DatapointBound, Uninspectable};
pub use budget::{DatapointBudget, DATAPOINTS_SERVICE, RECENT_MAX_AGE};
pub use charge::DatapointCharge;
pub use query::{
    InvalidRange, MetricDataRequest, MetricQuery, PageCap, Period, TimeRange, MAX_PAGE_DATAPOINTS,
};
pub use rounding::{rounded_start, StartRounding, HOUR_ROUNDING_ABOVE, MINUTE_ROUNDING_BELOW};
