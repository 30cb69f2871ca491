//! Table and property tests of the datapoint bound and the budget choice, against a
//! reference that rounds with chrono's calendar fields and counts buckets by walking
//! them one by one.

use chrono::{DateTime, Timelike};
use proptest::prelude::*;

use super::*;
use crate::schedule::WallClock;

const SECOND_MS: i64 = 1_000;
const HOUR_MS: i64 = 3_600 * SECOND_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

fn w(text: &str) -> WallClock {
    WallClock::parse_rfc3339(text).unwrap()
}

fn ms(text: &str) -> Option<i64> {
    Some(w(text).unix_millis())
}

fn request(start: &str, end: &str, queries: Vec<MetricQuery>) -> MetricDataRequest {
    MetricDataRequest {
        start_time_ms: ms(start),
        end_time_ms: ms(end),
        max_datapoints: None,
        queries,
    }
}

fn daily(n: usize) -> Vec<MetricQuery> {
    (0..n)
        .map(|i| MetricQuery::MetricStat {
            period_s: Some(86_400),
            return_data: i % 2 == 0,
        })
        .collect()
}

// ---- the reference -------------------------------------------------------------------

/// `StartTime` rounded as the contract words it, on calendar fields.
fn reference_rounded_start(start_ms: i64, period_s: u32, at_ms: i64) -> i64 {
    let t = DateTime::from_timestamp_millis(start_ms)
        .unwrap()
        .naive_utc();
    let t = t.with_nanosecond(0).unwrap();
    let age = at_ms - start_ms;
    let rounded = if period_s < 60 {
        t.with_second(t.second() - t.second() % period_s).unwrap()
    } else {
        let t = t.with_second(0).unwrap();
        if age < 15 * DAY_MS {
            t
        } else if age <= 63 * DAY_MS {
            t.with_minute(t.minute() - t.minute() % 5).unwrap()
        } else {
            t.with_minute(0).unwrap()
        }
    };
    rounded.and_utc().timestamp_millis()
}

/// Walk every epoch-aligned bucket from one well before the start to one past the end,
/// counting those that intersect `[start, end)`.
fn brute_force_buckets(start_ms: i64, end_ms: i64, period_s: u32) -> u64 {
    let p = i64::from(period_s) * SECOND_MS;
    let mut bucket = start_ms - start_ms % p - p;
    let mut count = 0;
    while bucket < end_ms + p {
        if bucket.max(start_ms) < (bucket + p).min(end_ms) {
            count += 1;
        }
        bucket += p;
    }
    count
}

fn reference_cap(max_datapoints: Option<i64>) -> u64 {
    match max_datapoints {
        Some(m) if (1..=100_800).contains(&m) => m as u64,
        _ => 100_800,
    }
}

/// The uncapped sum of every series' buckets.
fn reference_sum(start_ms: i64, end_ms: i64, periods: &[u32], at_ms: i64) -> u64 {
    periods
        .iter()
        .map(|&p| brute_force_buckets(reference_rounded_start(start_ms, p, at_ms), end_ms, p))
        .sum()
}

// ---- tables --------------------------------------------------------------------------

#[test]
fn five_hundred_daily_series_over_fourteen_complete_utc_days_reserve_seven_thousand() {
    let req = request("2026-01-01T00:00:00Z", "2026-01-15T00:00:00Z", daily(500));
    for at in [
        "2026-01-15T00:00:00Z",
        "2026-01-15T09:30:00Z",
        "2026-01-15T23:59:59.999Z",
    ] {
        let charge = DatapointCharge::for_attempt(&req, w(at));
        assert_eq!(charge.cost, 7_000, "at {at}");
        assert_eq!(charge.basis, Basis::Counted, "at {at}");
        assert_eq!(charge.budget, DatapointBudget::Older, "at {at}");
    }
    // A valid MaxDatapoints at the figure is not exceeded; one below it caps the page.
    let mut capped = req.clone();
    capped.max_datapoints = Some(7_000);
    let at = w("2026-01-15T09:30:00Z");
    assert_eq!(datapoint_bound(&capped, at).basis, Basis::Counted);
    capped.max_datapoints = Some(6_999);
    assert_eq!(
        datapoint_bound(&capped, at),
        DatapointBound {
            cost: 6_999,
            basis: Basis::Capped
        }
    );
}

#[test]
fn a_rounded_start_adds_the_leading_buckets_aws_can_return() {
    let minute = vec![MetricQuery::metric_stat(60)];
    let req = request("2026-01-05T12:32:34.500Z", "2026-01-05T12:35:00Z", minute);
    let after = |days| {
        w("2026-01-05T12:32:34.500Z")
            .saturating_add(std::time::Duration::from_millis(days * DAY_MS as u64))
    };
    // Under 15 days: 12:32, 12:33, 12:34. From 15 days: from 12:30. Past 63: from 12:00.
    assert_eq!(datapoint_bound(&req, after(1)).cost, 3);
    assert_eq!(datapoint_bound(&req, after(15)).cost, 5);
    assert_eq!(datapoint_bound(&req, after(63)).cost, 5);
    assert_eq!(datapoint_bound(&req, after(64)).cost, 35);
    // An hourly series counts the partial leading hour whatever the rounding.
    let hourly = vec![MetricQuery::metric_stat(3_600)];
    let req = request("2026-01-05T12:32:34Z", "2026-01-05T14:00:00Z", hourly);
    assert_eq!(datapoint_bound(&req, after(1)).cost, 2);
}

#[test]
fn end_time_is_exclusive() {
    let q = || vec![MetricQuery::metric_stat(300)];
    let at = w("2026-01-05T13:00:00Z");
    let on_boundary = request("2026-01-05T12:00:00Z", "2026-01-05T12:10:00Z", q());
    assert_eq!(datapoint_bound(&on_boundary, at).cost, 2);
    let just_past = request("2026-01-05T12:00:00Z", "2026-01-05T12:10:00.001Z", q());
    assert_eq!(datapoint_bound(&just_past, at).cost, 3);
    let one_ms = request("2026-01-05T12:00:00Z", "2026-01-05T12:00:00.001Z", q());
    assert_eq!(datapoint_bound(&one_ms, at).cost, 1);
}

#[test]
fn the_sum_is_capped_at_100800_and_a_sum_at_the_cap_is_counted() {
    let week = |n| {
        request(
            "2026-01-01T00:00:00Z",
            "2026-01-08T00:00:00Z",
            vec![MetricQuery::metric_stat(60); n],
        )
    };
    let at = w("2026-01-08T00:00:00Z");
    assert_eq!(
        datapoint_bound(&week(10), at),
        DatapointBound {
            cost: 100_800,
            basis: Basis::Counted
        }
    );
    assert_eq!(
        datapoint_bound(&week(11), at),
        DatapointBound {
            cost: 100_800,
            basis: Basis::Capped
        }
    );
    let mut big = week(11);
    big.max_datapoints = Some(1_000_000);
    assert_eq!(datapoint_bound(&big, at).cost, 100_800);
    big.max_datapoints = Some(0);
    assert_eq!(datapoint_bound(&big, at).cost, 100_800, "0 is invalid");
}

#[test]
fn what_cannot_be_inspected_reserves_the_whole_cap() {
    let at = w("2026-01-15T00:00:00Z");
    let base = || request("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", daily(3));
    let with = |q: MetricQuery| {
        let mut r = base();
        r.queries.insert(1, q);
        r.max_datapoints = Some(50_000);
        r
    };
    let no_start = MetricDataRequest {
        start_time_ms: None,
        ..base()
    };
    let reversed = MetricDataRequest {
        start_time_ms: base().end_time_ms,
        end_time_ms: base().start_time_ms,
        ..base()
    };
    let empty = MetricDataRequest {
        end_time_ms: base().start_time_ms,
        ..base()
    };
    let pre_epoch = MetricDataRequest {
        start_time_ms: Some(-1),
        ..base()
    };
    let cases: Vec<(MetricDataRequest, u32, Uninspectable)> = vec![
        (
            with(MetricQuery::Expression),
            50_000,
            Uninspectable::Expression,
        ),
        (
            with(MetricQuery::Unknown),
            50_000,
            Uninspectable::UnknownQuery,
        ),
        (
            with(MetricQuery::metric_stat(90)),
            50_000,
            Uninspectable::InvalidPeriod,
        ),
        (
            with(MetricQuery::MetricStat {
                period_s: None,
                return_data: false,
            }),
            50_000,
            Uninspectable::InvalidPeriod,
        ),
        (
            no_start,
            100_800,
            Uninspectable::Window(InvalidRange::Missing),
        ),
        (
            reversed,
            100_800,
            Uninspectable::Window(InvalidRange::Empty),
        ),
        (empty, 100_800, Uninspectable::Window(InvalidRange::Empty)),
        (
            pre_epoch,
            100_800,
            Uninspectable::Window(InvalidRange::OutOfRange),
        ),
    ];
    for (req, cost, why) in cases {
        assert_eq!(
            datapoint_bound(&req, at),
            DatapointBound {
                cost,
                basis: Basis::WholeCap(why)
            },
            "{req:?}"
        );
    }
    assert_eq!(
        datapoint_bound(&base(), at).cost,
        3,
        "the base request is counted"
    );
}

#[test]
fn a_request_without_queries_reserves_nothing() {
    // AWS refuses it and returns no datapoints, so nothing is reserved.
    let req = request("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", vec![]);
    assert_eq!(
        datapoint_bound(&req, w("2026-01-02T00:00:00Z")),
        DatapointBound {
            cost: 0,
            basis: Basis::Counted
        }
    );
}

// ---- properties ----------------------------------------------------------------------

fn period() -> impl Strategy<Value = u32> {
    prop_oneof![
        prop::sample::select(Period::SUB_MINUTE.to_vec()),
        (1u32..=1_440).prop_map(|m| m * 60),
    ]
}

/// Ages around every boundary, and anywhere from a day in the future to 200 days old.
fn age() -> impl Strategy<Value = i64> {
    prop_oneof![
        -DAY_MS..=200 * DAY_MS,
        3 * HOUR_MS - 2_000..=3 * HOUR_MS + 2_000,
        15 * DAY_MS - 2_000..=15 * DAY_MS + 2_000,
        63 * DAY_MS - 2_000..=63 * DAY_MS + 2_000,
    ]
}

fn max_datapoints() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        Just(None),
        any::<i64>().prop_map(Some),
        (-10i64..=120_000).prop_map(Some),
    ]
}

/// Periods of 1 to 4 series and a window of 1 second to 455 days holding at most 25,000
/// buckets of the shortest period, so the reference walks at most about 10^5 buckets.
fn periods_and_window() -> impl Strategy<Value = (Vec<u32>, i64)> {
    prop::collection::vec(period(), 1..=4).prop_flat_map(|periods| {
        let shortest = i64::from(*periods.iter().min().unwrap()) * SECOND_MS;
        let longest_window = (shortest * 25_000).min(455 * DAY_MS);
        (Just(periods), SECOND_MS..=longest_window)
    })
}

/// Any `i64`, or an instant in range, including both ends of the range.
fn any_millis() -> impl Strategy<Value = i64> {
    let max = WallClock::MAX.unix_millis();
    prop_oneof![any::<i64>(), 0..=max, Just(0), Just(max)]
}

/// Any query shape, with any `i64` as a period or a valid one.
fn any_query() -> impl Strategy<Value = MetricQuery> {
    let stat = |(period_s, return_data)| MetricQuery::MetricStat {
        period_s,
        return_data,
    };
    prop_oneof![
        (proptest::option::of(any::<i64>()), any::<bool>()).prop_map(stat),
        period().prop_map(|p| MetricQuery::metric_stat(i64::from(p))),
        Just(MetricQuery::Expression),
        Just(MetricQuery::Unknown),
    ]
}

proptest! {
    #[test]
    fn the_bound_equals_a_brute_force_count_of_the_buckets(
        (periods, window) in periods_and_window(),
        start in 1_600_000_000_000i64..1_800_000_000_000,
        age in age(),
        max in max_datapoints(),
        return_data in any::<bool>(),
    ) {
        let req = MetricDataRequest {
            start_time_ms: Some(start),
            end_time_ms: Some(start + window),
            max_datapoints: max,
            queries: periods
                .iter()
                .map(|&p| MetricQuery::MetricStat {
                    period_s: Some(i64::from(p)),
                    return_data,
                })
                .collect(),
        };
        let at = WallClock::from_unix_millis(start + age).unwrap();
        let bound = datapoint_bound(&req, at);
        let sum = reference_sum(start, start + window, &periods, start + age);
        let cap = reference_cap(max);
        prop_assert_eq!(u64::from(bound.cost), sum.min(cap));
        let basis = if sum > cap { Basis::Capped } else { Basis::Counted };
        prop_assert_eq!(bound.basis, basis);
    }

    #[test]
    fn the_budget_is_recent_exactly_when_the_start_is_at_most_three_hours_old(
        start in 0i64..=WallClock::MAX.unix_millis(),
        age in prop_oneof![
            -DAY_MS..=2 * DAY_MS,
            3 * HOUR_MS - 2..=3 * HOUR_MS + 2,
        ],
    ) {
        let at_ms = (start + age).clamp(0, WallClock::MAX.unix_millis());
        let at = WallClock::from_unix_millis(at_ms).unwrap();
        let expected = if at_ms - start <= 3 * HOUR_MS {
            DatapointBudget::Recent
        } else {
            DatapointBudget::Older
        };
        prop_assert_eq!(DatapointBudget::for_start(Some(start), at), expected);
        if at_ms - start == 3 * HOUR_MS {
            prop_assert_eq!(expected, DatapointBudget::Recent);
            if let Some(later) = WallClock::from_unix_millis(at_ms + 1) {
                let budget = DatapointBudget::for_start(Some(start), later);
                prop_assert_eq!(budget, DatapointBudget::Older);
            }
        }
    }

    #[test]
    fn an_expression_or_unknown_query_anywhere_reserves_the_whole_cap(
        (periods, window) in periods_and_window(),
        start in 1_600_000_000_000i64..1_800_000_000_000,
        age in age(),
        max in max_datapoints(),
        position in any::<prop::sample::Index>(),
        expression in any::<bool>(),
    ) {
        let mut queries: Vec<MetricQuery> =
            periods.iter().map(|&p| MetricQuery::metric_stat(i64::from(p))).collect();
        let opaque = if expression { MetricQuery::Expression } else { MetricQuery::Unknown };
        queries.insert(position.index(queries.len() + 1), opaque);
        let req = MetricDataRequest {
            start_time_ms: Some(start),
            end_time_ms: Some(start + window),
            max_datapoints: max,
            queries,
        };
        let bound = datapoint_bound(&req, WallClock::from_unix_millis(start + age).unwrap());
        prop_assert_eq!(u64::from(bound.cost), reference_cap(max));
        prop_assert!(matches!(bound.basis, Basis::WholeCap(_)));
    }

    #[test]
    fn a_window_that_ends_at_or_before_its_start_reserves_the_whole_cap(
        periods in prop::collection::vec(period(), 0..=4),
        start in 0i64..=WallClock::MAX.unix_millis(),
        back in 0i64..=400 * DAY_MS,
        max in max_datapoints(),
    ) {
        let req = MetricDataRequest {
            start_time_ms: Some(start),
            end_time_ms: Some(start - back),
            max_datapoints: max,
            queries: periods
                .iter()
                .map(|&p| MetricQuery::metric_stat(i64::from(p)))
                .collect(),
        };
        let bound = datapoint_bound(&req, WallClock::from_unix_millis(start).unwrap());
        prop_assert_eq!(u64::from(bound.cost), reference_cap(max));
        prop_assert!(matches!(bound.basis, Basis::WholeCap(Uninspectable::Window(_))));
    }

    #[test]
    fn no_input_panics_and_the_cost_never_exceeds_the_cap(
        start in proptest::option::of(any_millis()),
        end in proptest::option::of(any_millis()),
        max in proptest::option::of(any::<i64>()),
        queries in prop::collection::vec(any_query(), 0..=6),
        at in 0i64..=WallClock::MAX.unix_millis(),
    ) {
        let req = MetricDataRequest {
            start_time_ms: start,
            end_time_ms: end,
            max_datapoints: max,
            queries,
        };
        let at = WallClock::from_unix_millis(at).unwrap();
        let charge = DatapointCharge::for_attempt(&req, at);
        prop_assert!(u64::from(charge.cost) <= reference_cap(max));
        if matches!(charge.basis, Basis::WholeCap(_) | Basis::Capped) {
            prop_assert_eq!(u64::from(charge.cost), reference_cap(max));
        }
    }
}
