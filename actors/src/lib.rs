//! tollgate's actix actors: one quota actor per canonical key, the registry that creates
//! and evicts them, persistence off the actor threads, and the `Send + Clone` handle that
//! embedders and the engine use.
//!
//! # Layout
//! - [`quota_actor`]: `QuotaActor`, FIFO reservation and admission queues over a
//!   `QuotaState`, self-waking at the next grant instant.
//! - [`messages`]: one message per file (`Reserve`, `Admit`, `Feedback`, `Release`,
//!   `Cancel`, `Status`).
//! - [`registry`]: creates actors on first use (restoring stored state), evicts idle ones,
//!   broadcasts cancellation and status.
//! - [`persist`]: the writer thread between actors and the store; fail-closed health.
//! - [`handle`]: `AdmissionHandle` and `ReservationGuard`.
//! - [`runtime`]: the dedicated actor thread, or start-in-current-system for tests.
//! - [`clock`]: `TokioClock`, the one place real time is read.
#![forbid(unsafe_code)]

pub mod clock;
mod error;
pub mod handle;
pub mod messages;
pub mod persist;
pub mod quota_actor;
pub mod registry;
pub mod runtime;

pub use clock::TokioClock;
pub use error::AdmissionError;
pub use handle::{AdmissionHandle, ReservationGuard, WaitOptions};
pub use messages::KeyStatus;
pub use runtime::{start_in_current_system, AdmissionRuntime, RuntimeConfig};
