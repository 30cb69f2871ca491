//! Cross-process admission over the admission directory's Unix socket (DESIGN §5).
//!
//! # Layout
//! - [`frame`]: length-prefixed, versioned frames with a size limit.
//! - [`protocol`]: the request and response messages (the in-process API as data).
//! - [`server`]: the coordinator's side: peer checks, forwarding to the quota actors,
//!   clean-up after clients that go away.
//! - `clients`: the table of connected clients (the server writes it, status reads it).
//! - `keys`: each connection's parsed keys: a request's key is parsed once, a repeated
//!   key not at all.
//! - `socket`: a client connection as the coordinator holds it: registered for reading
//!   only, answers written directly.
//! - `client`: the client's side: one connection thread, requests matched by id,
//!   failover (reconnect or take over, then re-send what was pending).
//! - `link`: what a client's callers share with its connection thread: the pending
//!   table and the socket's write side, so callers write their requests themselves
//!   ([`batch_writes`]: several requests of one caller in one write).
//! - `wire`: one connection as the client's thread sees it: reading (here or delegated),
//!   flushing, the coordinator's liveness.
//! - `liveness`: when a silent coordinator is pinged and given up (`LivenessTimes`).
//! - `reads`: a connection's read side, read by a task on a runtime that asked to read
//!   (so an answer wakes its caller without a hop through the connection thread), or by
//!   the connection thread.

mod client;
mod clients;
pub mod frame;
mod keys;
mod link;
mod liveness;
pub mod protocol;
mod reads;
pub mod server;
mod socket;
mod wire;

pub use crate::ops::{ClientInfo, CoordinationStatus};
pub(crate) use client::{HostedRole, RemoteClient};
pub use client::{CLEANUP_BUDGET, TAKEOVER_TIMEOUT};
pub use clients::ClientTable;
pub use link::batch_writes;
