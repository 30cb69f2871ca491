//! Harness code shared by the engine's integration tests (each test file that needs it
//! says `mod common;`). One idea per file.

pub mod sts_gate;
