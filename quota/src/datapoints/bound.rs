//! The datapoint bound of one GetMetricData attempt (issue 22, item 2).
//!
//! Each page and each retry reserves, before transport, the most datapoints AWS can
//! return for it: for every inspectable `MetricStat` query (`ReturnData: false`
//! included), the number of period buckets, aligned to multiples of the period since the
//! Unix epoch, that intersect `[rounded StartTime, EndTime)`; summed, and capped at the
//! page cap ([`PageCap`]: a valid `MaxDatapoints`, else 100,800). Epoch-aligned buckets
//! count a partial leading and trailing period each, so the count is at least what AWS
//! returns whichever way it aligns a series' timestamps.
//!
//! Anything the sum cannot see reserves the whole cap: an expression, an unknown query
//! shape, a `MetricStat` without a valid period, or a missing or invalid time window.
//!
//! The bound takes no response: a later page's reservation never shrinks because an
//! earlier page returned fewer datapoints (seed 000: "prior responses never reduce the
//! reservation"). It takes the attempt instant because the rounding depends on the
//! start's age then. All arithmetic is on in-range instants and saturates, so no input
//! panics.

use super::query::{InvalidRange, MetricDataRequest, MetricQuery, PageCap, Period, TimeRange};
use super::rounding::rounded_start;
use crate::schedule::WallClock;

/// What one attempt reserves, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatapointBound {
    /// Datapoints to charge (at most the page cap).
    pub cost: u32,
    /// How `cost` was reached.
    pub basis: Basis,
}

/// How a bound was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The bucket sum, at or under the cap.
    Counted,
    /// The bucket sum exceeded the cap, which was charged instead.
    Capped,
    /// The request cannot be inspected; the whole cap is charged.
    WholeCap(Uninspectable),
}

/// Why a request reserves the whole cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uninspectable {
    /// An `Expression` query.
    Expression,
    /// A query of unknown shape.
    UnknownQuery,
    /// A `MetricStat` query without a valid period.
    InvalidPeriod,
    /// The time window is missing or invalid.
    Window(InvalidRange),
}

/// The datapoint bound of `request` for an attempt at `at`.
pub fn datapoint_bound(request: &MetricDataRequest, at: WallClock) -> DatapointBound {
    let cap = PageCap::new(request.max_datapoints).datapoints();
    let whole_cap = |why| DatapointBound {
        cost: cap,
        basis: Basis::WholeCap(why),
    };
    let mut periods = Vec::with_capacity(request.queries.len());
    for query in &request.queries {
        match *query {
            MetricQuery::MetricStat { period_s, .. } => match period_s.and_then(Period::new) {
                Some(p) => periods.push(p),
                None => return whole_cap(Uninspectable::InvalidPeriod),
            },
            MetricQuery::Expression => return whole_cap(Uninspectable::Expression),
            MetricQuery::Unknown => return whole_cap(Uninspectable::UnknownQuery),
        }
    }
    let range = match TimeRange::new(request.start_time_ms, request.end_time_ms) {
        Ok(range) => range,
        Err(why) => return whole_cap(Uninspectable::Window(why)),
    };
    let sum = periods.iter().fold(0u64, |sum, &p| {
        sum.saturating_add(series_buckets(range, p, at))
    });
    if sum > u64::from(cap) {
        DatapointBound {
            cost: cap,
            basis: Basis::Capped,
        }
    } else {
        DatapointBound {
            cost: sum as u32, // at most the cap
            basis: Basis::Counted,
        }
    }
}

/// The number of period buckets, aligned to multiples of `period` since the Unix epoch,
/// that intersect `[rounded start, end)` for one series asked at `at`.
///
/// Bucket `k` is `[k·p, (k+1)·p)`; it intersects `[s, e)` (with `s < e`) exactly when
/// `k ≥ ⌊s/p⌋` and `k < ⌈e/p⌉`.
pub fn series_buckets(range: TimeRange, period: Period, at: WallClock) -> u64 {
    let start = ms(rounded_start(range.start(), period, at));
    let end = ms(range.end());
    let p = period.millis();
    end.div_ceil(p).saturating_sub(start / p)
}

fn ms(w: WallClock) -> u64 {
    w.unix_millis().unsigned_abs() // a WallClock is never negative
}
