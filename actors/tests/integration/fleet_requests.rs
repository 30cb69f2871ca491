//! Requests per key flat in the busy hosts (issue 23, item 6), in paused time over the
//! in-memory table: 8 or 16 hosts busy on one key at 200/s burst 20 stay within 10 table
//! requests per simulated second for the key, and the bound holds. Also with a table that
//! takes a round trip per request (as dynalite or DynamoDB does): there hosts race, and
//! a block's first tokens must still be open when its answer arrives. Before blocks were
//! placed for the writer's round trip, 16 hosts on a 100 ms table admitted nothing (every
//! first token closed on arrival, blocks never grew) and made 148 requests/s, 975 writes
//! lost in 15 s; real processes on a loaded dynalite: 34.6 requests/s in the steady
//! state, 433 of 512 writes lost.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::fleet::MemoryFleetStore;
use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionError, AdmissionHandle, FleetSetup,
    RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::fleet::{FleetConfig, OnError};
use tollgate_quota::{Clock, Outcome, Owner, Policy, QuotaKey, Timestamp};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:GetKeyLastUsage"
        .parse()
        .unwrap()
}

fn host(store: &Arc<MemoryFleetStore>, clock: &Arc<TokioClock>, id: u32) -> AdmissionHandle {
    let config = RuntimeConfig {
        fleet: Some(FleetSetup {
            store: store.clone(),
            config: FleetConfig {
                on_error: OnError::Stop,
                ..FleetConfig::default()
            },
            host: format!("host-{id}"),
        }),
        ..RuntimeConfig::simulated(Owner {
            pid: id,
            generation: 1,
        })
    };
    start_in_current_system(config, clock.clone())
}

/// `hosts` hosts, one caller each, busy on one key at 200/s burst 20 for 30 s: checks the
/// bucket bound over every interval and that the hosts still use the rate; returns the
/// table requests per simulated second from 10 s to 25 s.
fn busy_hosts(hosts: u32, round_trip: Duration) -> f64 {
    let (rate, burst) = (200.0, 20.0);
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::with_latency(round_trip));
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(rate, burst, 10, 4).unwrap();
        let end = START + Duration::from_secs(30);
        let mut tasks = Vec::new();
        for i in 1..=hosts {
            let (h, clock) = (host(&store, &clock, i), clock.clone());
            tasks.push(actix::spawn(async move {
                let (mut at, mut timed_out) = (Vec::new(), 0u32);
                while clock.now() < end {
                    let slot = h
                        .reserve(&key(), policy, WaitOptions::default())
                        .await
                        .unwrap();
                    match slot.admit(1, false, WaitOptions::default()).await {
                        Ok(grant) => {
                            slot.feedback(Outcome::Success, &grant);
                            at.push(grant.admitted_at);
                        }
                        Err(AdmissionError::DeadlineExceeded { .. }) => timed_out += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                (at, timed_out)
            }));
        }
        // Count the table's requests per simulated second once every host is busy.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (from, at_from, lost_from) = (clock.now(), store.requests(), store.conflicts());
        tokio::time::sleep(Duration::from_secs(15)).await;
        let lost = store.conflicts() - lost_from;
        let per_second =
            (store.requests() - at_from) as f64 / clock.now().saturating_since(from).as_secs_f64();
        let (mut admitted, mut timed_out): (Vec<Timestamp>, u32) = (Vec::new(), 0);
        for t in tasks {
            let (at, late) = t.await.unwrap();
            admitted.extend(at);
            timed_out += late;
        }
        admitted.sort();
        let steady = admitted
            .iter()
            .filter(|t| {
                **t >= START + Duration::from_secs(10) && **t < START + Duration::from_secs(25)
            })
            .count() as f64
            / 15.0;
        eprintln!(
            "{hosts} hosts at {rate}/s burst {burst}, round trip {round_trip:?}: {per_second:.2} \
             table requests/s for the key ({lost} writes lost in 15 s), {steady:.1} admissions/s, \
             {} admissions in all, {timed_out} callers past their deadline",
            admitted.len()
        );
        assert_eq!(timed_out, 0, "callers waited past their deadline");
        assert!(per_second <= 10.0, "{per_second} table requests/s");
        assert!(
            steady >= 0.9 * rate,
            "the hosts still use the rate: {steady}/s"
        );
        for i in 0..admitted.len() {
            for j in i..admitted.len() {
                let l = admitted[j].saturating_since(admitted[i]).as_secs_f64();
                let n = (j - i + 1) as f64;
                assert!(n <= burst + rate * l + 1e-6, "{n} admissions in {l} s");
            }
        }
        per_second
    })
}

#[test]
fn sixteen_busy_hosts_stay_within_ten_table_requests_a_second_for_the_key_and_the_bound() {
    let per_second = busy_hosts(16, Duration::ZERO);
    assert!(per_second <= 10.0, "{per_second} table requests/s");
}

#[test]
fn eight_busy_hosts_stay_within_ten_table_requests_a_second_for_the_key_and_the_bound() {
    let per_second = busy_hosts(8, Duration::ZERO);
    assert!(per_second <= 10.0, "{per_second} table requests/s");
}

#[test]
fn sixteen_busy_hosts_on_a_table_with_a_round_trip_stay_within_ten_requests_a_second_and_the_bound()
{
    let per_second = busy_hosts(16, Duration::from_millis(100));
    assert!(per_second <= 10.0, "{per_second} table requests/s");
}

/// What [`hosts_starting_together`] measured.
struct StartUp {
    /// Table requests (and writes lost) in the first 3 s after the callers begin.
    first_requests: u64,
    first_lost: u64,
    /// Table requests in all, and the seconds from the start to the last admission.
    requests: u64,
    took: f64,
}

/// `hosts` hosts whose coordinators start at the same instant, one caller each asking
/// for `each` admissions back to back on one key at 200/s burst 20 over a table with a
/// `round_trip`; checks the bucket bound over every interval of the merged admissions.
fn hosts_starting_together(hosts: u32, each: usize, round_trip: Duration) -> StartUp {
    let (rate, burst) = (200.0, 20.0);
    paused_system().block_on(async {
        let store = Arc::new(MemoryFleetStore::with_latency(round_trip));
        let clock = Arc::new(TokioClock::starting_at(START));
        let policy = Policy::new(rate, burst, 10, 4).unwrap();
        let mut tasks = Vec::new();
        for i in 1..=hosts {
            let h = host(&store, &clock, i);
            tasks.push(actix::spawn(async move {
                let mut at = Vec::new();
                while at.len() < each {
                    let slot = h
                        .reserve(&key(), policy, WaitOptions::default())
                        .await
                        .unwrap();
                    let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
                    slot.feedback(Outcome::Success, &grant);
                    at.push(grant.admitted_at);
                }
                at
            }));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (first_requests, first_lost) = (store.requests(), store.conflicts());
        let mut admitted: Vec<Timestamp> = Vec::new();
        for t in tasks {
            admitted.extend(t.await.unwrap());
        }
        admitted.sort();
        let took = admitted
            .last()
            .map_or(0.0, |t| t.saturating_since(START).as_secs_f64());
        let requests = store.requests();
        let ideal = ((hosts as usize * each) as f64 - burst) / rate;
        eprintln!(
            "{hosts} hosts starting together at {rate}/s burst {burst}, round trip \
             {round_trip:?}: first 3 s {first_requests} table requests ({first_lost} writes \
             lost); {requests} in all for {} admissions in {took:.2} s (ideal {ideal:.2} s): \
             {:.2} requests/s",
            admitted.len(),
            requests as f64 / took
        );
        for i in 0..admitted.len() {
            for j in i..admitted.len() {
                let l = admitted[j].saturating_since(admitted[i]).as_secs_f64();
                let n = (j - i + 1) as f64;
                assert!(n <= burst + rate * l + 1e-6, "{n} admissions in {l} s");
            }
        }
        StartUp {
            first_requests,
            first_lost,
            requests,
            took,
        }
    })
}

/// Hosts that start together must first take a block each: a read and a write per host
/// at the least. A write loses only when another lands within its round trip, so with
/// the losers spread out (`conflict_backoff`) a host loses about one or two writes in
/// its first seconds, each costing a write and a read again: at most 3 lost per host and
/// 2 + 2·3 = 8 requests per host in the first 3 s. Over the run, issue 23's bound: 10
/// requests/s for the key. Before this start-up work, on a 20 ms table: 620 requests
/// (39 per host) and 250 writes lost in the first 3 s, 27.95/s over the run, all admitted
/// in 23.9 s (2.01 × the ideal), each of which fails here.
fn check_start_up(s: &StartUp, hosts: u32, ideal: f64) {
    let hosts = u64::from(hosts);
    assert!(
        s.first_requests <= 8 * hosts,
        "{} requests in the first 3 s",
        s.first_requests
    );
    assert!(
        s.first_lost <= 3 * hosts,
        "{} writes lost in the first 3 s",
        s.first_lost
    );
    let per_second = s.requests as f64 / s.took;
    assert!(per_second <= 10.0, "{per_second} requests/s over the run");
    assert!(
        s.took <= 1.9 * ideal,
        "{} s to admit all, ideal {ideal} s",
        s.took
    );
}

#[test]
fn sixteen_hosts_starting_at_the_same_instant_make_few_requests_in_their_first_seconds_and_keep_the_bound(
) {
    let s = hosts_starting_together(16, 150, Duration::from_millis(20));
    check_start_up(&s, 16, 11.9);
}

#[test]
fn sixteen_hosts_starting_at_the_same_instant_on_a_slow_table_make_few_requests_and_keep_the_bound()
{
    let s = hosts_starting_together(16, 150, Duration::from_millis(100));
    check_start_up(&s, 16, 11.9);
}
