//! The report's `throttling` block, built from one scan's tallies: counters per key,
//! totals, one line a person can read per eventful key, the slowed keys and the breakers.
//!
//! Pure: the tallies come in (counted from attempt events, rates and breaker states
//! observed from the admission runtime while the scan ran), the block goes out, `None`
//! when nothing eventful happened (seed 001: "`null` unless something eventful
//! happened"). The wording follows seed 001's messages, with tollgate's units (`/s`).

use std::collections::BTreeMap;

use tollgate_quota::datapoints::{DatapointBudget, DATAPOINTS_SERVICE};

use crate::report::{
    BreakerSummary, KeyThrottling, SlowedKey, ThrottlingSummary, ThrottlingTotals,
};

/// What one scan learnt of one key.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct KeyTally {
    /// Counted from attempt events.
    pub counters: KeyThrottling,
    /// The lowest effective rate observed while the scan ran.
    pub lowest_rate: Option<f64>,
    /// The key's policy rate, as observed.
    pub policy_rate: Option<f64>,
}

impl KeyTally {
    /// The rate tollgate slowed the key to, when it was cut below its policy.
    fn slowed(&self) -> Option<(f64, f64)> {
        match (self.lowest_rate, self.policy_rate) {
            (Some(low), Some(policy)) if low < policy * (1.0 - 1e-9) => Some((low, policy)),
            _ => None,
        }
    }
}

/// What one scan saw of one breaker scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BreakerTally {
    /// `closed`, `open` or `half_open`, as last observed.
    pub state: &'static str,
    /// Openings observed (a closed or half-open breaker seen open).
    pub openings: u64,
}

/// The block for one scan, `None` when nothing eventful happened.
pub(crate) fn summarize(
    keys: &BTreeMap<String, KeyTally>,
    breakers: &BTreeMap<String, BreakerTally>,
) -> Option<ThrottlingSummary> {
    let mut totals = ThrottlingTotals::default();
    // A datapoint budget's counts repeat its GetMetricData calls' (`ScanTelemetry`).
    let counted = keys.iter().filter(|(key, _)| !is_datapoint_budget(key));
    for (_, tally) in counted {
        let c = &tally.counters;
        totals.calls += c.calls;
        totals.throttled += c.throttled_responses;
        totals.transient_errors += c.transient_errors;
        totals.retries += c.retries;
        totals.gave_up += c.gave_up_calls;
        totals.rejected += c.rejected;
        totals.wait_seconds += c.wait_seconds;
    }
    totals.wait_seconds = round3(totals.wait_seconds);
    totals.breaker_trips = breakers.values().map(|b| b.openings).sum();
    let eventful: BTreeMap<String, KeyThrottling> = keys
        .iter()
        .filter(|(_, t)| !t.counters.is_quiet())
        .map(|(k, t)| {
            let mut counters = t.counters;
            counters.wait_seconds = round3(counters.wait_seconds);
            (k.clone(), counters)
        })
        .collect();
    let breakers: BTreeMap<String, BreakerSummary> = breakers
        .iter()
        .filter(|(_, b)| b.openings > 0 || b.state != "closed")
        .map(|(scope, b)| {
            let summary = BreakerSummary {
                state: b.state.to_string(),
                openings: b.openings,
            };
            (scope.clone(), summary)
        })
        .collect();
    if eventful.is_empty() && breakers.is_empty() {
        return None;
    }
    let messages = keys
        .iter()
        .filter(|(_, t)| !t.counters.is_quiet())
        .map(|(key, tally)| message(key, tally))
        .collect();
    let slowed = keys
        .iter()
        .filter_map(|(key, tally)| {
            let (low, policy) = tally.slowed()?;
            let slowed = SlowedKey {
                effective_rate_per_second: low,
                policy_rate_per_second: policy,
                throttles: tally.counters.throttled_responses,
            };
            Some((key.clone(), slowed))
        })
        .collect();
    Some(ThrottlingSummary {
        keys: eventful,
        totals,
        messages,
        slowed,
        breakers,
    })
}

/// Whether `key` is a GetMetricData datapoint budget (`…:GetMetricData:recent-datapoints`
/// or `…:older-datapoints`).
fn is_datapoint_budget(key: &str) -> bool {
    [DatapointBudget::Recent, DatapointBudget::Older]
        .iter()
        .any(|b| key.ends_with(&format!("/{}:{}", DATAPOINTS_SERVICE, b.group())))
}

/// One readable line for an eventful key: `KEY: throttled 11×, slowed to 1.25/s (policy
/// 5/s), 10 retries, 1 call gave up`; a key with nothing but a long queue: `KEY: waited
/// 418.6 s for rate limit`.
pub(crate) fn message(key: &str, tally: &KeyTally) -> String {
    let c = &tally.counters;
    let mut parts = Vec::new();
    if c.throttled_responses > 0 {
        parts.push(format!("throttled {}×", c.throttled_responses));
    }
    if c.transient_errors > 0 {
        parts.push(count(
            c.transient_errors,
            "transient error",
            "transient errors",
        ));
    }
    if let Some((low, policy)) = tally.slowed() {
        parts.push(format!(
            "slowed to {}/s (policy {}/s)",
            rate(low),
            rate(policy)
        ));
    }
    if c.retries > 0 {
        parts.push(count(c.retries, "retry", "retries"));
    }
    if c.gave_up_calls > 0 {
        parts.push(count(c.gave_up_calls, "call gave up", "calls gave up"));
    }
    if c.rejected > 0 {
        parts.push(count(
            c.rejected,
            "call refused by an open breaker",
            "calls refused by an open breaker",
        ));
    }
    if parts.is_empty() || c.wait_seconds >= crate::report::LONG_WAIT_SECONDS {
        parts.push(format!("waited {:.1} s for rate limit", c.wait_seconds));
    }
    format!("{key}: {}", parts.join(", "))
}

fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A rate without trailing zeros: `5`, `1.25`, `0.156`.
fn rate(r: f64) -> String {
    let text = format!("{r:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const KMS: &str = "aws/123456789012/us-east-1/kms:GetKeyLastUsage";

    fn tally(throttled: u64, retries: u64, gave_up: u64, wait: f64) -> KeyTally {
        KeyTally {
            counters: KeyThrottling {
                throttled_responses: throttled,
                retries,
                gave_up_calls: gave_up,
                calls: 20,
                wait_seconds: wait,
                ..KeyThrottling::default()
            },
            lowest_rate: None,
            policy_rate: Some(5.0),
        }
    }

    #[test]
    fn each_eventful_key_reads_as_one_line() {
        let slowed = KeyTally {
            lowest_rate: Some(1.25),
            ..tally(11, 10, 1, 2.0)
        };
        let transient = KeyTally {
            counters: KeyThrottling {
                transient_errors: 2,
                retries: 2,
                rejected: 3,
                ..KeyThrottling::default()
            },
            ..KeyTally::default()
        };
        #[rustfmt::skip]
        let table: &[(&str, KeyTally, &str)] = &[
            ("throttled and slowed", slowed,
             "throttled 11×, slowed to 1.25/s (policy 5/s), 10 retries, 1 call gave up"),
            ("throttled once, recovered before anyone looked", tally(1, 1, 0, 0.0),
             "throttled 1×, 1 retry"),
            ("transient and refused by a breaker", transient,
             "2 transient errors, 2 retries, 3 calls refused by an open breaker"),
            ("only a long queue", tally(0, 0, 0, 418.62),
             "waited 418.6 s for rate limit"),
            ("a long queue beside throttles", tally(2, 2, 0, 45.0),
             "throttled 2×, 2 retries, waited 45.0 s for rate limit"),
        ];
        for (case, tally, want) in table {
            assert_eq!(message(KMS, tally), format!("{KMS}: {want}"), "{case}");
        }
    }

    #[test]
    fn a_scan_with_nothing_eventful_has_no_block() {
        let mut keys = BTreeMap::new();
        keys.insert(KMS.to_string(), tally(0, 0, 0, 9.0));
        assert_eq!(summarize(&keys, &BTreeMap::new()), None);
        let closed = BreakerTally {
            state: "closed",
            openings: 0,
        };
        let breakers = BTreeMap::from([("aws/123456789012/us-east-1/kms".to_string(), closed)]);
        assert_eq!(summarize(&keys, &breakers), None);
    }

    #[test]
    fn the_block_has_keys_totals_messages_slowed_and_breakers() {
        let mut keys = BTreeMap::new();
        keys.insert(
            KMS.to_string(),
            KeyTally {
                lowest_rate: Some(1.25),
                ..tally(11, 10, 1, 3.5)
            },
        );
        keys.insert(
            "aws/123456789012/us-east-1/s3:ListBuckets".to_string(),
            tally(0, 0, 0, 0.25),
        );
        let breakers = BTreeMap::from([(
            "aws/123456789012/us-east-1/kms".to_string(),
            BreakerTally {
                state: "closed",
                openings: 2,
            },
        )]);
        let block = summarize(&keys, &breakers).expect("eventful");
        assert_eq!(block.keys.len(), 1, "quiet keys stay out of `keys`");
        assert_eq!(block.totals.calls, 40, "totals count every key");
        assert_eq!(block.totals.throttled, 11);
        assert_eq!(block.totals.retries, 10);
        assert_eq!(block.totals.gave_up, 1);
        assert_eq!(block.totals.breaker_trips, 2);
        assert_eq!(block.totals.wait_seconds, 3.75);
        assert_eq!(block.messages.len(), 1);
        assert!(block.messages[0].contains("slowed to 1.25/s"), "{block:?}");
        assert_eq!(
            block.slowed[KMS],
            SlowedKey {
                effective_rate_per_second: 1.25,
                policy_rate_per_second: 5.0,
                throttles: 11
            }
        );
        assert_eq!(block.breakers["aws/123456789012/us-east-1/kms"].openings, 2);
    }

    #[test]
    fn rates_print_without_trailing_zeros() {
        assert_eq!(rate(5.0), "5");
        assert_eq!(rate(1.25), "1.25");
        assert_eq!(rate(0.15625), "0.156");
    }
}
