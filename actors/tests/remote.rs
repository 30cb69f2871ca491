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
    client_admits_and_takes_over(false);
}

/// The same, with the client opened inside the runtime it is used from: that runtime reads
/// the answers, across the hand-over too.
#[test]
fn a_client_opened_in_a_runtime_admits_and_takes_over_on_graceful_exit() {
    client_admits_and_takes_over(true);
}

fn client_admits_and_takes_over(open_inside_the_runtime: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir).unwrap();
    assert!(coordinator.is_coordinator());
    let rt = rt();
    let client = if open_inside_the_runtime {
        rt.block_on(async { connect(&dir) }).unwrap()
    } else {
        connect(&dir).unwrap()
    };
    assert!(!client.is_coordinator());
    let policy = Policy::new(1000.0, 10.0, 10, 20).unwrap();
    rt.block_on(async {
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
    rt.block_on(again.shutdown()).unwrap();
}

/// Regression: a coordinator that took over gracefully, admitted, and crashed before its
/// own record was stored left the previous coordinator's graceful record behind; its
/// successor trusted that record's window and admitted again within the same window.
#[test]
fn a_crash_after_a_graceful_hand_over_does_not_resurrect_the_stale_window() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    // 1/s, burst 1: at most one start in any 1 s window.
    let policy = Policy::new(1.0, 1.0, 10, 20).unwrap();
    let admit_once = |admission: &tollgate_actors::Admission| {
        let handle = admission.handle();
        rt().block_on(async move {
            let slot = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            grant.admitted_at
        })
    };
    let first = connect(&dir).unwrap();
    admit_once(&first);
    rt().block_on(first.shutdown()).unwrap(); // graceful record: one start at t0
    std::thread::sleep(Duration::from_millis(1_100)); // that start leaves the window
    let second = connect(&dir).unwrap();
    assert!(second.is_coordinator());
    let crashed_at = admit_once(&second); // at once: the restored window is empty
    drop(second); // no hand-over, and too soon for its periodic record to be stored
    let third = connect(&dir).unwrap();
    assert!(third.is_coordinator());
    let next = admit_once(&third);
    assert!(
        next.saturating_since(crashed_at) >= Duration::from_secs(1),
        "admitted {:?} after the crashed coordinator's last start",
        next.saturating_since(crashed_at)
    );
    rt().block_on(third.shutdown()).unwrap();
}

/// A client that sends far more than a socket buffer holds before it reads: the
/// coordinator stops reading at `MAX_IN_FLIGHT` requests, its answers fill the socket, its
/// writes wait for space (the only time it watches write readiness), and every answer
/// still arrives once.
#[test]
fn answers_that_fill_the_socket_wait_for_the_client_to_read() {
    use std::io::{BufReader, Read};
    use tollgate_actors::remote::frame;
    use tollgate_actors::remote::protocol::{Request, RequestBody, Response, ResponseBody};

    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir).unwrap();
    let mut raw = std::os::unix::net::UnixStream::connect(dir.socket_path()).unwrap();
    let hello = Request {
        id: 0,
        body: RequestBody::Hello {
            pid: std::process::id(),
            generation: 1,
            uid: tollgate_storage::current_uid(),
            version: frame::PROTOCOL_VERSION,
        },
    };
    raw.write_all(&frame::encode(&hello).unwrap()).unwrap();
    let mut reader = BufReader::new(raw.try_clone().unwrap());
    let read_one = |reader: &mut BufReader<std::os::unix::net::UnixStream>| -> Response {
        let mut len = [0u8; 4];
        reader.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        reader.read_exact(&mut body).unwrap();
        assert_eq!(body[0], frame::PROTOCOL_VERSION);
        serde_json::from_slice(&body[1..]).unwrap()
    };
    assert!(matches!(
        read_one(&mut reader).body,
        ResponseBody::Welcome { .. }
    ));
    // Well past the in-flight limit, whose answers alone fill several socket buffers.
    let n = 2 * tollgate_actors::remote::server::MAX_IN_FLIGHT as u64;
    let writer = std::thread::spawn(move || {
        let mut out = Vec::new();
        for id in 1..=n {
            let req = Request {
                id,
                body: RequestBody::Cancel { scope: id },
            };
            out.extend_from_slice(&frame::encode(&req).unwrap());
        }
        raw.write_all(&out).unwrap();
        raw
    });
    // Read nothing until the coordinator has had time to fill the socket.
    std::thread::sleep(Duration::from_millis(500));
    let status = rt().block_on(coordinator.handle().coordination()).unwrap();
    let in_flight = status.clients[0].in_flight;
    assert!(
        in_flight <= tollgate_actors::remote::server::MAX_IN_FLIGHT,
        "the coordinator buffered {in_flight} requests of a client that does not read"
    );
    let mut seen = vec![false; n as usize + 1];
    for _ in 0..n {
        let resp = read_one(&mut reader);
        assert_eq!(resp.body, ResponseBody::Cancelled { removed: 0 });
        let id = resp.id as usize;
        assert!(!seen[id], "answer {id} arrived twice");
        seen[id] = true;
    }
    assert!(seen[1..].iter().all(|&s| s), "every request was answered");
    drop(writer.join().unwrap());
    rt().block_on(coordinator.shutdown()).unwrap();
}
