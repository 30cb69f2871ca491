//! Joining admission for a directory: coordinator or client.
//!
//! [`connect`] is how a process joins admission for a directory. If the coordinator lock is
//! free, this process takes it and becomes the [`Coordinator`]; otherwise it becomes a
//! client of the coordinator's socket. Either way the caller gets the same
//! [`AdmissionHandle`]. A client whose coordinator disappears elects a successor among the
//! clients (see `remote::client`). The [`CoordinatorSpec`] says what a coordinator started
//! here enforces, now or by that failover.

use tollgate_storage::{AdmissionDir, CoordinatorLock};

use crate::coordinator::{coordination, take_over, Coordinator};
use crate::handle::AdmissionHandle;
use crate::remote::RemoteClient;
use crate::runtime::this_process_owner;
use crate::spec::CoordinatorSpec;
use crate::AdmissionError;

/// This process's place in admission for one directory.
#[derive(Debug)]
pub struct Admission {
    handle: AdmissionHandle,
    coordinator: Option<Coordinator>,
    dir: AdmissionDir,
}

/// Join admission for `dir`: become its coordinator if nobody is, else its client. A
/// coordinator started here, now or when this client takes over, enforces `spec`.
pub fn connect(dir: &AdmissionDir, spec: CoordinatorSpec) -> Result<Admission, AdmissionError> {
    let lock = CoordinatorLock::try_acquire(dir).map_err(coordination)?;
    let (handle, coordinator) = match lock {
        Some(lock) => {
            let coordinator = Coordinator::start(dir, lock, &spec)?;
            let handle = coordinator.handle().ok_or(AdmissionError::Stopped)?;
            (handle, Some(coordinator))
        }
        None => {
            let client = RemoteClient::start(dir.clone(), this_process_owner(), spec, take_over)?;
            (AdmissionHandle::remote(client), None)
        }
    };
    Ok(Admission {
        handle,
        coordinator,
        dir: dir.clone(),
    })
}

impl Admission {
    /// The admission handle (the same type for coordinator and client).
    pub fn handle(&self) -> AdmissionHandle {
        self.handle.clone()
    }

    /// True if this process started as the coordinator.
    pub fn is_coordinator(&self) -> bool {
        self.coordinator.is_some()
    }

    /// The admission directory.
    pub fn dir(&self) -> &AdmissionDir {
        &self.dir
    }

    /// Leave: hand the coordinator role over gracefully if this process holds it, and close
    /// the connection if it is a client.
    pub async fn shutdown(mut self) -> Result<(), AdmissionError> {
        match self.coordinator.take() {
            Some(coordinator) => coordinator.shutdown().await,
            None => self.handle.shutdown().await,
        }
    }
}
