//! The coordinator's socket server: accepts clients of the same OS user and forwards their
//! requests to this process's quota actors.
//!
//! Each connection is checked before it is served: the peer's uid (SO_PEERCRED) must be
//! ours and its `Hello` must name the pid the kernel reports. Requests then run as separate
//! tasks, so a reservation waiting for a slot does not hold up the connection's other
//! requests. A frame that is oversized, malformed or of an unknown version closes that
//! connection only, with the reason logged. When a client goes away its queued waiters
//! are cancelled at once; its reservations are released once its process is gone (a
//! process that is still alive may reconnect and keep using them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tollgate_quota::key::QuotaKey;
use tollgate_quota::Owner;

use super::frame::{self, FrameReader, PROTOCOL_VERSION};
use super::protocol::{
    ClientInfo, CoordinationStatus, Request, RequestBody, Response, ResponseBody, WireError,
};
use crate::local::{LocalAdmission, DEFAULT_RESERVATION_TTL};
use crate::messages::CancelScope;

/// How long a new connection has to say `Hello`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a departed client's pid is checked before its reservations are released.
const DEPARTED_POLL: Duration = Duration::from_millis(100);

/// The clients connected right now.
#[derive(Debug, Default)]
pub struct ClientTable {
    next: AtomicU64,
    clients: Mutex<HashMap<u64, (Owner, Arc<AtomicUsize>)>>,
}

impl ClientTable {
    fn add(&self, owner: Owner) -> (u64, Arc<AtomicUsize>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let in_flight = Arc::new(AtomicUsize::new(0));
        if let Ok(mut c) = self.clients.lock() {
            c.insert(id, (owner, in_flight.clone()));
        }
        (id, in_flight)
    }

    fn remove(&self, id: u64) {
        if let Ok(mut c) = self.clients.lock() {
            c.remove(&id);
        }
    }

    fn is_connected(&self, owner: Owner) -> bool {
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
                    connections.spawn(connection(stream, ctx.clone()));
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
    let (mut reader, writer) = stream.into_split();
    let (tx, rx) = mpsc::unbounded_channel::<Response>();
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let mut requests = JoinSet::new();
    // One read takes in every frame the client has sent so far.
    let mut frames = FrameReader::new();
    'connection: loop {
        loop {
            match frames.next_frame::<Request>() {
                Ok(Some(req)) => {
                    while requests.try_join_next().is_some() {}
                    let (ctx, tx, in_flight) = (ctx.clone(), tx.clone(), in_flight.clone());
                    in_flight.fetch_add(1, Ordering::Relaxed);
                    requests.spawn(async move {
                        let body = answer(req.body, owner, &ctx).await;
                        in_flight.fetch_sub(1, Ordering::Relaxed);
                        let _ = tx.send(Response { id: req.id, body });
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(pid = owner.pid, reason = %e, "closing an admission connection");
                    break 'connection;
                }
            }
        }
        match frames.fill(&mut reader).await {
            Ok(()) => {}
            Err(frame::FrameError::Closed) => break,
            Err(e) => {
                tracing::warn!(pid = owner.pid, reason = %e, "closing an admission connection");
                break;
            }
        }
    }
    requests.abort_all();
    writer_task.abort();
    ctx.clients.remove(conn_id);
    departed(owner, ctx).await;
}

/// Write responses as they are answered: every response ready at a wake-up goes out in one
/// write, encoded into one reused buffer.
async fn write_loop(mut writer: OwnedWriteHalf, mut rx: mpsc::UnboundedReceiver<Response>) {
    let mut buf = Vec::new();
    while let Some(resp) = rx.recv().await {
        buf.clear();
        let mut encoded = frame::encode_into(&mut buf, &resp);
        while encoded.is_ok() {
            match rx.try_recv() {
                Ok(more) => encoded = frame::encode_into(&mut buf, &more),
                Err(_) => break,
            }
        }
        // The frames before one that cannot be encoded still go out.
        let written = writer.write_all(&buf).await.map_err(frame::FrameError::Io);
        if let Err(e) = written.and(encoded) {
            tracing::debug!(error = %e, "an admission client stopped reading");
            return;
        }
    }
}

/// A client's connection closed: its queued waiters never start; its slots go back once
/// its process is gone (bounded by the reservation lifetime, after which they lapse anyway).
async fn departed(owner: Owner, ctx: Ctx) {
    ctx.local.cancel(CancelScope::Owner(owner)).await;
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

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

async fn answer(body: RequestBody, owner: Owner, ctx: &Ctx) -> ResponseBody {
    let l = &ctx.local;
    let checked = |key: &str| -> Result<(), WireError> {
        key.parse::<QuotaKey>()
            .map(|_| ())
            .map_err(|e| WireError::Rejected {
                reason: format!("not a canonical quota key: {e}"),
            })
    };
    let result: Result<ResponseBody, WireError> = async {
        Ok(match body {
            RequestBody::Hello { .. } => {
                return Err(WireError::Rejected {
                    reason: "hello was already said".into(),
                })
            }
            RequestBody::Reserve {
                key,
                policy,
                timeout_ms,
                scope,
            } => {
                checked(&key)?;
                let reservation = l
                    .reserve(owner, &key, policy, ms(timeout_ms), scope)
                    .await?;
                ResponseBody::Reserved { reservation }
            }
            RequestBody::Admit {
                key,
                policy,
                reservation,
                cost,
                retry,
                timeout_ms,
                scope,
            } => {
                checked(&key)?;
                let g = l
                    .admit(
                        owner,
                        &key,
                        policy,
                        reservation,
                        cost,
                        retry,
                        ms(timeout_ms),
                        scope,
                    )
                    .await?;
                ResponseBody::Admitted {
                    admitted_at: g.admitted_at,
                    retry_spent: g.retry_spent,
                }
            }
            RequestBody::Feedback {
                key,
                policy,
                outcome,
                admitted_at,
                refund_retry,
            } => {
                checked(&key)?;
                l.feedback(&key, policy, outcome, admitted_at, refund_retry)
                    .await?;
                ResponseBody::Done
            }
            RequestBody::Release {
                key,
                policy,
                reservation,
            } => {
                checked(&key)?;
                l.release(owner, &key, policy, reservation).await?;
                ResponseBody::Done
            }
            RequestBody::Cancel { scope } => ResponseBody::Cancelled {
                removed: l.cancel(CancelScope::Scope(scope)).await,
            },
            RequestBody::Status => ResponseBody::Status(CoordinationStatus {
                coordinator_pid: l.owner().pid,
                clients: ctx.clients.list(),
                keys: l.status().await?,
            }),
        })
    }
    .await;
    result.unwrap_or_else(ResponseBody::Error)
}
