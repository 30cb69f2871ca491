//! `Coordinator`: the role of the process that holds the admission directory's lock.
//!
//! Taking the role ([`Coordinator::start`]) opens the sled state (restored conservatively
//! if the previous coordinator crashed: keys from their leased records, and keys without a
//! record charged the two grants it may have made on each unrecorded, `fresh_keys`), lets
//! new keys make their first two grants under a provisional lease, starts the quota actors
//! enforcing the caller's [`CoordinatorSpec`] and serves the directory's Unix socket. A
//! process takes it when it joins a directory nobody coordinates ([`crate::join`]), or as
//! a client whose coordinator disappeared (`remote::client`): both depend on this file,
//! and it depends on neither, so the election and the failover can share it without
//! importing each other.
//!
//! Handing over gracefully ([`Coordinator::shutdown`]): stop serving (clients see their
//! connections close and start electing), retire the actors so every key saves a graceful
//! record, flush, mark a clean shutdown, close the database, remove the socket, and only
//! then release the lock, so the successor can open the state.

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::oneshot;
use tollgate_quota::Clock;
use tollgate_storage::{AdmissionDir, CoordinatorLock, PreviousShutdown, QuotaStore, SledStore};

use crate::clock::TokioClock;
use crate::closable_store::ClosableStore;
use crate::handle::AdmissionHandle;
use crate::remote::{server, HostedRole};
use crate::runtime::{AdmissionRuntime, RuntimeConfig};
use crate::spec::CoordinatorSpec;
use crate::AdmissionError;

/// The coordinator role, held by this process.
pub struct Coordinator {
    runtime: Option<AdmissionRuntime>,
    store: Arc<ClosableStore<SledStore>>,
    stop_server: Option<oneshot::Sender<()>>,
    /// Fires when the server has dropped every connection.
    served: Option<oneshot::Receiver<()>>,
    socket: PathBuf,
    lock: Option<CoordinatorLock>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("socket", &self.socket)
            .field("lock", &self.lock)
            .finish()
    }
}

pub(crate) fn coordination(e: impl std::fmt::Display) -> AdmissionError {
    AdmissionError::coordination(crate::error::CoordinationErrorKind::Takeover, e.to_string())
}

impl Coordinator {
    /// Become coordinator of `dir` under `lock`: open the state, start the actors enforcing
    /// `spec` and serve the socket. Blocks briefly (opening sled).
    pub fn start(
        dir: &AdmissionDir,
        lock: CoordinatorLock,
        spec: &CoordinatorSpec,
    ) -> Result<Coordinator, AdmissionError> {
        let opened = SledStore::open(dir, &lock).map_err(coordination)?;
        if opened.previous_shutdown == PreviousShutdown::Unclean {
            tracing::info!(dir = %dir.path().display(), "previous coordinator stopped uncleanly; restoring conservatively");
        }
        let fresh_keys =
            crate::fresh_keys::settle(&opened, TokioClock::system().now()).map_err(coordination)?;
        let store = Arc::new(ClosableStore::new(Arc::new(opened.store)));
        // Only the lock holder may remove the socket: it is stale now.
        let socket = dir.socket_path();
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(coordination(format!(
                    "cannot remove the stale socket {}: {e}",
                    socket.display()
                )))
            }
        }
        let listener = std::os::unix::net::UnixListener::bind(&socket).map_err(|e| {
            coordination(format!(
                "cannot listen on {}: {e}; check the admission directory's permissions and \
                 that its path is short enough for a Unix socket",
                socket.display()
            ))
        })?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| listener.set_nonblocking(true))
            .map_err(|e| coordination(format!("cannot secure {}: {e}", socket.display())))?;
        let generation = lock.generation();
        let (stop_tx, stop_rx) = oneshot::channel();
        let (served_tx, served_rx) = oneshot::channel();
        let mut config = RuntimeConfig::for_this_process(store.clone() as Arc<dyn QuotaStore>)
            .with_spec(spec, || {
                crate::fleet::host_id::host_id(dir.path()).map_err(coordination)
            })?;
        config.fresh_keys = fresh_keys;
        if let Some(fleet) = &config.fleet {
            tracing::info!(table = %fleet.store.describe(), host = %fleet.host, "fleet mode: keys admit under blocks from the shared table");
        }
        let runtime = AdmissionRuntime::start_serving(config, move |local| async move {
            match tokio::net::UnixListener::from_std(listener) {
                Ok(listener) => server::serve(listener, local, generation, stop_rx).await,
                Err(e) => tracing::error!(error = %e, "cannot serve the admission socket"),
            }
            let _ = served_tx.send(());
        })?;
        Ok(Coordinator {
            runtime: Some(runtime),
            store,
            stop_server: Some(stop_tx),
            served: Some(served_rx),
            socket,
            lock: Some(lock),
        })
    }

    /// A handle to the actors in this process.
    pub fn handle(&self) -> Option<AdmissionHandle> {
        self.runtime.as_ref().map(AdmissionRuntime::handle)
    }

    /// Hand over gracefully (see the module docs).
    pub async fn shutdown(mut self) -> Result<(), AdmissionError> {
        if let Some(stop) = self.stop_server.take() {
            let _ = stop.send(());
        }
        // Retire the actors only once every connection is gone: a request still waiting
        // in a quota queue must reach its client as a lost connection (which re-sends it
        // to the successor), not as a `Stopped` answer from a retiring actor.
        if let Some(served) = self.served.take() {
            // Resolves (Ok or Err) once `serve` returned or its thread is gone; `serve`
            // only aborts tasks and waits for them, so this is prompt.
            let _ = served.await;
        }
        let mut result = Ok(());
        if let Some(runtime) = self.runtime.take() {
            result = runtime.shutdown().await;
        }
        let store = self.store.clone();
        let (tx, rx) = oneshot::channel();
        std::thread::spawn(move || {
            let marked = match store.close() {
                Some(sled) if result.is_ok() => sled.mark_clean_shutdown().map_err(coordination),
                _ => Ok(()),
            };
            // `sled` (the last reference to the database) is dropped here, closing it.
            let _ = tx.send(result.and(marked));
        });
        let result = rx.await.unwrap_or(Err(AdmissionError::Stopped));
        let _ = std::fs::remove_file(&self.socket);
        drop(self.lock.take());
        result
    }
}

impl HostedRole for Coordinator {
    fn hand_over(self: Box<Self>) -> Pin<Box<dyn Future<Output = Result<(), AdmissionError>>>> {
        Box::pin((*self).shutdown())
    }
}

/// The `TakeOver` (remote/client.rs) a client is given: become the coordinator
/// under `lock`, enforcing `spec`.
pub(crate) fn take_over(
    dir: &AdmissionDir,
    lock: CoordinatorLock,
    spec: &CoordinatorSpec,
) -> Result<Box<dyn HostedRole>, AdmissionError> {
    Ok(Box::new(Coordinator::start(dir, lock, spec)?))
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        // Not handed over: the lock goes with the process; the successor restores
        // conservatively. Close the socket so clients notice now.
        if let Some(stop) = self.stop_server.take() {
            let _ = stop.send(());
        }
        let _ = self.store.close();
    }
}
