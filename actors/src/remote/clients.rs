//! `ClientTable`: the clients connected to this coordinator right now, with each one's
//! requests in flight.
//!
//! The socket server adds and removes connections; the in-process backend reads the table
//! for `tollgate status` (`CoordinationStatus::clients`). Its own file so that the
//! backend, which the server forwards to, does not import the server back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tollgate_quota::Owner;

use crate::ops::ClientInfo;

/// The clients connected right now.
#[derive(Debug, Default)]
pub struct ClientTable {
    next: AtomicU64,
    clients: Mutex<HashMap<u64, (Owner, Arc<AtomicUsize>)>>,
}

impl ClientTable {
    /// Register a connection: its id (never [`crate::messages::IN_PROCESS`]) and in-flight
    /// counter.
    pub(super) fn add(&self, owner: Owner) -> (u64, Arc<AtomicUsize>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let in_flight = Arc::new(AtomicUsize::new(0));
        if let Ok(mut c) = self.clients.lock() {
            c.insert(id, (owner, in_flight.clone()));
        }
        (id, in_flight)
    }

    pub(super) fn remove(&self, id: u64) {
        if let Ok(mut c) = self.clients.lock() {
            c.remove(&id);
        }
    }

    pub(super) fn is_connected(&self, owner: Owner) -> bool {
        self.clients
            .lock()
            .map(|c| c.values().any(|(o, _)| *o == owner))
            .unwrap_or(false)
    }

    /// Every connected client, by pid.
    pub fn list(&self) -> Vec<ClientInfo> {
        let mut out: Vec<ClientInfo> = self
            .clients
            .lock()
            .map(|c| {
                c.values()
                    .map(|(o, n)| ClientInfo {
                        pid: o.pid,
                        generation: o.generation,
                        in_flight: n.load(Ordering::Relaxed),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|c| (c.pid, c.generation));
        out
    }
}
