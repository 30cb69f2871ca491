//! The proxy's timeline split by phase, so that a short run's start-up does not pass for
//! the steady rate: `start-up` is everything before the workers begin (each coordinator
//! joining, no admissions yet), `first` the first [`FIRST_WINDOW`] after they begin (every
//! host's first read and its slow start while it learns the hosts seen), `steady` from
//! then to the last grant. Each phase counts requests by kind and the conditional writes
//! lost to another host (`ConditionalCheckFailedException` answers, each also one of the
//! writes counted), and the steady phase gives the requests per second for the key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// The part of the run after the workers begin that is counted as start-up, not steady.
pub const FIRST_WINDOW: Duration = Duration::from_secs(3);

/// One phase's requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Phase {
    pub from_s: f64,
    pub to_s: f64,
    pub requests: u64,
    pub by_target: BTreeMap<String, u64>,
    pub conditional_failures: u64,
    pub requests_per_s: f64,
}

/// The three phases, seconds relative to the workers' start.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Phases {
    pub start_up: Phase,
    pub first: Phase,
    pub steady: Phase,
}

/// Split `timeline` ((Unix µs, target)) and `failures` (Unix µs) at `start_us` (the
/// workers begin), `start_us + FIRST_WINDOW` and `end_us` (the last grant); requests after
/// the last grant (coordinators leaving) count in no phase's rate but the steady count.
pub fn split(timeline: &[(u64, String)], failures: &[u64], start_us: u64, end_us: u64) -> Phases {
    let first_end = start_us + FIRST_WINDOW.as_micros() as u64;
    let rel = |us: u64| (us as f64 - start_us as f64) / 1e6;
    let earliest = timeline.iter().map(|(t, _)| *t).min().unwrap_or(start_us);
    let mut phases = Phases {
        start_up: Phase {
            from_s: rel(earliest.min(start_us)),
            to_s: 0.0,
            ..Phase::default()
        },
        first: Phase {
            from_s: 0.0,
            to_s: rel(first_end.min(end_us.max(start_us))),
            ..Phase::default()
        },
        steady: Phase {
            from_s: rel(first_end),
            to_s: rel(end_us.max(first_end)),
            ..Phase::default()
        },
    };
    let phase_of = |at: u64| {
        if at < start_us {
            0
        } else if at < first_end {
            1
        } else {
            2
        }
    };
    for (at, target) in timeline {
        let p = match phase_of(*at) {
            0 => &mut phases.start_up,
            1 => &mut phases.first,
            _ => &mut phases.steady,
        };
        p.requests += 1;
        *p.by_target.entry(target.clone()).or_default() += 1;
    }
    for at in failures {
        match phase_of(*at) {
            0 => phases.start_up.conditional_failures += 1,
            1 => phases.first.conditional_failures += 1,
            _ => phases.steady.conditional_failures += 1,
        }
    }
    for p in [&mut phases.start_up, &mut phases.first, &mut phases.steady] {
        let span = p.to_s - p.from_s;
        p.requests_per_s = if span > 0.0 {
            p.requests as f64 / span
        } else {
            0.0
        };
    }
    phases
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn at(s: f64, target: &str) -> (u64, String) {
        ((100.0 * S as f64 + s * S as f64) as u64, target.to_owned())
    }

    #[test]
    fn requests_are_split_at_the_start_the_first_window_and_the_steady_state() {
        let timeline = [
            at(-1.0, "GetItem"),
            at(0.5, "GetItem"),
            at(0.6, "PutItem"),
            at(2.9, "PutItem"),
            at(3.0, "GetItem"),
            at(5.0, "PutItem"),
            at(12.0, "PutItem"),
            at(12.9, "PutItem"),
        ];
        let failures = [100 * S + S / 2, 105 * S];
        let p = split(&timeline, &failures, 100 * S, 113 * S);
        assert_eq!((p.start_up.requests, p.start_up.from_s), (1, -1.0));
        assert_eq!(p.first.requests, 3);
        assert_eq!(p.first.by_target["PutItem"], 2);
        assert_eq!(p.first.conditional_failures, 1);
        assert_eq!((p.steady.from_s, p.steady.to_s), (3.0, 13.0));
        assert_eq!(p.steady.requests, 4);
        assert_eq!(p.steady.conditional_failures, 1);
        assert!((p.steady.requests_per_s - 0.4).abs() < 1e-9);
    }

    #[test]
    fn a_run_shorter_than_the_first_window_has_an_empty_steady_state() {
        let timeline = [at(0.5, "GetItem"), at(1.0, "PutItem")];
        let p = split(&timeline, &[], 100 * S, 101 * S + S / 2);
        assert_eq!(p.first.requests, 2);
        assert_eq!(p.steady.requests, 0);
        assert_eq!(p.steady.requests_per_s, 0.0);
    }
}
