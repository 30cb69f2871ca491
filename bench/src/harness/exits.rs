//! Waiting for a run's processes, each in a thread of its own, so that each one's own
//! exit instant is recorded (`bench fleet` and `bench outage` measure completion from
//! the last of them, not from when the parent got round to reaping it).

#![allow(clippy::disallowed_methods)] // an exit instant is a wall-clock reading

use std::process::{Child, ExitStatus};
use std::thread::JoinHandle;
use std::time::Instant;

/// How one process ended (`None`: waiting for it failed) and when.
pub type Exit = (Option<ExitStatus>, Instant);

/// A thread per child, waiting for it.
pub fn watch(children: Vec<Child>) -> Vec<JoinHandle<Exit>> {
    children
        .into_iter()
        .map(|mut child| std::thread::spawn(move || (child.wait().ok(), Instant::now())))
        .collect()
}

/// Every child's exit, in the order they were spawned.
pub fn join(waits: Vec<JoinHandle<Exit>>) -> Vec<Exit> {
    waits
        .into_iter()
        .map(|w| w.join().expect("wait thread"))
        .collect()
}
