//! The coordinator socket inside one process: a second `connect` on the same directory is
//! a client (the lock is per open file), so election, the protocol, garbage frames and a
//! graceful hand-over can be exercised without spawning processes. Real multi-process
//! runs, SIGKILL included, are in the root crate's `tests/`.

use std::io::Write;
use std::time::Duration;

use tollgate_actors::{connect, Answer, CanonicalKey, CoordinatorSpec, Operation, WaitOptions};
use tollgate_quota::{Outcome, Policy, QuotaKey};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;

fn key() -> QuotaKey {
    "aws/123456789012/us-east-1/logs:DescribeLogStreams"
        .parse()
        .unwrap()
}

#[test]
fn a_client_admits_through_the_coordinator_and_takes_over_on_graceful_exit() {
    client_admits_and_takes_over(false);
}

/// The same, with the runtime the client is used from reading the answers
/// (`read_answers_here`), across the hand-over too.
#[test]
fn a_client_whose_runtime_reads_the_answers_admits_and_takes_over_on_graceful_exit() {
    client_admits_and_takes_over(true);
}

fn client_admits_and_takes_over(runtime_reads: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(coordinator.is_coordinator());
    assert!(
        !coordinator.handle().read_answers_here(),
        "the coordinator reads nothing"
    );
    let rt = runtime();
    let client = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(!client.is_coordinator());
    assert!(!client.handle().read_answers_here(), "outside a runtime");
    let policy = Policy::new(1000.0, 10.0, 10, 20).unwrap();
    rt.block_on(async {
        let handle = client.handle();
        assert!(!handle.is_coordinator());
        if runtime_reads {
            assert!(handle.read_answers_here(), "inside a runtime");
        }
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
    let again = connect(&dir, CoordinatorSpec::none()).unwrap();
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
        runtime().block_on(async move {
            let slot = handle
                .reserve(&key(), policy, WaitOptions::default())
                .await
                .unwrap();
            let grant = slot.admit(1, false, WaitOptions::default()).await.unwrap();
            grant.admitted_at
        })
    };
    let first = connect(&dir, CoordinatorSpec::none()).unwrap();
    admit_once(&first);
    runtime().block_on(first.shutdown()).unwrap(); // graceful record: one start at t0
    std::thread::sleep(Duration::from_millis(1_100)); // that start leaves the window
    let second = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(second.is_coordinator());
    let crashed_at = admit_once(&second); // at once: the restored window is empty
    drop(second); // no hand-over, and too soon for its periodic record to be stored
    let third = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(third.is_coordinator());
    let next = admit_once(&third);
    assert!(
        next.saturating_since(crashed_at) >= Duration::from_secs(1),
        "admitted {:?} after the crashed coordinator's last start",
        next.saturating_since(crashed_at)
    );
    runtime().block_on(third.shutdown()).unwrap();
}

/// Speak the protocol on a raw socket, as a client of another build might.
struct RawClient {
    writer: std::os::unix::net::UnixStream,
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
}

impl RawClient {
    fn hello(dir: &AdmissionDir) -> RawClient {
        use tollgate_actors::remote::protocol::{RequestBody, ResponseBody};
        let writer = std::os::unix::net::UnixStream::connect(dir.socket_path()).unwrap();
        writer
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let reader = std::io::BufReader::new(writer.try_clone().unwrap());
        let mut raw = RawClient { writer, reader };
        raw.send(&[(
            0,
            RequestBody::Hello {
                pid: std::process::id(),
                generation: 1,
                uid: tollgate_storage::current_uid(),
                version: tollgate_actors::remote::frame::PROTOCOL_VERSION,
            },
        )]);
        assert!(matches!(raw.read().body, ResponseBody::Welcome { .. }));
        raw
    }

    fn send(&mut self, requests: &[(u64, tollgate_actors::remote::protocol::RequestBody)]) {
        use tollgate_actors::remote::{frame, protocol::Request};
        let mut out = Vec::new();
        for (id, body) in requests {
            let req = Request {
                id: *id,
                body: body.clone(),
            };
            out.extend_from_slice(&frame::encode(&req).unwrap());
        }
        self.writer.write_all(&out).unwrap();
    }

    /// Send documents as they are, framed: what a client of another build might send.
    fn send_json(&mut self, documents: &[serde_json::Value]) {
        use tollgate_actors::remote::frame;
        let mut out = Vec::new();
        for doc in documents {
            out.extend_from_slice(&frame::encode(doc).unwrap());
        }
        self.writer.write_all(&out).unwrap();
    }

    fn read(&mut self) -> tollgate_actors::remote::protocol::Response {
        use std::io::Read;
        let mut len = [0u8; 4];
        self.reader.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.reader.read_exact(&mut body).unwrap();
        assert_eq!(body[0], tollgate_actors::remote::frame::PROTOCOL_VERSION);
        serde_json::from_slice(&body[1..]).unwrap()
    }
}

/// A client that sends far more than a socket buffer holds and reads late: the
/// coordinator's answers wait for space, and every answer arrives once.
#[test]
fn a_client_that_reads_late_gets_every_answer_once() {
    use tollgate_actors::remote::protocol::{RequestBody, ResponseBody};

    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let mut raw = RawClient::hello(&dir);
    // About 750 KB of answers: more than the coordinator's send buffer and this
    // client's receive buffer hold together (Linux's default is 208 KB each).
    let n = 15_000u64;
    let mut writer = RawClient {
        writer: raw.writer.try_clone().unwrap(),
        reader: std::io::BufReader::new(raw.writer.try_clone().unwrap()),
    };
    let sender = std::thread::spawn(move || {
        let requests: Vec<_> = (1..=n)
            .map(|id| (id, RequestBody::Op(Operation::Cancel { scope: id })))
            .collect();
        writer.send(&requests);
    });
    // Read nothing for a while.
    std::thread::sleep(Duration::from_millis(300));
    let mut seen = vec![false; n as usize + 1];
    for _ in 0..n {
        let resp = raw.read();
        assert_eq!(resp.body, ResponseBody::Answer(Answer::Cancelled(0)));
        let id = resp.id as usize;
        assert!(!seen[id], "answer {id} arrived twice");
        seen[id] = true;
    }
    assert!(seen[1..].iter().all(|&s| s), "every request was answered");
    sender.join().unwrap();
    runtime().block_on(coordinator.shutdown()).unwrap();
}

/// Past `MAX_IN_FLIGHT` waiting requests on one connection, further reservations are
/// refused at once (the coordinator holds no more), while pings are still answered; when
/// the connection closes, its waiters are cancelled.
#[test]
fn waiting_requests_beyond_the_cap_are_refused_and_pings_still_answered() {
    use tollgate_actors::remote::protocol::{RequestBody, ResponseBody, WireError};
    use tollgate_actors::remote::server::MAX_IN_FLIGHT;

    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let mut raw = RawClient::hello(&dir);
    // Concurrency 1: the first reservation holds the only slot, the rest wait.
    let policy = Policy::new(1000.0, 10.0, 1, 20).unwrap();
    let reserve = || {
        RequestBody::Op(Operation::Reserve {
            key: CanonicalKey::new(&key()),
            policy,
            timeout: Duration::from_secs(600),
            scope: None,
        })
    };
    raw.send(&[(1, reserve())]);
    assert!(matches!(
        raw.read().body,
        ResponseBody::Answer(Answer::Reserved(_))
    ));
    let extra = 5;
    let waiting: Vec<_> = (0..MAX_IN_FLIGHT as u64 + extra)
        .map(|i| (10 + i, reserve()))
        .collect();
    raw.send(&waiting);
    let ping_id = 1_000_000;
    raw.send(&[(ping_id, RequestBody::Ping)]);
    let mut refused = Vec::new();
    loop {
        let resp = raw.read();
        match resp.body {
            ResponseBody::Pong => {
                assert_eq!(resp.id, ping_id);
                break;
            }
            ResponseBody::Error(WireError::Rejected { reason }) => {
                assert!(reason.contains("in flight"), "{reason}");
                refused.push(resp.id);
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let first_refused = 10 + MAX_IN_FLIGHT as u64;
    assert_eq!(
        refused,
        (first_refused..first_refused + extra).collect::<Vec<_>>()
    );
    let handle = coordinator.handle();
    let status = runtime().block_on(handle.coordination()).unwrap();
    assert_eq!(
        status.clients[0].in_flight, MAX_IN_FLIGHT,
        "{:?}",
        status.clients
    );
    assert_eq!(status.keys[0].waiting_for_reservation, MAX_IN_FLIGHT);
    // Closing the connection cancels its waiters.
    drop(raw);
    let mut waiting_now = MAX_IN_FLIGHT;
    for _ in 0..500 {
        waiting_now = runtime().block_on(handle.status()).unwrap()[0].waiting_for_reservation;
        if waiting_now == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        waiting_now, 0,
        "the closed connection's waiters were cancelled"
    );
    runtime().block_on(coordinator.shutdown()).unwrap();
}

/// The server parses a request's key once and carries the parsed, canonical key on: a key
/// written with a service alias reaches the same actor (and the same stored record) as
/// its canonical form, and a key that does not parse is answered with an error on a
/// connection that stays up.
#[test]
fn a_key_sent_with_a_service_alias_reaches_the_actor_of_its_canonical_form() {
    use tollgate_actors::remote::protocol::{RequestBody, ResponseBody, WireError};

    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let mut raw = RawClient::hello(&dir);
    let policy = Policy::new(1000.0, 10.0, 10, 20).unwrap();
    // Written as a client of another build would: the key as text, in the wire's JSON.
    let reserve = |id: u64, key: &str| {
        serde_json::json!({"id": id, "body": {"op": {"reserve": {
            "key": key, "policy": policy, "timeout_ms": 60_000, "scope": null
        }}}})
    };
    raw.send_json(&[reserve(
        1,
        "aws/123456789012/us-east-1/elbv2:DescribeLoadBalancers",
    )]);
    assert!(matches!(
        raw.read().body,
        ResponseBody::Answer(Answer::Reserved(_))
    ));
    raw.send_json(&[reserve(2, "aws/1/us-east-1/elbv2:DescribeLoadBalancers")]);
    match raw.read().body {
        ResponseBody::Error(WireError::Rejected { reason }) => {
            assert!(reason.contains("not a canonical quota key"), "{reason}")
        }
        other => panic!("unexpected answer {other:?}"),
    }
    raw.send(&[(3, RequestBody::Ping)]);
    let pong = raw.read();
    assert_eq!(
        (pong.id, pong.body),
        (3, ResponseBody::Pong),
        "the connection stays up"
    );
    let canonical: QuotaKey =
        "aws/123456789012/us-east-1/elasticloadbalancingv2:DescribeLoadBalancers"
            .parse()
            .unwrap();
    let handle = coordinator.handle();
    runtime().block_on(async {
        let slot = handle
            .reserve(&canonical, policy, WaitOptions::default())
            .await
            .unwrap();
        assert_eq!(slot.key(), canonical.to_string());
        let keys = handle.status().await.unwrap();
        assert_eq!(keys.len(), 1, "one actor for both spellings: {keys:?}");
        assert_eq!(keys[0].key, canonical.to_string());
        assert_eq!(keys[0].state.reservations, 2, "{keys:?}");
    });
    drop(raw);
    runtime().block_on(coordinator.shutdown()).unwrap();
}

/// `cancel_scope` through a client says when the coordinator could not be asked; it used
/// to answer 0, as if the scope had had no waiters.
#[test]
fn cancelling_a_scope_through_a_closed_client_is_an_error_not_zero_waiters() {
    use tollgate_actors::AdmissionError;

    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let client = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(!client.is_coordinator());
    let handle = client.handle();
    runtime().block_on(async {
        assert_eq!(
            handle.cancel_scope(7).await.unwrap(),
            0,
            "nothing waits in 7"
        );
        handle.shutdown().await.unwrap();
        match handle.cancel_scope(7).await {
            Err(AdmissionError::Stopped) => {}
            other => panic!("expected the client's stop, got {other:?}"),
        }
        coordinator.shutdown().await.unwrap();
    });
}

/// A call's fused messages through the socket: the reservation asks the breaker's
/// passage in the same round trip, and the release carries the last reports, which the
/// coordinator applies as it applied the separate messages (the penalty deepens, five
/// transient answers open the scope, every slot goes back); an open breaker refuses the
/// reservation and frees its slot.
#[test]
fn through_the_socket_a_reservation_passes_the_breaker_and_a_release_carries_the_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    let rt = runtime();
    let client = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(!client.is_coordinator());
    let one_slot = Policy::new(1000.0, 10.0, 1, 20).unwrap();
    let wait = WaitOptions::default();
    rt.block_on(async {
        let handle = client.handle();
        for i in 0..5 {
            let (guard, passage, grant) = handle
                .reserve_and_pass(&key(), one_slot, wait, Some(1))
                .await
                .unwrap();
            assert_eq!(passage, tollgate_quota::Passage::Go);
            // The first call's admission rides along; after a transient answer the key's
            // penalty may hold the next one back, and its attempt then asks at dispatch.
            assert!(
                i > 0 || grant.is_some(),
                "a token was there for the first call"
            );
            let grant = match grant {
                Some(grant) => grant,
                None => guard.admit(1, false, wait).await.unwrap(),
            };
            assert!(!grant.retry_spent);
            let _ = crate::breakers::release_after_a_transient_answer(guard, &grant);
        }
        let short = WaitOptions {
            timeout: Duration::from_secs(1),
            scope: None,
        };
        let err = handle
            .reserve_and_pass(&key(), one_slot, short, None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, tollgate_actors::AdmissionError::BreakerOpen { .. }),
            "{err:?}"
        );
        let status = handle.coordination().await.unwrap();
        assert_eq!(status.keys[0].state.reservations, 0, "{status:?}");
        assert!(status.keys[0].state.penalty_steps > 0, "{status:?}");
        assert_eq!(status.breakers.len(), 1, "{status:?}");
    });
    rt.block_on(client.shutdown()).unwrap();
    rt.block_on(coordinator.shutdown()).unwrap();
}
