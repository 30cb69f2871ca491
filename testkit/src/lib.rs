//! tollgate's test kit: the harness code every crate's tests share, one copy of each.
//!
//! A dev-dependency only (never linked into a binary a user runs). It depends on no
//! tollgate crate, so that any of them can use it without a dependency cycle, and it
//! compiles nothing, and enables no feature, that the workspace's normal build does not
//! already (hyper and hyper-util come with the AWS SDK's HTTP client): being a
//! dev-dependency must not make `cargo test` rebuild what `cargo build` built. The one
//! exception is boon (the report schema's validator): `cargo build --workspace`, the
//! demo's build, compiles this crate too, so the tests still reuse what it built.
//!
//! # Layout
//! - [`http`]: one HTTP/1.1 exchange through hyper's client (a service, a simulator, moto).
//! - [`moto`]: the shared moto server (`TOLLGATE_TEST_MOTO_URL`, or one this binary
//!   starts) and the resources tests create on it without the SDK.
//! - [`dynalite`]: the dynalite URL the fleet tests need (`TOLLGATE_TEST_DYNALITE_URL`).
//! - [`emulator`]: the static credentials the emulators accept, for this process or a child.
//! - [`names`]: table names and resource prefixes unique to one test of one run.
//! - [`runtime`]: a current-thread runtime (and a `LocalSet`) for plain `#[test]`s.
//! - [`tmpfs`]: a small tmpfs of a test's own, and filling it (the full-disk tests, root).
//! - [`report_schema`]: every report a test reads validates against
//!   `docs/report.schema.json`.
//! - [`fault_proxy`]: a loopback proxy that fails the requests a test picks with a 500.
//! - [`cli`]: running `tollgate` or `tollgate-bench` as a user would, and describing the
//!   outcome.

#![forbid(unsafe_code)]

pub mod cli;
pub mod dynalite;
pub mod emulator;
pub mod fault_proxy;
pub mod http;
pub mod moto;
pub mod names;
pub mod report_schema;
pub mod runtime;
pub mod tmpfs;

pub use dynalite::{dynalite_url, DYNALITE_URL_ENV};
pub use emulator::{emulator_credentials, emulator_env};
pub use names::{unique_prefix, unique_table};
pub use runtime::{block_on_local, runtime};
