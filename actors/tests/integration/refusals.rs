//! The coordinator's refusals, as the same OS user over a raw socket: what a client of
//! another build, a confused tool or a hostile process of the same user may send before
//! or instead of a proper hello. Each refused connection is answered (when there is
//! anything to answer) and closed, and the coordinator keeps serving everyone else.
//! (The in-flight cap is covered in `remote.rs`.)

// Real sockets: the hello timeout runs in the coordinator's real time.
#![allow(clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use tollgate_actors::remote::frame::{self, MAX_FRAME_BYTES, PROTOCOL_VERSION};
use tollgate_actors::remote::protocol::{Request, RequestBody, Response, ResponseBody, WireError};
use tollgate_actors::remote::server::HELLO_TIMEOUT;
use tollgate_actors::{connect, Admission, CoordinatorSpec};
use tollgate_storage::AdmissionDir;

struct Served {
    _tmp: tempfile::TempDir,
    dir: AdmissionDir,
    coordinator: Option<Admission>,
}

impl Served {
    fn start() -> Served {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
        let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
        assert!(coordinator.is_coordinator());
        Served {
            _tmp: tmp,
            dir,
            coordinator: Some(coordinator),
        }
    }

    fn raw(&self) -> UnixStream {
        let s = UnixStream::connect(self.dir.socket_path()).unwrap();
        s.set_read_timeout(Some(HELLO_TIMEOUT * 4)).unwrap();
        s
    }

    /// A proper client is still served.
    fn still_serves(&self) {
        let mut s = self.raw();
        send(&mut s, &hello(std::process::id(), PROTOCOL_VERSION));
        assert!(matches!(
            read(&mut s).unwrap().body,
            ResponseBody::Welcome { .. }
        ));
        send(
            &mut s,
            &Request {
                id: 1,
                body: RequestBody::Ping,
            },
        );
        assert_eq!(read(&mut s).unwrap().body, ResponseBody::Pong);
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(c) = self.coordinator.take() {
            let rt = tollgate_testkit::runtime();
            let _ = rt.block_on(c.shutdown());
        }
    }
}

fn hello(pid: u32, version: u8) -> Request {
    Request {
        id: 0,
        body: RequestBody::Hello {
            pid,
            generation: 1,
            uid: tollgate_storage::current_uid(),
            version,
        },
    }
}

fn send(s: &mut UnixStream, req: &Request) {
    s.write_all(&frame::encode(req).unwrap()).unwrap();
}

/// The next frame, or `None` when the coordinator closed the connection.
fn read(s: &mut UnixStream) -> Option<Response> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    Some(serde_json::from_slice(&body[1..]).unwrap())
}

fn rejected(resp: Option<Response>) -> String {
    match resp.map(|r| r.body) {
        Some(ResponseBody::Error(WireError::Rejected { reason })) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

fn assert_closed(s: &mut UnixStream) {
    let mut byte = [0u8; 1];
    assert_eq!(s.read(&mut byte).unwrap(), 0, "the connection is closed");
}

#[test]
fn a_first_frame_that_is_not_hello_is_refused_and_the_connection_closed() {
    let served = Served::start();
    let mut s = served.raw();
    send(
        &mut s,
        &Request {
            id: 9,
            body: RequestBody::Op(tollgate_actors::Operation::Status),
        },
    );
    let reason = rejected(read(&mut s));
    assert!(reason.contains("first request must be hello"), "{reason}");
    assert_closed(&mut s);
    served.still_serves();
}

#[test]
fn a_hello_with_another_pid_is_refused() {
    let served = Served::start();
    let mut s = served.raw();
    send(&mut s, &hello(std::process::id() + 1, PROTOCOL_VERSION));
    let reason = rejected(read(&mut s));
    assert!(
        reason.contains("hello does not match the connection"),
        "{reason}"
    );
    assert_closed(&mut s);
    served.still_serves();
}

#[test]
fn a_hello_with_another_protocol_version_is_refused_naming_the_expected_one() {
    let served = Served::start();
    let mut s = served.raw();
    // The frame's own version byte is this build's; the hello claims another protocol.
    send(&mut s, &hello(std::process::id(), PROTOCOL_VERSION - 1));
    let reason = rejected(read(&mut s));
    assert!(
        reason.contains(&format!("expected version {PROTOCOL_VERSION}")),
        "{reason}"
    );
    assert_closed(&mut s);
    served.still_serves();
}

#[test]
fn a_frame_over_the_size_cap_closes_the_connection_unread() {
    let served = Served::start();
    let mut s = served.raw();
    let len = u32::try_from(MAX_FRAME_BYTES + 1).unwrap();
    s.write_all(&len.to_be_bytes()).unwrap();
    // No body follows: the coordinator must not wait for (or allocate) 64 KiB + 1.
    assert!(read(&mut s).is_none(), "nothing is answered");
    served.still_serves();
}

#[test]
fn a_hello_that_never_comes_is_given_up_after_the_hello_timeout() {
    let served = Served::start();
    let mut s = served.raw();
    let started = Instant::now();
    assert!(read(&mut s).is_none(), "closed without an answer");
    let waited = started.elapsed();
    assert!(
        waited >= HELLO_TIMEOUT - Duration::from_millis(100) && waited < HELLO_TIMEOUT * 3,
        "closed after {waited:?}"
    );
    served.still_serves();
}
