//! Runtimes for tests that drive async code from a plain `#[test]` (real time; paused
//! time is `tollgate_actors::paused_system`).

use std::future::Future;

/// A current-thread tokio runtime with I/O and time.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime")
}

/// Run `f` to completion on a fresh [`runtime`] inside a `LocalSet`, so that it may
/// `spawn_local` tasks that are not `Send`.
pub fn block_on_local<F: Future>(f: F) -> F::Output {
    runtime().block_on(tokio::task::LocalSet::new().run_until(f))
}
