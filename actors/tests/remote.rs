//! The coordinator socket inside one process: a second `connect` on the same directory is
//! a client (the lock is per open file), so election, the protocol, garbage frames and a
//! graceful hand-over can be exercised without spawning processes. Real multi-process
//! runs, SIGKILL included, are in the root crate's `tests/`.

use std::io::Write;
use std::time::Duration;

use tollgate_actors::{connect, WaitOptions};
use tollgate_quota::{Outcome, Policy, QuotaKey};
use tollgate_storage::AdmissionDir;

fn key() -> QuotaKey {
    "aws/123456789012/us-east-1/logs:DescribeLogStreams"
        .parse()
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_client_admits_through_the_coordinator_and_takes_over_on_graceful_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir).unwrap();
    assert!(coordinator.is_coordinator());
    let client = connect(&dir).unwrap();
    assert!(!client.is_coordinator());
    let policy = Policy::new(1000.0, 10.0, 10, 20).unwrap();
    rt().block_on(async {
        let handle = client.handle();
        assert!(!handle.is_coordinator());
        let slot = handle
            .reserve(&key(), policy, WaitOptions::default())
            .await
            .unwrap();
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        slot.feedback(Outcome::Success, &grant);
        let status = handle.coordination().await.unwrap();
        assert_eq!(status.coordinator_pid, std::process::id());
        assert_eq!(status.clients.len(), 1, "{status:?}");
        assert_eq!(status.keys[0].state.reservations, 1);

        // Garbage on the socket closes that connection only.
        let mut raw = std::os::unix::net::UnixStream::connect(dir.socket_path()).unwrap();
        raw.write_all(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap();
        drop(raw);
        let mut raw = std::os::unix::net::UnixStream::connect(dir.socket_path()).unwrap();
        raw.write_all(b"\x00\x00\x00\x05\x01{{{{").unwrap();
        drop(raw);

        // The held slot survives the hand-over: the successor restores it from the
        // graceful record, and the guard keeps working.
        coordinator.shutdown().await.unwrap();
        let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
        slot.feedback(Outcome::Success, &grant);
        let status = handle.coordination().await.unwrap();
        assert_eq!(status.coordinator_pid, std::process::id());
        assert_eq!(status.keys[0].state.reservations, 1, "{status:?}");
        drop(slot);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let status = handle.coordination().await.unwrap();
        assert_eq!(status.keys[0].state.reservations, 0, "{status:?}");
        client.shutdown().await.unwrap();
    });
    // The last coordinator handed over cleanly: a new one may open the state again.
    let again = connect(&dir).unwrap();
    assert!(again.is_coordinator());
    rt().block_on(again.shutdown()).unwrap();
}
