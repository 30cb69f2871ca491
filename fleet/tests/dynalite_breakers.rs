//! The fleet's breaker items on DynamoDB, against dynalite: concurrent hosts racing for
//! the one probe of a half-open scope (exactly one wins), racing to publish an opening
//! (one write, every host answered the same opening), and a probe's answer closing it.
//!
//! `scripts/test` starts dynalite on loopback and exports `TOLLGATE_TEST_DYNALITE_URL`;
//! without it these tests fail with instructions. Each test uses its own table. Time is a
//! manual clock, so every instant is exact.

mod common;

use std::sync::Arc;

use tollgate_actors::fleet::breakers::update;
use tollgate_actors::fleet::{BreakerStore, FleetErrorKind};
use tollgate_fleet::settings::FleetSettings;
use tollgate_fleet::DynamoFleetStore;
use tollgate_quota::breaker::PROBE_LEASE;
use tollgate_quota::breaker_fleet::{
    claim_probe, publish_answer, publish_opening, Change, FleetBreaker, FleetBreakerView,
    ProbeClaim,
};
use tollgate_quota::fleet::FleetConfig;
use tollgate_quota::{BreakerScope, Clock, Timestamp, BASE_OPEN};
use tollgate_testkit::{block_on_local, dynalite_url, emulator_credentials, unique_table};

use common::ManualClock;

const T0: u64 = 1_700_000_000_000_000;

fn store_at(table: &str, endpoint: &str) -> DynamoFleetStore {
    emulator_credentials();
    DynamoFleetStore::new(FleetSettings {
        table: table.to_string(),
        region: Some("us-east-1".into()),
        endpoint_url: Some(endpoint.to_string()),
        config: FleetConfig::default(),
    })
}

async fn new_table(name: &str) -> DynamoFleetStore {
    let store = store_at(&unique_table(name), &dynalite_url());
    assert!(
        tollgate_fleet::table::create_table(&store)
            .await
            .unwrap()
            .created
    );
    store
}

fn scope() -> BreakerScope {
    BreakerScope::of(&"aws/123456789012/eu-west-1/ec2:describe".parse().unwrap())
}

/// A rule for one host.
type Rule<T> = Box<dyn Fn(Option<&FleetBreaker>, Timestamp) -> Change<T>>;

/// `hosts` hosts run `rule` on the scope's item at once; their answers.
async fn race<T: 'static>(
    store: &DynamoFleetStore,
    clock: &Arc<ManualClock>,
    hosts: usize,
    rule: impl Fn(usize) -> Rule<T>,
) -> Vec<T> {
    let tasks: Vec<_> = (0..hosts)
        .map(|h| {
            let store: Arc<dyn BreakerStore> = Arc::new(store.clone());
            let clock: Arc<dyn Clock> = clock.clone();
            let rule = rule(h);
            tokio::task::spawn_local(async move { update(store, scope(), clock, rule).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(answer) => out.push(answer),
            // Four writes lost in a row: possible for a host in an 8-way race; it reads
            // again next time. Counted by the callers' totals.
            Err(e) if e.kind == FleetErrorKind::Contention => {}
            Err(e) => panic!("{e}"),
        }
    }
    out
}

#[test]
fn hosts_racing_to_publish_an_opening_make_one_opening_and_all_take_it() {
    block_on_local(async {
        let store = new_table("brk-open").await;
        let clock = ManualClock::at(T0);
        let answers = race(&store, &clock, 6, |_| {
            Box::new(|item, now| publish_opening(item, now, BASE_OPEN))
        })
        .await;
        let item = store.get_breaker(&scope()).await.unwrap().unwrap();
        assert_eq!(item.version, 1, "exactly one opening was written");
        assert_eq!(item.item.openings, 1);
        let t0 = Timestamp::from_micros(T0);
        for answer in &answers {
            assert_eq!(
                *answer,
                FleetBreakerView::Failing {
                    failing_since: t0,
                    until: t0 + BASE_OPEN,
                    probe: None
                }
            );
        }
        assert!(!answers.is_empty());
    });
}

#[test]
fn exactly_one_of_eight_hosts_wins_the_probe_and_its_answer_closes_the_scope() {
    block_on_local(async {
        let store = new_table("brk-probe").await;
        let clock = ManualClock::at(T0);
        race(&store, &clock, 1, |_| {
            Box::new(|item, now| publish_opening(item, now, BASE_OPEN))
        })
        .await;
        // Half-open: the opening has run out.
        let half_open = T0 + BASE_OPEN.as_micros() as u64;
        clock.set(half_open);
        let claims = race(&store, &clock, 8, |h| {
            let host = format!("host-{h}");
            Box::new(move |item, now| claim_probe(item, &host, now, PROBE_LEASE))
        })
        .await;
        let won = claims
            .iter()
            .filter(|c| matches!(c, ProbeClaim::Won { .. }))
            .count();
        assert_eq!(won, 1, "one probe for the fleet: {claims:?}");
        let until = Timestamp::from_micros(half_open) + PROBE_LEASE;
        assert!(
            claims
                .iter()
                .all(|c| matches!(c, ProbeClaim::Won { .. }) || *c == ProbeClaim::Held { until }),
            "the others see the lease: {claims:?}"
        );
        let item = store.get_breaker(&scope()).await.unwrap().unwrap().item;
        let holder = item.probe.expect("the claim is on the item").host;

        // A second round while the lease holds: nobody else wins.
        let again = race(&store, &clock, 8, |h| {
            let host = format!("other-{h}");
            Box::new(move |item, now| claim_probe(item, &host, now, PROBE_LEASE))
        })
        .await;
        assert!(
            again.iter().all(|c| *c == ProbeClaim::Held { until }),
            "{again:?}"
        );

        // The probe succeeds: closed for everyone.
        race(&store, &clock, 1, |_| {
            Box::new(|item, now| publish_answer(item, true, Timestamp::from_micros(T0), now))
        })
        .await;
        let item = store.get_breaker(&scope()).await.unwrap().unwrap().item;
        assert_eq!(item.failing_since, None, "closed (the probe was {holder})");
        let after = race(&store, &clock, 3, |h| {
            let host = format!("host-{h}");
            Box::new(move |item, now| claim_probe(item, &host, now, PROBE_LEASE))
        })
        .await;
        assert!(after.iter().all(|c| *c == ProbeClaim::Closed), "{after:?}");

        // `fleet status` lists quota keys: the breaker item is neither a key nor unreadable.
        let status = tollgate_fleet::status::fleet_status(&store, clock.now())
            .await
            .unwrap();
        assert!(
            status.keys.is_empty() && status.unreadable.is_empty(),
            "{status:?}"
        );
    });
}
