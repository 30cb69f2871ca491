//! The coordinator's socket server: accepts clients of the same OS user and forwards their
//! requests to this process's quota actors.
//!
//! Each connection is checked before it is served: the peer's uid (SO_PEERCRED) must be
//! ours and its `Hello` must name the pid the kernel reports. Requests then run concurrently
//! inside the connection's task, so a reservation waiting for a slot does not hold up the
//! connection's other requests; the answers ready at one wake-up go out in one write. A frame that is oversized, malformed or of an unknown version closes that
//! connection only, with the reason logged. When a client goes away its queued waiters
//! are cancelled at once; its reservations are released once its process is gone (a
//! process that is still alive may reconnect and keep using them).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tollgate_quota::Owner;

use super::clients::ClientTable;
use super::frame::{self, FrameReader, PROTOCOL_VERSION};
use super::protocol::{Request, RequestBody, Response, ResponseBody, WireError};
use super::socket::Socket;
use crate::local::{Caller, LocalAdmission, DEFAULT_RESERVATION_TTL};
use crate::messages::CancelScope;

/// How long a new connection has to say `Hello`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Requests one connection may have in flight; beyond that a reservation or admission is
/// answered at once with an error, so a client that sends without end cannot make the
/// coordinator hold waiters without bound (and, reading on, the coordinator still sees its
/// releases, pings and departure). Far above what a process waits on at once (its
/// collectors' concurrent calls).
pub const MAX_IN_FLIGHT: usize = 16_384;
/// How often a departed client's pid is checked before its reservations are released.
const DEPARTED_POLL: Duration = Duration::from_millis(100);

/// What every connection needs.
#[derive(Clone)]
struct Ctx {
    local: Arc<LocalAdmission>,
    clients: Arc<ClientTable>,
    generation: u64,
    uid: u32,
}

/// Serve `listener` until `stop` fires, then drop every connection (clients see the socket
/// close and elect a successor once the lock is free).
pub(crate) async fn serve(
    listener: UnixListener,
    local: Arc<LocalAdmission>,
    generation: u64,
    stop: oneshot::Receiver<()>,
) {
    let clients = Arc::new(ClientTable::default());
    local.attach_clients(clients.clone());
    let ctx = Ctx {
        local,
        clients,
        generation,
        uid: tollgate_storage::current_uid(),
    };
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    while connections.try_join_next().is_some() {}
                    // On the actors' LocalSet: a request and its answer then run in one pass
                    // of it, with no hop between the runtime's queue and the LocalSet (which
                    // cost a non-blocking poll of the driver per request).
                    connections.spawn_local(connection(stream, ctx.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accepting an admission client failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
    connections.shutdown().await;
}

async fn reject(stream: &mut UnixStream, id: u64, reason: String) {
    tracing::warn!(%reason, "refused an admission client");
    let body = ResponseBody::Error(WireError::Rejected { reason });
    let _ = frame::write(stream, &Response { id, body }).await;
}

/// Check the peer and its hello; the owner to act for, or `None` after refusing it.
async fn admit_peer(stream: &mut UnixStream, ctx: &Ctx) -> Option<Owner> {
    let cred = match stream.peer_cred() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read an admission client's credentials");
            return None;
        }
    };
    if cred.uid() != ctx.uid {
        let reason = format!(
            "uid {} may not use the admission directory of uid {}; each OS user has its own \
             admission state",
            cred.uid(),
            ctx.uid
        );
        reject(stream, 0, reason).await;
        return None;
    }
    let hello = tokio::time::timeout(HELLO_TIMEOUT, frame::read::<Request, _>(stream)).await;
    let hello = match hello {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            tracing::warn!(reason = %e, "closing an admission connection before hello");
            return None;
        }
        Err(_) => {
            tracing::warn!("closing an admission connection that never said hello");
            return None;
        }
    };
    let RequestBody::Hello {
        pid,
        generation,
        uid,
        version,
    } = hello.body
    else {
        reject(stream, hello.id, "the first request must be hello".into()).await;
        return None;
    };
    let kernel_pid = cred.pid().and_then(|p| u32::try_from(p).ok());
    if version != PROTOCOL_VERSION || uid != ctx.uid || kernel_pid.is_some_and(|k| k != pid) {
        let reason = format!(
            "hello does not match the connection (version {version}, pid {pid}, uid {uid}; \
             expected version {PROTOCOL_VERSION}, pid {kernel_pid:?}, uid {})",
            ctx.uid
        );
        reject(stream, hello.id, reason).await;
        return None;
    }
    let welcome = ResponseBody::Welcome {
        coordinator_pid: ctx.local.owner().pid,
        generation: ctx.generation,
    };
    let sent = frame::write(
        stream,
        &Response {
            id: hello.id,
            body: welcome,
        },
    )
    .await;
    sent.ok().map(|()| Owner { pid, generation })
}

async fn connection(mut stream: UnixStream, ctx: Ctx) {
    let Some(owner) = admit_peer(&mut stream, &ctx).await else {
        return;
    };
    let (conn_id, in_flight) = ctx.clients.add(owner);
    tracing::debug!(pid = owner.pid, "admission client connected");
    let socket = match Socket::new(stream) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(pid = owner.pid, error = %e, "cannot serve an admission connection");
            ctx.clients.remove(conn_id);
            departed(owner, conn_id, ctx).await;
            return;
        }
    };
    // Requests run concurrently inside this task (a reservation waiting for a slot does
    // not hold up the others); no task or channel per request.
    let mut requests = FuturesUnordered::new();
    // One read takes in every frame the client has sent so far; every answer ready at a
    // wake-up goes out in one write, encoded into one reused buffer.
    let mut frames = FrameReader::new();
    let mut out = Vec::new();
    let ended = loop {
        let mut broken = None;
        loop {
            let (id, request) = match frames.next_frame::<Request>() {
                Ok(Some(req)) => (req.id, Ok(req.body)),
                Ok(None) => break,
                // A request whose body does not decode (a key that is not a quota key)
                // is answered, and the connection goes on.
                Err(frame::FrameError::Undecodable { id, error }) => {
                    let reason = format!("request {id} cannot be served: {error}");
                    (id, Err(ResponseBody::Error(WireError::Rejected { reason })))
                }
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            };
            in_flight.fetch_add(1, Ordering::Relaxed);
            let (ctx, in_flight) = (&ctx, &in_flight);
            // Only the requests that may wait are refused over the cap: the others
            // complete at once, and releases and pings must get through.
            let refused = requests.len() >= MAX_IN_FLIGHT
                && matches!(&request, Ok(RequestBody::Op(op)) if op.may_wait());
            let caller = Caller {
                owner,
                connection: conn_id,
            };
            requests.push(async move {
                let body = match request {
                    Ok(_) if refused => too_many(),
                    Ok(body) => answer(body, caller, ctx).await,
                    Err(refusal) => refusal,
                };
                in_flight.fetch_sub(1, Ordering::Relaxed);
                Response { id, body }
            });
        }
        if let Some(e) = broken {
            break e;
        }
        tokio::select! {
            Some(resp) = requests.next(), if !requests.is_empty() => {
                out.clear();
                encode_answer(&mut out, resp);
                while let Some(Some(resp)) = requests.next().now_or_never() {
                    encode_answer(&mut out, resp);
                }
                if let Err(e) = socket.write_all(&out).await {
                    break frame::FrameError::Io(e);
                }
            },
            filled = socket.fill(&mut frames) => if let Err(e) = filled {
                break e;
            },
        }
    };
    match ended {
        frame::FrameError::Closed => {}
        e => tracing::warn!(pid = owner.pid, reason = %e, "closing an admission connection"),
    }
    drop(requests);
    ctx.clients.remove(conn_id);
    departed(owner, conn_id, ctx).await;
}

/// Append `resp` as a frame; an answer too large for a frame becomes an error answer.
fn encode_answer(out: &mut Vec<u8>, resp: Response) {
    if let Err(e) = frame::encode_into(out, &resp) {
        let body = ResponseBody::Error(WireError::Rejected {
            reason: format!("the answer cannot be sent: {e}"),
        });
        let refused = frame::encode_into(out, &Response { id: resp.id, body });
        debug_assert!(refused.is_ok(), "a short error answer always encodes");
    }
}

/// The answer to a reservation or admission beyond [`MAX_IN_FLIGHT`].
fn too_many() -> ResponseBody {
    ResponseBody::Error(WireError::Rejected {
        reason: format!(
            "more than {MAX_IN_FLIGHT} requests are in flight on this process's connection \
             to the admission coordinator; wait for some to complete"
        ),
    })
}

/// A client's connection closed: the waiters it sent never start (a reconnection of the
/// same process re-sends what it still wants, under its own connection id); its slots go
/// back once its process is gone (bounded by the reservation lifetime, after which they
/// lapse anyway).
async fn departed(owner: Owner, connection: u64, ctx: Ctx) {
    let _ = ctx.local.cancel(CancelScope::Connection(connection)).await;
    let polls = DEFAULT_RESERVATION_TTL.as_millis() / DEPARTED_POLL.as_millis();
    for _ in 0..polls {
        if ctx.clients.is_connected(owner) {
            return; // it came back and keeps its slots
        }
        if !tollgate_storage::pid_alive(owner.pid) {
            let released = ctx.local.release_owner(owner).await;
            tracing::debug!(
                pid = owner.pid,
                released,
                "released a departed client's slots"
            );
            return;
        }
        tokio::time::sleep(DEPARTED_POLL).await;
    }
}

/// Decode, call, encode: the request's operation goes to the in-process backend as it
/// came (its key was parsed when the frame was decoded, see `keys`).
async fn answer(body: RequestBody, caller: Caller, ctx: &Ctx) -> ResponseBody {
    match body {
        RequestBody::Op(op) => match ctx.local.serve(op, caller, None).await {
            Ok(answer) => ResponseBody::Answer(answer),
            Err(e) => ResponseBody::Error(e.into()),
        },
        RequestBody::Ping => ResponseBody::Pong,
        RequestBody::Hello { .. } => ResponseBody::Error(WireError::Rejected {
            reason: "hello was already said".into(),
        }),
    }
}
