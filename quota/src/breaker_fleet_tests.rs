//! Table tests of the fleet breaker rules, on simulated time.

use super::*;
use crate::breaker::{BASE_OPEN, MIN_REOPEN, PROBE_LEASE};

fn at(secs: u64) -> Timestamp {
    Timestamp::from_millis(secs * 1_000)
}

fn opened(since: u64, until: u64) -> FleetBreaker {
    FleetBreaker {
        failing_since: Some(at(since)),
        open_until: at(until),
        openings: 1,
        probe: None,
        written_at: at(since),
    }
}

#[test]
fn an_opening_writes_a_missing_or_closed_item() {
    for item in [None, Some(FleetBreaker::default())] {
        let change = publish_opening(item.as_ref(), at(10), BASE_OPEN);
        let written = change.write.expect("written");
        assert_eq!(written.failing_since, Some(at(10)));
        assert_eq!(written.open_until, at(15));
        assert_eq!(written.openings, 1);
    }
}

#[test]
fn an_opening_adopts_an_item_already_failing_instead_of_writing() {
    let item = opened(3, 8);
    let change = publish_opening(Some(&item), at(10), BASE_OPEN);
    assert_eq!(change.write, None);
    assert_eq!(
        change.answer,
        FleetBreakerView::Failing {
            failing_since: at(3),
            until: at(8),
            probe: None
        }
    );
}

#[test]
fn a_probe_claim_wins_only_a_half_open_item_with_a_free_or_lapsed_lease() {
    let lease = PROBE_LEASE;
    let held = FleetBreaker {
        probe: Some(FleetProbe {
            host: "b".into(),
            until: at(70),
        }),
        ..opened(0, 5)
    };
    let cases: Vec<(Option<FleetBreaker>, &str, u64, ProbeClaim)> = vec![
        (None, "a", 10, ProbeClaim::Closed),
        (Some(FleetBreaker::default()), "a", 10, ProbeClaim::Closed),
        (
            Some(opened(0, 20)),
            "a",
            10,
            ProbeClaim::Open {
                failing_since: at(0),
                until: at(20),
            },
        ),
        (
            Some(opened(0, 5)),
            "a",
            10,
            ProbeClaim::Won {
                until: at(10) + lease,
            },
        ),
        (
            Some(held.clone()),
            "a",
            10,
            ProbeClaim::Held { until: at(70) },
        ),
        (
            Some(held.clone()),
            "b",
            10,
            ProbeClaim::Won {
                until: at(10) + lease,
            },
        ),
        (
            Some(held),
            "a",
            70,
            ProbeClaim::Won {
                until: at(70) + lease,
            },
        ),
    ];
    for (item, host, now, expected) in cases {
        let change = claim_probe(item.as_ref(), host, at(now), lease);
        assert_eq!(change.answer, expected, "{item:?} {host} at {now}");
        match expected {
            ProbeClaim::Won { until } => {
                let written = change.write.expect("a won claim is written");
                assert_eq!(
                    written.probe,
                    Some(FleetProbe {
                        host: host.into(),
                        until
                    })
                );
            }
            _ => assert_eq!(change.write, None, "only a won claim writes"),
        }
    }
}

#[test]
fn a_successful_probe_closes_the_item() {
    let change = publish_answer(Some(&opened(0, 5)), true, at(0), at(6));
    assert_eq!(change.answer, FleetBreakerView::Closed);
    assert_eq!(change.write.unwrap().failing_since, None);
}

#[test]
fn a_failed_probe_reopens_for_a_tenth_of_the_failures_age() {
    let change = publish_answer(Some(&opened(0, 95)), false, at(50), at(100));
    let written = change.write.unwrap();
    assert_eq!(written.failing_since, Some(at(0)), "the item's start wins");
    assert_eq!(written.open_until, at(110));
    assert_eq!(written.openings, 2);
    assert_eq!(written.probe, None);
}

#[test]
fn a_failed_probe_keeps_a_later_reopening_someone_already_wrote() {
    let change = publish_answer(Some(&opened(0, 200)), false, at(0), at(100));
    let written = change.write.unwrap();
    assert_eq!(written.open_until, at(200));
    assert_eq!(written.openings, 1, "no new opening counted");
}

#[test]
fn a_failed_probe_on_a_closed_item_opens_it_from_the_hosts_own_start() {
    let change = publish_answer(None, false, at(0), at(100));
    let written = change.write.unwrap();
    assert_eq!(written.failing_since, Some(at(0)));
    assert_eq!(written.open_until, at(110));
}

#[test]
fn a_failing_item_nobody_probed_for_the_longest_opening_reads_as_closed() {
    let item = opened(0, 5);
    assert!(matches!(
        item.view(at(5 + 599)),
        FleetBreakerView::Failing { .. }
    ));
    assert_eq!(item.view(at(5 + 600)), FleetBreakerView::Closed);
    // and its age does not stretch the next opening: a new failure starts afresh
    let change = publish_opening(Some(&item), at(3_600), BASE_OPEN);
    assert_eq!(change.write.unwrap().failing_since, Some(at(3_600)));
    let change = publish_answer(Some(&item), false, at(3_590), at(3_600));
    let written = change.write.unwrap();
    // a failed probe's re-opening: the shortest one (MIN_REOPEN), not stretched by age
    assert_eq!(written.open_until, at(3_600) + MIN_REOPEN);
    assert_eq!(written.openings, 1);
}
