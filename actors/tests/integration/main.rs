//! The actors crate's integration tests, one file per subject, compiled as ONE test
//! binary: each integration-test file used to be a binary of its own, and linking them
//! (each links the whole dependency tree) was most of a cold `cargo test`'s build time;
//! in one binary the slow tests (real processes, real sockets) also overlap instead of
//! running one binary after the other (docs/contributing.md, "One test binary per
//! crate"). A new test file goes here with a `mod` line below; run one file's tests
//! with `cargo test --workspace --locked --test integration FILE::`.

mod allowance_crash;
mod breakers;
mod calendar;
mod first_records;
mod fixtures;
mod fleet;
mod fleet_breakers;
mod fleet_breakers_hosts;
mod fleet_calendar;
mod fleet_requests;
mod full_disk;
mod lifecycle;
mod paired_many;
mod paired_remote;
mod processes;
mod refusals;
mod remote;
mod retire;
mod takeover;
mod unrecorded_crash;
