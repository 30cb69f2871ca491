//! The scan crate's integration tests (scans, the supervisor, organization scans, against
//! moto and the fixture simulator), one file per subject, compiled as ONE test
//! binary: each integration-test file used to be a binary of its own, and linking them
//! (each links the whole dependency tree) was most of a cold `cargo test`'s build time;
//! in one binary the slow tests (real processes, real sockets) also overlap instead of
//! running one binary after the other (docs/contributing.md, "One test binary per
//! crate"). A new test file goes here with a `mod` line below; run one file's tests
//! with `cargo test --workspace --locked --test integration FILE::`.

mod activity;
mod catalog_scan;
mod cloudcontrol_details_sim;
mod cloudcontrol_parents_sim;
mod cloudcontrol_sim;
mod gate_coverage;
mod moto_discovery;
mod moto_tagging;
mod organization;
mod organization_memory;
mod pricing_sim;
mod simulation;
mod supervisor;
mod throttled_dataset;

/// Every report a test of this crate reads, as JSON, validates against
/// `docs/report.schema.json` (an account's or an organization's).
fn assert_valid_report(report: &impl serde::Serialize) {
    let json = serde_json::to_value(report).expect("a report serialises");
    tollgate_testkit::report_schema::assert_valid(&json);
}
