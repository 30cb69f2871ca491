//! `Status`: a read-only view of one key.

use actix::Message;
use serde::{Deserialize, Serialize};
use tollgate_quota::QuotaSnapshot;

/// Ask for the key's state.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "KeyStatus")]
pub struct Status;

/// One key's state and queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyStatus {
    /// Canonical key.
    pub key: String,
    /// Bucket, window, penalty, allowance, reservations.
    pub state: QuotaSnapshot,
    /// Callers waiting for a concurrency slot.
    pub waiting_for_reservation: usize,
    /// Callers waiting for final admission.
    pub waiting_for_admission: usize,
    /// Why dispatch is stopped, if it is.
    pub storage_failure: Option<String>,
}
