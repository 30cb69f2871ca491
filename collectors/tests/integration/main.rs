//! The collectors' integration tests, compiled as one test binary (docs/contributing.md,
//! "One test binary per crate"); run one file's tests with
//! `cargo test --workspace --locked --test integration FILE::`.

// The STS gate harness is the engine's (its credential-provider tests use it too): one
// file, included from there rather than copied.
#[path = "../../../engine/tests/integration/common/sts_gate.rs"]
mod sts_gate;

mod catalog_init;
mod catalog_kit;
mod catalog_status;
mod credentials_mid_scan;
mod unfiltered_budget;
