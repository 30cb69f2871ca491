//! `RemoteClient`: admission through another process's coordinator, with failover.
//!
//! A dedicated thread owns the connection. Callers hand it requests over a channel; it
//! numbers them, writes them, and matches responses by id, so any number of requests are
//! in flight at once. Every request stays *pending* until answered. When the connection
//! drops (the coordinator exited or was killed), the thread tries to connect again and, if
//! nobody serves the socket, to take the coordinator lock itself: the winner opens the
//! state and serves (and its own requests then go through its own socket like everyone
//! else's). Once connected again it re-sends everything pending in its original order, so
//! a waiting reservation or admission is answered by the successor. Slots already held
//! survive in the stored state; a slot the dead coordinator never stored is taken afresh
//! by its guard (see `ReservationGuard::admit`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tollgate_quota::{Clock, Grant, Outcome, Owner, Policy, ReservationId, Timestamp};
use tollgate_storage::{AdmissionDir, CoordinatorLock};

use super::frame::{self, PROTOCOL_VERSION};
use super::protocol::{
    CoordinationStatus, Request, RequestBody, Response, ResponseBody, WireError,
};
use crate::clock::TokioClock;
use crate::coordinator::Coordinator;
use crate::AdmissionError;

/// How long connecting or taking over may take before it is an error (DESIGN §5).
pub const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(5);
/// The first and the longest pause between connection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(2);
const BACKOFF_MAX: Duration = Duration::from_millis(50);
/// How long closing waits for releases already sent to be acknowledged (seed 000: final
/// cleanup has a separate 100 ms budget).
pub const CLEANUP_BUDGET: Duration = Duration::from_millis(100);

type Reply = oneshot::Sender<Result<(ResponseBody, u64), AdmissionError>>;

enum Command {
    Call {
        body: RequestBody,
        reply: Option<Reply>,
    },
    Shutdown(oneshot::Sender<Result<(), AdmissionError>>),
}

struct Shared {
    owner: Owner,
    clock: TokioClock,
    epoch: Arc<AtomicU64>,
    tx: mpsc::UnboundedSender<Command>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A client of the coordinator's socket. Cheap to clone.
#[derive(Clone)]
pub(crate) struct RemoteClient {
    shared: Arc<Shared>,
}

impl RemoteClient {
    /// Connect (electing ourselves if nobody serves), waiting at most [`TAKEOVER_TIMEOUT`].
    pub(crate) fn start(dir: AdmissionDir, owner: Owner) -> Result<RemoteClient, AdmissionError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let epoch = Arc::new(AtomicU64::new(0));
        let thread_epoch = epoch.clone();
        let thread = std::thread::Builder::new()
            .name("tollgate-client".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(AdmissionError::Coordination(format!(
                            "cannot start the admission client: {e}"
                        ))));
                        return;
                    }
                };
                rt.block_on(run(dir, owner, thread_epoch, rx, ready_tx));
            })
            .map_err(|e| {
                AdmissionError::Coordination(format!("cannot start the admission client: {e}"))
            })?;
        ready_rx.recv().map_err(|_| AdmissionError::Stopped)??;
        Ok(RemoteClient {
            shared: Arc::new(Shared {
                owner,
                clock: TokioClock::system(),
                epoch,
                tx,
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    pub(crate) fn owner(&self) -> Owner {
        self.shared.owner
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    /// Bumped by every (re)connection.
    pub(crate) fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::Acquire)
    }

    async fn call(&self, body: RequestBody) -> Result<(ResponseBody, u64), AdmissionError> {
        let (reply, rx) = oneshot::channel();
        self.shared
            .tx
            .send(Command::Call {
                body,
                reply: Some(reply),
            })
            .map_err(|_| AdmissionError::Stopped)?;
        match rx.await.map_err(|_| AdmissionError::Stopped)?? {
            (ResponseBody::Error(e), _) => Err(e.into()),
            answer => Ok(answer),
        }
    }

    fn fire(&self, body: RequestBody) {
        let _ = self.shared.tx.send(Command::Call { body, reply: None });
    }

    pub(crate) async fn reserve(
        &self,
        key: &str,
        policy: Policy,
        timeout: Duration,
        scope: u64,
    ) -> Result<(ReservationId, u64), AdmissionError> {
        let body = RequestBody::Reserve {
            key: key.to_owned(),
            policy,
            timeout_ms: millis(timeout),
            scope,
        };
        match self.call(body).await? {
            (ResponseBody::Reserved { reservation }, epoch) => Ok((reservation, epoch)),
            (other, _) => Err(unexpected(&other)),
        }
    }

    #[allow(clippy::too_many_arguments)] // the wire request, field for field
    pub(crate) async fn admit(
        &self,
        key: &str,
        policy: Policy,
        reservation: ReservationId,
        cost: u32,
        retry: bool,
        timeout: Duration,
        scope: u64,
    ) -> Result<Grant, AdmissionError> {
        let body = RequestBody::Admit {
            key: key.to_owned(),
            policy,
            reservation,
            cost,
            retry,
            timeout_ms: millis(timeout),
            scope,
        };
        match self.call(body).await? {
            (
                ResponseBody::Admitted {
                    admitted_at,
                    retry_spent,
                },
                _,
            ) => Ok(Grant {
                admitted_at,
                retry_spent,
            }),
            (other, _) => Err(unexpected(&other)),
        }
    }

    pub(crate) fn feedback(
        &self,
        key: &str,
        policy: Policy,
        outcome: Outcome,
        admitted_at: Timestamp,
        refund_retry: bool,
    ) {
        self.fire(RequestBody::Feedback {
            key: key.to_owned(),
            policy,
            outcome,
            admitted_at,
            refund_retry,
        });
    }

    pub(crate) fn release(&self, key: &str, policy: Policy, reservation: ReservationId) {
        self.fire(RequestBody::Release {
            key: key.to_owned(),
            policy,
            reservation,
        });
    }

    pub(crate) async fn cancel_scope(&self, scope: u64) -> Result<usize, AdmissionError> {
        match self.call(RequestBody::Cancel { scope }).await? {
            (ResponseBody::Cancelled { removed }, _) => Ok(removed),
            (other, _) => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn status(&self) -> Result<CoordinationStatus, AdmissionError> {
        match self.call(RequestBody::Status).await? {
            (ResponseBody::Status(s), _) => Ok(s),
            (other, _) => Err(unexpected(&other)),
        }
    }

    /// Close the connection after everything already sent (releases included) is written,
    /// and hand over the coordinator role if this process took it during a failover.
    pub(crate) async fn shutdown(&self) -> Result<(), AdmissionError> {
        let (done, rx) = oneshot::channel();
        if self.shared.tx.send(Command::Shutdown(done)).is_err() {
            return Ok(());
        }
        let result = rx.await.unwrap_or(Ok(()));
        let thread = self.shared.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread {
            let (tx, rx) = oneshot::channel();
            std::thread::spawn(move || {
                let _ = tx.send(thread.join());
            });
            let _ = rx.await;
        }
        result
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn unexpected(body: &ResponseBody) -> AdmissionError {
    AdmissionError::Coordination(format!(
        "the admission coordinator answered out of protocol ({body:?}); run one tollgate \
         version per admission directory"
    ))
}

struct Pending {
    body: RequestBody,
    reply: Option<Reply>,
}

/// Why a connection ended.
enum Ended {
    /// Reconnect (or take over) and re-send.
    Lost,
    /// Every handle is gone, or shutdown was asked.
    Stop(Option<oneshot::Sender<Result<(), AdmissionError>>>),
}

async fn run(
    dir: AdmissionDir,
    owner: Owner,
    epoch: Arc<AtomicU64>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    ready: std::sync::mpsc::Sender<Result<(), AdmissionError>>,
) {
    let mut hosted: Option<Coordinator> = None;
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut next_id: u64 = 1;
    let mut ready = Some(ready);
    let stop = loop {
        let stream = match establish(&dir, owner, &mut hosted).await {
            Ok(s) => s,
            Err(e) => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(e));
                    break None;
                }
                tracing::error!(error = %e, "admission coordinator unreachable");
                for (_, p) in std::mem::take(&mut pending) {
                    if let Some(reply) = p.reply {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
                // Try again when there is something to send.
                match rx.recv().await {
                    Some(Command::Call { body, reply }) => {
                        pending.insert(next_id, Pending { body, reply });
                        next_id += 1;
                        continue;
                    }
                    Some(Command::Shutdown(done)) => break Some(done),
                    None => break None,
                }
            }
        };
        let current = epoch.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(r) = ready.take() {
            let _ = r.send(Ok(()));
        }
        match converse(stream, current, &mut rx, &mut pending, &mut next_id).await {
            Ended::Lost => {
                tracing::info!("admission coordinator connection lost; reconnecting");
                continue;
            }
            Ended::Stop(done) => break done,
        }
    };
    for (_, p) in pending {
        if let Some(reply) = p.reply {
            let _ = reply.send(Err(AdmissionError::Stopped));
        }
    }
    let mut result = Ok(());
    if let Some(coordinator) = hosted {
        result = coordinator.shutdown().await;
    }
    if let Some(done) = stop {
        let _ = done.send(result);
    }
}

/// Serve one connection until it is lost or we stop.
async fn converse(
    stream: UnixStream,
    epoch: u64,
    rx: &mut mpsc::UnboundedReceiver<Command>,
    pending: &mut BTreeMap<u64, Pending>,
    next_id: &mut u64,
) -> Ended {
    let (reader, mut writer) = stream.into_split();
    let (resp_tx, mut resp_rx) = mpsc::unbounded_channel();
    let reader_task = tokio::spawn(read_loop(reader, resp_tx));
    let _abort_reader = AbortOnDrop(reader_task);
    for (&id, p) in pending.iter() {
        if send(&mut writer, id, &p.body).await.is_err() {
            return Ended::Lost;
        }
    }
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(Command::Call { body, reply }) => {
                    let id = *next_id;
                    *next_id += 1;
                    let sent = send(&mut writer, id, &body).await;
                    pending.insert(id, Pending { body, reply });
                    if sent.is_err() {
                        return Ended::Lost;
                    }
                }
                Some(Command::Shutdown(done)) => {
                    settle(epoch, &mut resp_rx, pending).await;
                    return Ended::Stop(Some(done));
                }
                None => {
                    settle(epoch, &mut resp_rx, pending).await;
                    return Ended::Stop(None);
                }
            },
            resp = resp_rx.recv() => match resp {
                Some(Response { id, body }) => {
                    if let Some(Pending { reply: Some(reply), .. }) = pending.remove(&id) {
                        let _ = reply.send(Ok((body, epoch)));
                    }
                }
                None => return Ended::Lost,
            },
        }
    }
}

/// Let releases and feedback already sent be acknowledged, within [`CLEANUP_BUDGET`].
async fn settle(
    epoch: u64,
    resp_rx: &mut mpsc::UnboundedReceiver<Response>,
    pending: &mut BTreeMap<u64, Pending>,
) {
    let _ = tokio::time::timeout(CLEANUP_BUDGET, async {
        while pending.values().any(|p| p.reply.is_none()) {
            match resp_rx.recv().await {
                Some(Response { id, body }) => {
                    if let Some(Pending {
                        reply: Some(reply), ..
                    }) = pending.remove(&id)
                    {
                        let _ = reply.send(Ok((body, epoch)));
                    }
                }
                None => return,
            }
        }
    })
    .await;
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn send(writer: &mut OwnedWriteHalf, id: u64, body: &RequestBody) -> Result<(), ()> {
    let req = Request {
        id,
        body: body.clone(),
    };
    frame::write(writer, &req).await.map_err(|e| {
        tracing::debug!(error = %e, "writing to the admission coordinator failed");
    })
}

async fn read_loop(mut reader: OwnedReadHalf, tx: mpsc::UnboundedSender<Response>) {
    loop {
        match frame::read::<Response, _>(&mut reader).await {
            Ok(resp) => {
                if tx.send(resp).is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::debug!(reason = %e, "admission coordinator connection ended");
                return;
            }
        }
    }
}

/// Connect to the coordinator, or become it. Errors after [`TAKEOVER_TIMEOUT`].
async fn establish(
    dir: &AdmissionDir,
    owner: Owner,
    hosted: &mut Option<Coordinator>,
) -> Result<UnixStream, AdmissionError> {
    let started = tokio::time::Instant::now();
    let mut backoff = BACKOFF_MIN;
    let mut last_problem: String;
    loop {
        match UnixStream::connect(dir.socket_path()).await {
            Ok(mut stream) => match hello(&mut stream, owner).await {
                Ok(()) => return Ok(stream),
                Err(Some(rejected)) => return Err(AdmissionError::Coordination(rejected)),
                Err(None) => last_problem = "the coordinator closed the connection".into(),
            },
            Err(e) => last_problem = format!("connecting to its socket failed: {e}"),
        }
        if hosted.is_none() {
            let lock = CoordinatorLock::try_acquire(dir)
                .map_err(|e| AdmissionError::Coordination(e.to_string()))?;
            if let Some(lock) = lock {
                *hosted = Some(Coordinator::start(dir, lock)?);
                continue;
            }
        }
        if started.elapsed() >= TAKEOVER_TIMEOUT {
            let holder = tollgate_storage::read_holder(dir)
                .ok()
                .flatten()
                .map_or_else(|| "unknown".to_owned(), |h| h.pid.to_string());
            return Err(AdmissionError::Coordination(format!(
                "could not reach or become the admission coordinator for {} within {}s \
                 ({last_problem}; lock holder pid {holder}); check that the process holding \
                 {} is healthy, or stop every tollgate process using this directory and retry",
                dir.path().display(),
                TAKEOVER_TIMEOUT.as_secs(),
                dir.lock_path().display(),
            )));
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Say hello; `Err(Some(reason))` if refused, `Err(None)` if the connection failed.
async fn hello(stream: &mut UnixStream, owner: Owner) -> Result<(), Option<String>> {
    let req = Request {
        id: 0,
        body: RequestBody::Hello {
            pid: owner.pid,
            generation: owner.generation,
            uid: tollgate_storage::current_uid(),
            version: PROTOCOL_VERSION,
        },
    };
    // A coordinator that refuses us may answer and close before our hello is written:
    // read its answer even if writing failed.
    let _ = frame::write(stream, &req).await;
    let answer = tokio::time::timeout(TAKEOVER_TIMEOUT, frame::read::<Response, _>(stream)).await;
    match answer {
        Ok(Ok(Response {
            body: ResponseBody::Welcome { .. },
            ..
        })) => Ok(()),
        Ok(Ok(Response {
            body: ResponseBody::Error(WireError::Rejected { reason }),
            ..
        })) => Err(Some(format!(
            "the admission coordinator refused this process: {reason}"
        ))),
        _ => Err(None),
    }
}
