//! The DynamoDB fleet store against dynalite (DESIGN §7 tier 5; never moto, whose
//! conditional writes are not atomic under concurrency).
//!
//! `scripts/test` starts dynalite on loopback and exports `TOLLGATE_TEST_DYNALITE_URL`;
//! without it these tests fail with instructions (a fleet test that silently passes
//! without its emulator would prove nothing). Each test uses its own table.
//!
//! Item time is a manual clock here, so bounds are exact: with the clock held still the
//! horizon admits a known number of due instants, and every grant in a race must take
//! its own of them (atomic conditional writes: no two grants share a due instant).

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;

use tollgate_actors::fleet::{exchange, FleetErrorKind, FleetStore};
use tollgate_fleet::DynamoFleetStore;
use tollgate_quota::fleet::TokenRun;
use tollgate_quota::Timestamp;
use tollgate_testkit::cli::line_after;
use tollgate_testkit::{
    block_on_local, dynalite_url, emulator_credentials, emulator_env, unique_table,
};

use common::blocks::{block, race, settings, T0};
use common::ManualClock;

fn store_at(table: &str, endpoint: &str) -> DynamoFleetStore {
    emulator_credentials();
    DynamoFleetStore::new(settings(table, endpoint))
}

async fn new_table(name: &str) -> DynamoFleetStore {
    let store = store_at(&unique_table(name), &dynalite_url());
    let report = tollgate_fleet::table::create_table(&store).await.unwrap();
    assert!(report.created);
    // dynalite 4 has no UpdateTimeToLive: a warning, not a failure.
    assert!(report.ttl_enabled || report.ttl_warning.is_some());
    store
}

/// The tokens of `runs`, checking that no two runs share a due instant (sorted by due
/// instant, each starts at least one spacing after the previous one's last).
fn disjoint_tokens(runs: &[TokenRun]) -> u64 {
    let mut runs = runs.to_vec();
    runs.sort_by_key(|r| r.first_due);
    for pair in runs.windows(2) {
        assert!(
            pair[1].first_due >= pair[0].last_due() + pair[1].spacing,
            "two grants overlap: {pair:?}"
        );
    }
    runs.iter().map(|r| r.count).sum()
}

#[test]
fn concurrent_block_takers_on_one_item_never_share_a_due_instant() {
    block_on_local(async {
        let store = new_table("race").await;
        let clock = ManualClock::at(T0);
        // Clock held still. 10/s burst 40: due instants from T0 + 200 ms (lead 100 ms +
        // one spacing), 100 ms apart; a grant's first token must open (due − 4 s) within
        // the 2 s horizon, so grants of 3 start at most at T0 + 6 s: 20 grants, 60 tokens.
        // 8 hosts × 6 rounds × 3 wanted = 144 asked.
        let runs = race(&store, &clock, "h", 8, 6).await;
        assert_eq!(
            disjoint_tokens(&runs),
            60,
            "exactly the due instants the horizon allows, each once (atomic writes)"
        );
        // One second later the horizon moves 1 s: 10 more due instants at 10/s, of which
        // grants of 3 take 9.
        clock.set(T0 + 1_000_000);
        let mut all = runs;
        all.extend(race(&store, &clock, "h", 8, 6).await);
        assert_eq!(disjoint_tokens(&all), 69, "after 1 s at 10/s");
    });
}

#[test]
fn block_takers_in_separate_processes_never_exceed_the_horizon() {
    let table = block_on_local(async { new_table("procs").await.settings().table.clone() });
    let children: Vec<_> = (0..4)
        .map(|_| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate-fleet-test-block-taker"));
            emulator_env(&mut cmd)
                .arg(&table)
                .arg(dynalite_url())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut total = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed: {out:?}");
        total += line_after(&out, "GRANTED ").parse::<u64>().unwrap();
    }
    // 4 processes × 2 hosts × 8 rounds × 3 wanted = 192 asked; the clock held still, the
    // horizon allows 60 (see the test above). More would mean two grants shared due
    // instants: a lost update.
    assert_eq!(total, 60);
}

#[test]
fn a_throttle_halves_the_fleet_factor_once_per_cooldown_and_every_host_sees_it() {
    block_on_local(async {
        let store: Arc<dyn FleetStore> = Arc::new(new_table("penalty").await);
        let clock = ManualClock::at(T0);
        let key = "aws/1/us-east-1/s3:ListBuckets".to_string();
        let take = |host: &str, throttled: bool| {
            let mut r = block(host, 1);
            r.throttled = throttled;
            exchange(store.clone(), key.clone(), r, clock.clone(), None)
        };
        let (g, _, _) = take("a", true).await.unwrap();
        assert_eq!(g.factor, 0.5);
        clock.set(T0 + 500_000);
        let (g, _, _) = take("b", true).await.unwrap();
        assert_eq!(
            g.factor, 0.5,
            "a second throttle within the cooldown counts once"
        );
        let (g, _, _) = take("c", false).await.unwrap();
        assert_eq!(g.factor, 0.5, "host c sees the fleet factor");
        clock.set(T0 + 2_100_000);
        let (g, _, _) = take("b", true).await.unwrap();
        assert_eq!(g.factor, 0.25, "after the cooldown a throttle halves again");
    });
}

#[test]
fn the_shared_retry_allowance_empties_fleet_wide() {
    block_on_local(async {
        let store: Arc<dyn FleetStore> = Arc::new(new_table("retry").await);
        let clock = ManualClock::at(T0);
        let key = "aws/1/us-east-1/lambda:ListFunctions".to_string();
        let mut got = 0;
        let mut empty_seen = false;
        for host in ["a", "b", "c", "d"] {
            let mut r = block(host, 1);
            r.retry_want = 2;
            let (g, _, _) = exchange(store.clone(), key.clone(), r, clock.clone(), None)
                .await
                .unwrap();
            got += g.retry_units;
            empty_seen |= g.retry_empty;
        }
        assert_eq!(got, 6, "the capacity, shared");
        assert!(
            empty_seen,
            "the last host learns the fleet's retries are gone"
        );
        // A success reported by any host refunds one unit for everyone.
        let mut r = block("a", 1);
        r.retry_refund = 1;
        r.retry_want = 2;
        let (g, _, _) = exchange(store.clone(), key.clone(), r, clock.clone(), None)
            .await
            .unwrap();
        assert_eq!(g.retry_units, 1);
    });
}

#[test]
fn an_unreachable_table_is_reported_as_unreachable_naming_it() {
    block_on_local(async {
        // A loopback port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let store = store_at("tg-missing", &format!("http://127.0.0.1:{port}"));
        let e = store.get_item("k").await.unwrap_err();
        assert_eq!(e.kind, FleetErrorKind::Unreachable, "{e}");
        assert!(e.to_string().contains("tg-missing"), "{e}");
    });
}

#[test]
fn a_missing_table_says_how_to_create_it() {
    block_on_local(async {
        let store = store_at(&unique_table("absent"), &dynalite_url());
        let e = store.get_item("k").await.unwrap_err();
        assert_eq!(e.kind, FleetErrorKind::NoTable, "{e}");
        assert!(e.to_string().contains("tollgate fleet init"), "{e}");
    });
}

#[test]
fn fleet_status_shows_the_reservation_and_hosts() {
    block_on_local(async {
        let store = new_table("status").await;
        let clock = ManualClock::at(T0);
        race(&store, &clock, "s", 2, 1).await;
        let status = tollgate_fleet::status::fleet_status(&store, Timestamp::from_micros(T0))
            .await
            .unwrap();
        assert_eq!(status.keys.len(), 1);
        let k = &status.keys[0];
        assert_eq!(k.hosts_seen_recently, vec!["s-0", "s-1"]);
        // Two grants of 3 at 10/s from T0 + 200 ms: the last due at T0 + 700 ms.
        assert_eq!(k.tat_us, T0 + 700_000);
        assert_eq!(k.reserved_ahead_ms, 700);
    });
}

#[test]
fn a_calendar_on_the_item_round_trips_through_dynamodb_and_fleet_status_shows_it() {
    use tollgate_quota::fleet::{Declaration, Declared};
    use tollgate_quota::{PolicyTable, WallClock};
    block_on_local(async {
        let store = new_table("calendar").await;
        let shared: Arc<dyn FleetStore> = Arc::new(store.clone());
        let clock = ManualClock::at(T0);
        let key = "aws/1/us-east-1/kms:ListKeys".to_string();
        let declare = |json: &str| {
            let name = "kms:ListKeys".parse().unwrap();
            let t = PolicyTable::with_overrides(json, "test").unwrap();
            Declared {
                declaration: Declaration::new(
                    t.policy_for_name(&name),
                    t.read_time_for_name(&name).cloned(),
                ),
                anchor: WallClock::UNIX_EPOCH,
            }
        };
        let allowance = declare(
            r#"{"kms:ListKeys": {"ratePerSecond": 10, "burst": 10,
                "allowance": {"amount": 7, "resets": "0 0 * * *", "timezone": "Europe/Berlin"}}}"#,
        );
        let slower = declare(r#"{"kms:ListKeys": {"ratePerSecond": 5, "burst": 5}}"#);
        let take = |host: &str, wanted: u64, d: &Declared| {
            let mut r = block(host, wanted);
            r.declared = Some(d.clone());
            exchange(shared.clone(), key.clone(), r, clock.clone(), None)
        };
        let (g, _, _) = take("a", 5, &allowance).await.unwrap();
        assert_eq!(g.run.count, 5);
        let (g, written, _) = take("b", 5, &slower).await.unwrap();
        assert_eq!(
            g.run.count, 2,
            "the allowance's 7 is the fleet's, not each host's"
        );
        assert_eq!(g.rate, 5.0, "the stricter host's rate is in force");
        let read = shared.get(&key).await.unwrap().expect("the item");
        assert_eq!(read, written, "the calendar round-trips through the table");
        let counter = read.item.calendar.as_ref().unwrap().allowance.unwrap();
        assert_eq!(counter.consumed_total(), 7);
        let (g, _, _) = take("a", 1, &allowance).await.unwrap();
        assert_eq!(g.run.count, 0, "the period is spent");
        let status = tollgate_fleet::status::fleet_status(&store, Timestamp::from_micros(T0))
            .await
            .unwrap();
        let calendar = status.keys[0].calendar.as_ref().expect("a calendar");
        assert_eq!(calendar.disagreeing_hosts, ["a", "b"]);
        assert_eq!(calendar.effective.rate, 5.0);
        let a = calendar.effective.allowance.as_ref().unwrap();
        assert_eq!((a.amount, a.used, a.remaining), (7, 7, 0));
        let text = tollgate_fleet::status::render(&status);
        assert!(
            text.contains("a declares") && text.contains("b declares"),
            "{text}"
        );
    });
}
