//! A GetMetricData request as the gate sees it, and the validation of its parts.
//!
//! The gate copies the SDK's input into [`MetricDataRequest`] without judging it
//! (times as Unix milliseconds, numbers as given), so that a request AWS would reject
//! still gets a bound: whatever cannot be inspected reserves the whole page cap instead
//! of failing admission. The validated forms ([`Period`], [`TimeRange`], [`PageCap`])
//! are what the bound computes with; each says here what makes a raw value invalid.

use crate::schedule::WallClock;

/// The most datapoints one GetMetricData page can return, and the default and largest
/// `MaxDatapoints` (seed 000: "caps the total at MaxDatapoints, up to 100,800").
pub const MAX_PAGE_DATAPOINTS: u32 = 100_800;

/// The parts of a GetMetricData request that bound its datapoints. Times are Unix
/// milliseconds; `None` is a field the request left out. `NextToken` is deliberately
/// absent: every page reserves the bound of the whole request, whatever earlier pages
/// returned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricDataRequest {
    /// `StartTime` (inclusive, before CloudWatch rounds it down).
    pub start_time_ms: Option<i64>,
    /// `EndTime` (exclusive).
    pub end_time_ms: Option<i64>,
    /// `MaxDatapoints` as given.
    pub max_datapoints: Option<i64>,
    /// `MetricDataQueries`, in order.
    pub queries: Vec<MetricQuery>,
}

/// One entry of `MetricDataQueries`, by shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricQuery {
    /// A `MetricStat` query: one series at a period.
    MetricStat {
        /// `MetricStat.Period` in seconds, as given.
        period_s: Option<i64>,
        /// `ReturnData`. It does not change the bound: AWS counts the datapoints of a
        /// series it reads whether or not it returns them (seed 000: "Queries with
        /// ReturnData: false remain included").
        return_data: bool,
    },
    /// An `Expression` query (math or Metrics Insights): its series are not known before
    /// AWS evaluates it, so it reserves the whole cap.
    Expression,
    /// Anything else (both or neither of `MetricStat` and `Expression`, a shape added to
    /// the API later): not inspectable, so it reserves the whole cap.
    Unknown,
}

impl MetricQuery {
    /// A `MetricStat` query returning its data.
    pub fn metric_stat(period_s: i64) -> MetricQuery {
        MetricQuery::MetricStat {
            period_s: Some(period_s),
            return_data: true,
        }
    }
}

/// A valid CloudWatch period: 1, 5, 10 or 30 seconds (high resolution) or any positive
/// multiple of 60 seconds that fits the API's 32-bit `Period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period(u32);

impl Period {
    /// The high-resolution periods, in seconds.
    pub const SUB_MINUTE: [u32; 4] = [1, 5, 10, 30];

    /// The period of `seconds`, if CloudWatch accepts it.
    pub fn new(seconds: i64) -> Option<Period> {
        let s = u32::try_from(seconds).ok()?;
        let fits_api = i32::try_from(s).is_ok();
        let valid = Self::SUB_MINUTE.contains(&s) || (s > 0 && s.is_multiple_of(60));
        (valid && fits_api).then_some(Period(s))
    }

    /// Seconds.
    pub fn seconds(self) -> u32 {
        self.0
    }

    /// Milliseconds (at most about 2.1 × 10^12, so no arithmetic on it overflows a `u64`
    /// together with a [`WallClock`]).
    pub fn millis(self) -> u64 {
        u64::from(self.0) * 1_000
    }

    /// Whether this is a high-resolution period (under a minute).
    pub fn is_sub_minute(self) -> bool {
        self.0 < 60
    }
}

/// A valid time window: `StartTime` strictly before `EndTime`, both within
/// [`WallClock`]'s range (1970 through 9999; AWS accepts nothing earlier, and later
/// instants do not exist for it either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    start: WallClock,
    end: WallClock,
}

/// Why a request's time window cannot be inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidRange {
    /// `StartTime` or `EndTime` is absent.
    Missing,
    /// A time is before 1970 or after 9999.
    OutOfRange,
    /// `EndTime` is not after `StartTime`.
    Empty,
}

impl TimeRange {
    /// The window `[start_ms, end_ms)`, validated.
    pub fn new(start_ms: Option<i64>, end_ms: Option<i64>) -> Result<TimeRange, InvalidRange> {
        let (Some(start_ms), Some(end_ms)) = (start_ms, end_ms) else {
            return Err(InvalidRange::Missing);
        };
        let start = WallClock::from_unix_millis(start_ms).ok_or(InvalidRange::OutOfRange)?;
        let end = WallClock::from_unix_millis(end_ms).ok_or(InvalidRange::OutOfRange)?;
        if end <= start {
            return Err(InvalidRange::Empty);
        }
        Ok(TimeRange { start, end })
    }

    /// `StartTime` as given (inclusive).
    pub fn start(self) -> WallClock {
        self.start
    }

    /// `EndTime` (exclusive).
    pub fn end(self) -> WallClock {
        self.end
    }
}

/// The cap on one page's datapoints: `MaxDatapoints` when it is a valid value (1 through
/// [`MAX_PAGE_DATAPOINTS`]), else [`MAX_PAGE_DATAPOINTS`]. A value of 0 or below is
/// invalid (AWS refuses it), and a larger one is capped: AWS never returns more than
/// 100,800 datapoints in a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageCap(u32);

impl PageCap {
    /// The cap of a request's `MaxDatapoints`.
    pub fn new(max_datapoints: Option<i64>) -> PageCap {
        let valid = max_datapoints
            .and_then(|m| u32::try_from(m).ok())
            .filter(|&m| m >= 1);
        PageCap(valid.map_or(MAX_PAGE_DATAPOINTS, |m| m.min(MAX_PAGE_DATAPOINTS)))
    }

    /// Datapoints.
    pub fn datapoints(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cloudwatch_periods_are_valid() {
        for s in [1, 5, 10, 30, 60, 120, 300, 3_600, 86_400, 2_147_483_640] {
            assert_eq!(Period::new(s).map(Period::seconds), Some(s as u32), "{s}");
        }
        for s in [
            0,
            -60,
            2,
            15,
            59,
            61,
            90,
            86_401,
            2_147_483_700,
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(Period::new(s), None, "{s}");
        }
    }

    #[test]
    fn a_window_needs_both_times_in_range_and_end_after_start() {
        assert_eq!(TimeRange::new(None, Some(1)), Err(InvalidRange::Missing));
        assert_eq!(TimeRange::new(Some(0), None), Err(InvalidRange::Missing));
        assert_eq!(
            TimeRange::new(Some(-1), Some(1)),
            Err(InvalidRange::OutOfRange)
        );
        assert_eq!(
            TimeRange::new(Some(0), Some(i64::MAX)),
            Err(InvalidRange::OutOfRange)
        );
        assert_eq!(TimeRange::new(Some(5), Some(5)), Err(InvalidRange::Empty));
        assert_eq!(TimeRange::new(Some(6), Some(5)), Err(InvalidRange::Empty));
        let r = TimeRange::new(Some(5), Some(6)).unwrap();
        assert_eq!((r.start().unix_millis(), r.end().unix_millis()), (5, 6));
    }

    #[test]
    fn max_datapoints_caps_the_page_when_valid_and_never_above_100800() {
        let cases: &[(Option<i64>, u32)] = &[
            (None, 100_800),
            (Some(0), 100_800),
            (Some(-1), 100_800),
            (Some(i64::MIN), 100_800),
            (Some(1), 1),
            (Some(7_000), 7_000),
            (Some(100_800), 100_800),
            (Some(100_801), 100_800),
            (Some(i64::MAX), 100_800),
        ];
        for &(given, cap) in cases {
            assert_eq!(PageCap::new(given).datapoints(), cap, "{given:?}");
        }
    }
}
