//! tollgate's actix actors: one quota actor per canonical key, the registry that creates
//! and evicts them, persistence off the actor threads, and the `Send + Clone` handle that
//! embedders and the engine use.
//!
//! # Layout
//! - [`quota_actor`]: `QuotaActor`, FIFO reservation and admission queues over a
//!   `QuotaState`, self-waking at the next grant instant.
//! - [`messages`]: one message per file (`Reserve`, `Admit`, `Feedback`, `Pause`,
//!   `Release`, `Cancel`, `Status`; the breaker board's `BreakerPass`, `BreakerReport`,
//!   `Breakers`).
//! - [`ops`]: the admission operation set: [`Operation`] and [`Answer`], both the
//!   coordinator socket's wire format and the dispatch (adding an operation touches
//!   `ops.rs`, `local.rs` and `handle.rs`).
//! - `backend`: the `AdmissionBackend` trait the handle calls (implemented by `local`'s
//!   `LocalAdmission` and `remote`'s `RemoteClient`) and the guard's `Slot`.
//! - `cleanup`: [`Cleanup`], how a release went (handed over, or queued to be retried).
//! - [`breaker_board`]: `BreakerBoard`, the circuit breaker of every scope (service +
//!   region + account), shared by every process through the coordinator.
//! - [`registry`]: creates actors on first use (restoring stored state), retires idle ones
//!   within seconds once their state is stored (`quota_actor::retire`), broadcasts
//!   cancellation and status.
//! - [`persist`]: the writer thread between actors and the store (urgent records at once,
//!   the others gathered up to 20 ms into one flush); fail-closed health.
//! - `fresh_keys`: [`FreshKeys`], how keys without a record start: a new key's
//!   provisional first grants before its first record is stored, and the charge for what
//!   a crashed coordinator may have granted unrecorded.
//! - [`handle`]: `AdmissionHandle` and `ReservationGuard`.
//! - `key`: [`CanonicalKey`], the quota key as admission carries it (parsed once at the
//!   edge, shared), and the admission request that travels with it.
//! - `wait`: [`WaitOptions`], how long a caller waits and in which cancellation scope
//!   (every layer carries it, so it depends on none of them).
//! - `actor_cache`: the actor addresses the in-process backend remembers, pruned of
//!   evicted actors so it holds only the keys in use.
//! - `footprint`: [`Footprint`], the counts of per-key and per-scope structures (live
//!   actors and their peak, actors started, cached addresses, breaker scopes), for tests
//!   and `bench org`.
//! - [`runtime`]: the dedicated actor thread, or start-in-current-system for tests.
//! - [`clock`]: `TokioClock` and `monotonic_now`, the one place real time is read
//!   (`clippy.toml` disallows every other clock read).
//! - [`offline_status`]: [`read_offline`], the stored state of a directory no coordinator
//!   holds (`tollgate status` without one).
//! - [`schedules`]: [`Schedules`], the keys' schedules and allowances (seed 003) and the
//!   clock's anchor on the calendar.
//! - [`join`]: [`connect`] and [`Admission`]: become the coordinator or its client.
//! - `sparse`: `shrink_if_sparse`, spare room given back by the maps that empty after an
//!   organization's keys are evicted.
//! - `spec`: [`CoordinatorSpec`], what a coordinator started for a `connect` enforces
//!   (schedules, fleet mode), passed as a value and kept by the client for failover.
//! - [`coordinator`]: the [`Coordinator`] role: state, actors and socket of the lock
//!   holder (used by `join` and by a client's failover, importing neither).
//! - [`remote`]: the coordinator socket: frames, protocol, server, client with failover.
//! - `local::paired`: paired admission, one attempt charged on two keys at one instant or on
//!   neither (a GetMetricData attempt's request token and its datapoint budget).
//! - `local`: the in-process backend: `LocalAdmission::serve`, the one match over the
//!   operations (and what the socket server hands every remote operation to).
//! - [`closable_store`]: lets a coordinator close sled before handing over.
//! - [`fleet`]: fleet mode's seam: the `FleetStore` trait (DynamoDB in `tollgate-fleet`),
//!   the block exchange, the host id, the [`FleetSpec`] a coordinator spec carries.
#![forbid(unsafe_code)]

mod actor_cache;
mod backend;
pub mod breaker_board;
mod cleanup;
pub mod clock;
pub mod closable_store;
pub mod coordinator;
mod error;
pub mod fleet;
mod footprint;
mod fresh_keys;
pub mod handle;
pub mod join;
mod key;
mod local;
pub mod messages;
pub mod offline_status;
pub mod ops;
pub mod persist;
pub mod quota_actor;
pub mod registry;
pub mod remote;
pub mod runtime;
pub mod schedules;
mod sparse;
mod spec;
mod wait;

pub use cleanup::Cleanup;
pub use clock::TokioClock;
pub use coordinator::Coordinator;
pub use error::{AdmissionError, CoordinationErrorKind, StoreFailure, StoreFailureKind};
pub use fleet::{FleetSetup, FleetSpec, FleetStore};
pub use footprint::Footprint;
pub use fresh_keys::FreshKeys;
pub use handle::{AdmissionHandle, BreakerUse, ReservationGuard, WaitOptions};
pub use join::{connect, Admission};
pub use key::CanonicalKey;
pub use messages::{BreakerStatus, FleetDegradedSpell, KeyStatus};
pub use offline_status::{read_offline, OfflineStatus, OfflineStatusError, StoredKeyStatus};
pub use ops::{
    Answer, BudgetCharge, ClientInfo, CoordinationStatus, LastBreakerReport, LastFeedback,
    Operation,
};
pub use remote::batch_writes;
#[cfg(feature = "paused-clock")]
pub use runtime::paused_system;
pub use runtime::{start_in_current_system, AdmissionRuntime, RuntimeConfig};
pub use schedules::Schedules;
pub use spec::CoordinatorSpec;
