//! The `tollgate` binary's and the service's integration tests, one file per subject, compiled as ONE test
//! binary: each integration-test file used to be a binary of its own, and linking them
//! (each links the whole dependency tree) was most of a cold `cargo test`'s build time;
//! in one binary the slow tests (real processes, real sockets) also overlap instead of
//! running one binary after the other (docs/contributing.md, "One test binary per
//! crate"). A new test file goes here with a `mod` line below; run one file's tests
//! with `cargo test --workspace --locked --test integration FILE::`.

mod service_support;

mod catalog_cli;
mod cli;
mod first_run;
mod fleet_cli;
mod fleet_settings_scope;
mod inventory_cli;
mod inventory_kill;
mod moto_cli;
mod moto_ec2;
mod moto_org;
mod moto_services;
mod org_demo_cli;
mod replay_cli;
mod service_api;
mod service_edges;
mod service_fleet;
mod service_guard;
mod service_inventory;
mod service_org;
mod service_page;
mod service_roles;
mod service_scheduled_check;
mod service_shared_quota;
mod simulate_cli;
mod throttling_report;
