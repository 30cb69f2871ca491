//! Where tollgate's quota state lives.
//!
//! Processes of one OS user that use the same admission directory share every
//! quota (DESIGN §5). This crate owns everything on disk for that: choosing and
//! securing the directory, the coordinator lock that elects one process to own
//! the state, and the store that persists quota records across runs and
//! crashes. It knows nothing of the quota record format: records are bytes, so
//! the admission math stays in `tollgate-quota` and the actors own the schema.
//!
//! # Layout
//!
//! - [`dir`]: [`AdmissionDir`] resolution from a [`DirEnv`]
//!   (`TOLLGATE_ADMISSION_DIR`, XDG cache, home cache, private temp fallback).
//! - `private_dir`: the checks that keep the directory 0700, ours and writable.
//! - [`lock`]: [`CoordinatorLock`], an exclusive `flock` on `coordinator.lock`
//!   recording the holder's pid and a generation that grows per takeover.
//! - [`store`]: the object-safe [`QuotaStore`] trait, JSON helpers and the
//!   in-memory [`MemoryStore`].
//! - [`sled_store`]: [`SledStore`], the on-disk store, and the shutdown marker
//!   that tells a new coordinator whether its predecessor crashed.
//! - [`process`]: pid liveness and our own pid and uid.
//! - [`error`]: [`StorageError`] and its [`StorageErrorKind`].
//! - [`forgetful`]: [`ForgetfulStore`](forgetful::ForgetfulStore), a store that keeps
//!   nothing (memory measurements of the actors alone).
//! - [`recovering`]: [`RecoveringStore`](recovering::RecoveringStore), a store that
//!   refuses its first writes (a full disk being cleaned up), for recovery tests.
//!
//! Inside the directory:
//!
//! ```text
//! <admission dir>/          mode 0700, owned by the user
//!   coordinator.lock        0600, flock'ed by the coordinator; one JSON line {pid, generation}
//!   coordinator.sock        the coordinator's Unix socket (created by tollgate-actors)
//!   state-v1.sled/          0700, sled database: trees `quota-v1` and `meta`
//! ```
//!
//! Nothing here holds credentials, request or response payloads.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dir;
pub mod error;
pub mod forgetful;
pub mod lock;
mod private_dir;
pub mod process;
pub mod recovering;
mod sled_error;
pub mod sled_store;
pub mod store;

pub use dir::{AdmissionDir, DirEnv, DirSource, ADMISSION_DIR_ENV};
pub use error::{StorageError, StorageErrorKind};
pub use lock::{read_holder, CoordinatorLock, LockHolder};
pub use private_dir::secure_private_dir;
pub use process::{current_pid, current_uid, pid_alive};
pub use sled_store::{OpenedStore, PreviousShutdown, SledStore};
pub use store::{load_json, save_json, MemoryStore, QuotaStore};
