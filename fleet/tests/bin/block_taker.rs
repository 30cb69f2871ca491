//! `tollgate-fleet-test-block-taker TABLE ENDPOINT`: one of the processes of
//! `tests/dynalite.rs`' multi-process race. Two hosts take blocks of 3 on `TABLE` (8
//! rounds each, the item clock held still at `T0`); prints `GRANTED n`, the tokens won.
//!
//! A helper binary rather than a `#[test]` of the test binary re-run on itself, so that
//! the child's body is not counted, and passed, as a test of its own in every normal run.
//! The parent gives it the emulator's credentials in its environment.

#[path = "../common/mod.rs"]
mod common;

use std::process::ExitCode;

use tollgate_fleet::DynamoFleetStore;

use common::blocks::{race, settings, T0};
use common::ManualClock;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [table, endpoint] = args.as_slice() else {
        eprintln!("usage: tollgate-fleet-test-block-taker TABLE ENDPOINT");
        return ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let granted: u64 = runtime.block_on(tokio::task::LocalSet::new().run_until(async {
        let store = DynamoFleetStore::new(settings(table, endpoint));
        let clock = ManualClock::at(T0);
        let runs = race(&store, &clock, &format!("p{}", std::process::id()), 2, 8).await;
        runs.iter().map(|r| r.count).sum()
    }));
    println!("GRANTED {granted}");
    ExitCode::SUCCESS
}
