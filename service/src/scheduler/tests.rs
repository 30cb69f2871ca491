use std::collections::HashMap;
use std::sync::Mutex;

use tollgate_actors::TokioClock;

use super::*;

const HOUR: u64 = 3_600_000_000;

/// Every hour on the hour (of the Unix epoch).
#[derive(Debug)]
struct Hourly;

impl NextFire for Hourly {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        Some(Timestamp::from_micros(
            (after.as_micros() / HOUR + 1) * HOUR,
        ))
    }
}

#[derive(Debug)]
struct Once(u64);

impl NextFire for Once {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        (after.as_micros() < self.0).then(|| Timestamp::from_micros(self.0))
    }
}

fn at(micros: u64) -> Timestamp {
    Timestamp::from_micros(micros)
}

#[test]
fn decisions_follow_the_cursor_and_catch_up() {
    let cases = [
        // (cursor, now, phase, catch_up, expected)
        (
            HOUR * 10,
            HOUR * 10 + 5,
            Phase::Running,
            true,
            Decision::SleepUntil(at(HOUR * 11)),
        ),
        (HOUR * 10, HOUR * 11, Phase::Running, true, Decision::Fire),
        (HOUR * 10, HOUR * 15, Phase::Starting, true, Decision::Fire),
        (HOUR * 10, HOUR * 15, Phase::Starting, false, Decision::Skip),
        (HOUR * 10, HOUR * 15, Phase::Running, false, Decision::Fire),
    ];
    for (cursor, now, phase, catch_up, expected) in cases {
        assert_eq!(
            decide(&Hourly, at(cursor), at(now), phase, catch_up),
            expected,
            "{cursor} {now} {phase:?} {catch_up}"
        );
    }
    assert_eq!(
        decide(&Once(5), at(5), at(6), Phase::Running, true),
        Decision::Never
    );
}

#[derive(Default)]
struct Cursors(Mutex<HashMap<String, Timestamp>>);

impl CursorStore for Cursors {
    fn cursor(&self, id: &str) -> Option<Timestamp> {
        self.0.lock().unwrap().get(id).copied()
    }
    fn set_cursor(&self, id: &str, at: Timestamp) {
        self.0.lock().unwrap().insert(id.to_string(), at);
    }
}

type Fired = Arc<Mutex<Vec<Timestamp>>>;

fn spawn(
    clock: TokioClock,
    store: Arc<Cursors>,
    catch_up: bool,
) -> (Fired, tokio::task::JoinHandle<()>) {
    let fired: Fired = Arc::default();
    let log = fired.clone();
    let entry = ScheduleEntry {
        id: "hourly".into(),
        target: "prod".into(),
        next: Arc::new(Hourly),
    };
    let fire = Arc::new(move |target: &str| {
        assert_eq!(target, "prod");
        log.lock().unwrap().push(clock.now());
    });
    let task = tokio::spawn(run_entry(entry, Arc::new(clock), store, catch_up, fire));
    (fired, task)
}

#[tokio::test(start_paused = true)]
async fn fires_on_each_instant_in_simulated_time() {
    let clock = TokioClock::starting_at(at(HOUR * 100 + 60_000_000));
    let (fired, task) = spawn(clock, Arc::default(), true);
    tokio::time::sleep(Duration::from_secs(3 * 3600 + 1)).await;
    task.abort();
    let fired: Vec<u64> = fired
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.as_micros())
        .collect();
    assert_eq!(
        fired,
        [HOUR * 101, HOUR * 102, HOUR * 103],
        "no catch-up on first sight, then each hour"
    );
}

#[tokio::test(start_paused = true)]
async fn a_missed_instant_runs_once_at_start_with_catch_up_and_not_without() {
    for (catch_up, expected) in [(true, 1), (false, 0)] {
        let store = Arc::new(Cursors::default());
        // The service last handled hour 100 and was down for five hours.
        store.set_cursor("hourly", at(HOUR * 100));
        let start = HOUR * 105 + 60_000_000;
        let (fired, task) = spawn(TokioClock::starting_at(at(start)), store.clone(), catch_up);
        tokio::time::sleep(Duration::from_secs(60)).await;
        task.abort();
        let fired: Vec<u64> = fired
            .lock()
            .unwrap()
            .iter()
            .map(|t| t.as_micros())
            .collect();
        assert_eq!(fired.len(), expected, "catch_up={catch_up}: {fired:?}");
        if catch_up {
            assert_eq!(fired[0], start, "fires at start-up, once");
        }
        assert!(store.cursor("hourly").unwrap().as_micros() >= start);
    }
}

/// Run `cron` in `zone` on simulated time from `start` for `days`; the fire instants.
async fn fires(cron: &str, zone: &str, start: &str, days: u64) -> Vec<String> {
    let schedule = CronSchedule::parse(cron, zone).unwrap();
    let start = WallClock::parse_rfc3339(start)
        .unwrap()
        .to_timestamp(WallClock::UNIX_EPOCH);
    let clock = TokioClock::starting_at(start);
    let fired: Fired = Arc::default();
    let log = fired.clone();
    let entry = ScheduleEntry {
        id: format!("t {cron} {zone}"),
        target: "t".into(),
        next: Arc::new(CronNext(schedule)),
    };
    let fire = Arc::new(move |_: &str| log.lock().unwrap().push(clock.now()));
    let task = tokio::spawn(run_entry(
        entry,
        Arc::new(clock),
        Arc::new(Cursors::default()),
        true,
        fire,
    ));
    tokio::time::sleep(Duration::from_secs(days * 86_400)).await;
    task.abort();
    let fired = fired.lock().unwrap().clone();
    fired
        .into_iter()
        .map(|t| WallClock::from_timestamp(t, WallClock::UNIX_EPOCH).to_rfc3339())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn berlin_spring_forward_fires_the_missing_time_at_the_end_of_the_gap() {
    // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist.
    let got = fires("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3).await;
    assert_eq!(
        got,
        [
            "2026-03-28T01:30:00.000Z",
            "2026-03-29T01:00:00.000Z",
            "2026-03-30T00:30:00.000Z"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn berlin_fall_back_fires_the_repeated_time_once() {
    // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens at 00:30 and 01:30 UTC.
    let got = fires("30 2 * * *", "Europe/Berlin", "2026-10-24T00:00:00Z", 3).await;
    assert_eq!(
        got,
        [
            "2026-10-24T00:30:00.000Z",
            "2026-10-25T00:30:00.000Z",
            "2026-10-26T01:30:00.000Z"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn new_york_spring_forward_fires_the_missing_time_at_the_end_of_the_gap() {
    // 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00 UTC); 02:30 does not exist.
    let got = fires("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3).await;
    assert_eq!(
        got,
        [
            "2026-03-07T07:30:00.000Z",
            "2026-03-08T07:00:00.000Z",
            "2026-03-09T06:30:00.000Z"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn new_york_fall_back_fires_the_repeated_time_once() {
    // 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens at 05:30 and 06:30 UTC.
    let got = fires("30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", 3).await;
    assert_eq!(
        got,
        [
            "2026-10-31T05:30:00.000Z",
            "2026-11-01T05:30:00.000Z",
            "2026-11-02T06:30:00.000Z"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn every_fifteen_minutes_does_not_run_again_in_the_repeated_hour() {
    // 00:00–02:00 UTC on 2026-10-25 is 02:00–03:00 Berlin time twice: 4 fires, not 8.
    let got = fires("*/15 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 1).await;
    assert_eq!(
        got,
        [
            "2026-10-25T00:00:00.000Z",
            "2026-10-25T00:15:00.000Z",
            "2026-10-25T00:30:00.000Z",
            "2026-10-25T00:45:00.000Z"
        ]
    );
}
