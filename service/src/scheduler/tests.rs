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
        // (cursor, now, starting, catch_up, expected)
        (
            HOUR * 10,
            HOUR * 10 + 5,
            false,
            true,
            Decision::SleepUntil(at(HOUR * 11)),
        ),
        (HOUR * 10, HOUR * 11, false, true, Decision::Fire),
        (HOUR * 10, HOUR * 15, true, true, Decision::Fire),
        (HOUR * 10, HOUR * 15, true, false, Decision::Skip),
        (HOUR * 10, HOUR * 15, false, false, Decision::Fire),
    ];
    for (cursor, now, starting, catch_up, expected) in cases {
        assert_eq!(
            decide(&Hourly, at(cursor), at(now), starting, catch_up),
            expected,
            "{cursor} {now} {starting} {catch_up}"
        );
    }
    assert_eq!(decide(&Once(5), at(5), at(6), false, true), Decision::Never);
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
