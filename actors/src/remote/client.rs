//! `RemoteClient`: admission through another process's coordinator, with failover.
//!
//! A dedicated thread owns the connection, and responses are matched by id, so any number
//! of requests are in flight at once. Callers write their requests to the socket
//! themselves through the shared [`Link`] (no hop through the thread on the way out; the
//! thread only flushes what a full socket could not take). A client opened inside a tokio
//! runtime has that runtime read the answers (no hop on the way back either; see `reads`).
//! Every request stays *pending* until answered. When the connection
//! drops (the coordinator exited or was killed), the thread tries to connect again and, if
//! nobody serves the socket, to take the coordinator lock itself: the winner opens the
//! state and serves (and its own requests then go through its own socket like everyone
//! else's). Once connected again it re-sends everything pending in its original order, so
//! a waiting reservation or admission is answered by the successor. Slots already held
//! survive in the stored state; a slot the dead coordinator never stored is taken afresh
//! by its guard (see `ReservationGuard::admit`).

use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::UnixStream;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tollgate_quota::{Clock, Grant, Outcome, Owner, Policy, ReservationId, Timestamp};
use tollgate_storage::{AdmissionDir, CoordinatorLock};

use super::frame::{self, PROTOCOL_VERSION};
use super::link::Link;
use super::protocol::{
    CoordinationStatus, Request, RequestBody, Response, ResponseBody, WireError,
};
use super::reads::{register, spawn_reader, Reads, STALLED_TICKS, WATCH_INTERVAL};
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

/// What only the connection thread can do (requests go through the [`Link`]).
enum Command {
    Shutdown(oneshot::Sender<Result<(), AdmissionError>>),
}

struct Shared {
    owner: Owner,
    clock: TokioClock,
    epoch: Arc<AtomicU64>,
    link: Arc<Link>,
    /// Dropping the last handle closes this, which stops the connection thread.
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
        let link = Arc::new(Link::new());
        let thread_link = link.clone();
        // Opened inside a runtime: that runtime reads the answers (see `reads`).
        let host = Handle::try_current().ok();
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
                rt.block_on(run(
                    dir,
                    owner,
                    thread_epoch,
                    thread_link,
                    host,
                    rx,
                    ready_tx,
                ));
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
                link,
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
        self.shared.link.submit(body, Some(reply))?;
        match rx.await.map_err(|_| AdmissionError::Stopped)?? {
            (ResponseBody::Error(e), _) => Err(e.into()),
            answer => Ok(answer),
        }
    }

    fn fire(&self, body: RequestBody) {
        let _ = self.shared.link.submit(body, None);
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
    link: Arc<Link>,
    mut host: Option<Handle>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    ready: std::sync::mpsc::Sender<Result<(), AdmissionError>>,
) {
    let mut hosted: Option<Coordinator> = None;
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
                link.fail_pending(&e, false);
                // Try again when there is something to send.
                let command = loop {
                    tokio::select! {
                        cmd = rx.recv() => break cmd,
                        _ = link.wake.notified() => if link.has_pending() {
                            break None;
                        },
                    }
                };
                match command {
                    Some(Command::Shutdown(done)) => break Some(done),
                    None if link.has_pending() => continue,
                    None => break None,
                }
            }
        };
        let current = epoch.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(r) = ready.take() {
            let _ = r.send(Ok(()));
        }
        match converse(stream, current, &link, &mut host, &mut rx).await {
            Ended::Lost => {
                tracing::info!("admission coordinator connection lost; reconnecting");
                continue;
            }
            Ended::Stop(done) => break done,
        }
    };
    link.fail_pending(&AdmissionError::Stopped, true);
    let mut result = Ok(());
    if let Some(coordinator) = hosted {
        result = coordinator.shutdown().await;
    }
    if let Some(done) = stop {
        let _ = done.send(result);
    }
}

/// Clears the link's connection when a conversation ends, however it ends: the callers'
/// duplicate of the socket must not keep the connection open.
struct Disconnect<'a>(&'a Link);

impl Drop for Disconnect<'_> {
    fn drop(&mut self) {
        self.0.disconnected();
    }
}

/// A delegated reader (see `reads`) and the connection thread's watch over it.
struct Delegated {
    task: tokio::task::JoinHandle<()>,
    /// The reader's progress at the last tick.
    seen: u64,
    /// Ticks in a row at which the thread found answers the reader had not read.
    stalled: u32,
}

/// One connection as the connection thread sees it: the read side (read here, or by a
/// task on the caller's runtime), and, while the outbox waits, write readiness.
///
/// The socket is registered for reading only: a registration that also asks for
/// writability is woken each time the coordinator consumes a request (the kernel signals
/// write space to every waiter), which would wake this thread once more per request.
/// Write readiness is registered, on a duplicate, only while a full socket holds the
/// outbox back.
struct Wire {
    reads: Arc<Reads>,
    /// This thread's read registration; `None` while a delegated reader reads.
    reader: Option<AsyncFd<StdUnixStream>>,
    delegated: Option<Delegated>,
    writable: Option<AsyncFd<StdUnixStream>>,
    flushing: bool,
    /// Watch the delegated reader ([`WATCH_INTERVAL`]) and the coordinator's liveness.
    tick: tokio::time::Interval,
    liveness: Liveness,
}

/// Whether the coordinator still answers: requests that wait in silence for
/// [`PING_AFTER`] send a `Ping`, and a ping unanswered for [`UNRESPONSIVE_AFTER`] gives the
/// connection up (a coordinator stopped with SIGSTOP or hung keeps its socket open and
/// its lock held, so nothing else would notice).
struct Liveness {
    /// Answers read at the last tick, and since when that count has not moved.
    seen: u64,
    quiet_since: tokio::time::Instant,
    ping_sent_at: Option<tokio::time::Instant>,
}

/// Silence (while requests wait) after which a client pings the coordinator.
const PING_AFTER: Duration = Duration::from_secs(1);
/// How long an unanswered ping may wait before the coordinator is given up on.
const UNRESPONSIVE_AFTER: Duration = Duration::from_secs(5);
/// The liveness check's period when no delegated reader needs watching.
const LIVENESS_INTERVAL: Duration = Duration::from_millis(500);

fn ticker(period: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

impl Wire {
    /// With `host`, answers are read by a task on that runtime (see `reads`).
    fn new(
        stream: UnixStream,
        epoch: u64,
        link: &Arc<Link>,
        host: Option<&Handle>,
    ) -> std::io::Result<(Wire, StdUnixStream)> {
        let stream = stream.into_std()?;
        let writer = stream.try_clone()?;
        let reads = Arc::new(Reads::new(stream, epoch));
        let mut wire = Wire {
            reads: reads.clone(),
            reader: None,
            delegated: None,
            writable: None,
            // Re-sent requests are queued: write them first.
            flushing: true,
            tick: ticker(LIVENESS_INTERVAL),
            liveness: Liveness {
                seen: 0,
                quiet_since: tokio::time::Instant::now(),
                ping_sent_at: None,
            },
        };
        match host {
            Some(host) => {
                wire.tick = ticker(WATCH_INTERVAL);
                wire.delegated = Some(Delegated {
                    task: spawn_reader(host, reads, link.clone()),
                    seen: 0,
                    stalled: 0,
                });
            }
            None => wire.read_here()?,
        }
        Ok((wire, writer))
    }

    /// Read on this thread from now on.
    fn read_here(&mut self) -> std::io::Result<()> {
        if let Some(d) = self.delegated.take() {
            self.reads.retire();
            d.task.abort();
            self.tick = ticker(LIVENESS_INTERVAL);
        }
        if self.reader.is_none() {
            self.reader = Some(register(self.reads.duplicate()?, Interest::READABLE)?);
        }
        Ok(())
    }

    /// Whether a task on the caller's runtime reads the answers.
    #[cfg(test)]
    fn is_delegated(&self) -> bool {
        self.delegated.is_some()
    }

    /// Flush the outbox if asked to, then wait for an answer, a wake-up from a caller,
    /// write space, or news of the delegated reader. `Ok(true)` if this thread took reading
    /// back from the caller's runtime; `Err` when the connection is lost.
    async fn turn(&mut self, link: &Link) -> Result<bool, ()> {
        if self.flushing {
            self.flushing = link.flush()?;
            if !self.flushing {
                self.writable = None;
            } else if self.writable.is_none() {
                let dup = self.reads.duplicate().map_err(|_| ())?;
                self.writable = Some(register(dup, Interest::WRITABLE).map_err(|_| ())?);
            }
        }
        let flushing = self.flushing;
        let delegated = self.delegated.is_some();
        tokio::select! {
            ready = wait_ready(self.reader.as_ref(), Interest::READABLE) => {
                let mut guard = ready.map_err(|_| ())?;
                self.reads.drain(link)?;
                guard.clear_ready();
            },
            _ = link.wake.notified() => self.flushing = true,
            ready = wait_ready(self.writable.as_ref(), Interest::WRITABLE), if flushing => {
                // Clear, then write again at the next turn: no edge is lost.
                ready.map_err(|_| ())?.clear_ready();
            },
            () = self.reads.ended.notified(), if delegated => {
                if self.reads.lost() {
                    return Err(());
                }
                // The caller's runtime dropped its reader (it shut down).
                tracing::debug!("the caller's runtime stopped reading admission answers");
                self.read_here().map_err(|_| ())?;
                return Ok(true);
            },
            _ = self.tick.tick() => {
                let took_back = self.watch(link)?;
                self.check_liveness(link)?;
                return Ok(took_back);
            },
        }
        Ok(false)
    }

    /// Ping a coordinator that has been silent while requests wait; `Err` (the connection
    /// is given up, as if lost) when a ping has gone unanswered for [`UNRESPONSIVE_AFTER`].
    fn check_liveness(&mut self, link: &Link) -> Result<(), ()> {
        let now = tokio::time::Instant::now();
        let answers = self.reads.answers();
        let l = &mut self.liveness;
        if answers != l.seen || !link.has_pending() {
            l.seen = answers;
            l.quiet_since = now;
            l.ping_sent_at = None;
            return Ok(());
        }
        match l.ping_sent_at {
            Some(sent) if now - sent >= UNRESPONSIVE_AFTER => {
                tracing::warn!(
                    "the admission coordinator has not answered for {}s (stopped or hung?); \
                     giving its connection up",
                    UNRESPONSIVE_AFTER.as_secs()
                );
                Err(())
            }
            Some(_) => Ok(()),
            None if now - l.quiet_since >= PING_AFTER => {
                // The answer only needs to arrive (it moves `answers`), not to be read.
                let (reply, _) = oneshot::channel();
                l.ping_sent_at = Some(now);
                link.submit(RequestBody::Ping, Some(reply)).map_err(|_| ())
            }
            None => Ok(()),
        }
    }

    /// Check the delegated reader: deliver answers it left waiting, and take reading back
    /// once it has stalled for [`STALLED_TICKS`] ticks.
    fn watch(&mut self, link: &Link) -> Result<bool, ()> {
        let Some(d) = self.delegated.as_mut() else {
            return Ok(false);
        };
        let progress = self.reads.progress();
        if progress != d.seen {
            d.seen = progress;
            d.stalled = 0;
            return Ok(false);
        }
        if !link.has_pending() {
            return Ok(false);
        }
        if self.reads.drain(link)? > 0 {
            d.stalled += 1;
            if d.stalled >= STALLED_TICKS {
                tracing::info!(
                    "the runtime this admission client was opened in has stopped running; \
                     its connection thread reads the answers from now on"
                );
                self.read_here().map_err(|_| ())?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        if let Some(d) = self.delegated.take() {
            self.reads.retire();
            d.task.abort();
        }
        // The delegated reader's duplicate may outlive this (its runtime drops it when it
        // next runs): end the connection itself, so the coordinator sees it close now.
        if let Ok(socket) = self.reads.duplicate() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }
}

async fn wait_ready(
    fd: Option<&AsyncFd<StdUnixStream>>,
    interest: Interest,
) -> std::io::Result<tokio::io::unix::AsyncFdReadyGuard<'_, StdUnixStream>> {
    match fd {
        Some(fd) => fd.ready(interest).await,
        None => std::future::pending().await,
    }
}

/// Serve one connection until it is lost or we stop. Callers write their requests
/// themselves (see `link`); this reads the answers, and flushes what the socket could not
/// take at once.
async fn converse(
    stream: UnixStream,
    epoch: u64,
    link: &Arc<Link>,
    host: &mut Option<Handle>,
    rx: &mut mpsc::UnboundedReceiver<Command>,
) -> Ended {
    let (mut wire, writer) = match Wire::new(stream, epoch, link, host.as_ref()) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "cannot share the admission connection");
            return Ended::Lost;
        }
    };
    if link.connected(writer).is_err() {
        return Ended::Stop(None);
    }
    let _disconnect = Disconnect(link);
    loop {
        tokio::select! {
            cmd = rx.recv() => {
                let done = cmd.map(|Command::Shutdown(done)| done);
                settle(&mut wire, link).await;
                return Ended::Stop(done);
            },
            turned = wire.turn(link) => match turned {
                // The caller's runtime stopped reading: later connections are read here.
                Ok(true) => *host = None,
                Ok(false) => {}
                Err(()) => return Ended::Lost,
            },
        }
    }
}

/// Let releases and feedback already sent be written and acknowledged, within
/// [`CLEANUP_BUDGET`].
async fn settle(wire: &mut Wire, link: &Link) {
    wire.flushing = true;
    let _ = tokio::time::timeout(CLEANUP_BUDGET, async {
        while link.unsettled() {
            if wire.turn(link).await.is_err() {
                return;
            }
        }
    })
    .await;
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
                Err(Hello::Refused(rejected)) => {
                    return Err(AdmissionError::Coordination(rejected))
                }
                Err(Hello::Closed) => last_problem = "the coordinator closed the connection".into(),
                Err(Hello::Silent) => {
                    last_problem = format!(
                        "the coordinator accepted the connection but did not answer within {}s: \
                         it may be stopped (SIGSTOP) or hung",
                        TAKEOVER_TIMEOUT.as_secs()
                    )
                }
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

/// Why a hello did not get a welcome.
enum Hello {
    Refused(String),
    Closed,
    Silent,
}

/// Say hello and wait for the welcome.
async fn hello(stream: &mut UnixStream, owner: Owner) -> Result<(), Hello> {
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
        })) => Err(Hello::Refused(format!(
            "the admission coordinator refused this process: {reason}"
        ))),
        Err(_) => Err(Hello::Silent),
        _ => Err(Hello::Closed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::frame::FrameReader;

    #[test]
    fn a_full_socket_holds_requests_in_the_outbox_until_the_coordinator_reads() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            let link = Arc::new(Link::new());
            let (mut wire, writer) = Wire::new(ours, 1, &link, None).unwrap();
            link.connected(writer).unwrap();
            // Far more than a socket buffer holds, while nobody reads.
            let n = 40_000u64;
            for scope in 0..n {
                link.submit(RequestBody::Cancel { scope }, None).unwrap();
            }
            assert_eq!(link.flush(), Ok(true), "the socket is full: bytes wait");
            let coordinator = async {
                let mut frames = FrameReader::new();
                let mut seen = Vec::new();
                while (seen.len() as u64) < n {
                    frames.fill(&mut theirs).await.unwrap();
                    while let Some(req) = frames.next_frame::<Request>().unwrap() {
                        seen.push((req.id, req.body));
                    }
                }
                seen
            };
            let flusher = async {
                loop {
                    wire.turn(&link).await.unwrap();
                }
            };
            let seen = tokio::select! {
                seen = coordinator => seen,
                () = flusher => unreachable!(),
            };
            let want: Vec<(u64, RequestBody)> = (0..n)
                .map(|scope| (scope + 1, RequestBody::Cancel { scope }))
                .collect();
            assert!(seen == want, "every request arrives once, whole, in order");
            assert_eq!(link.flush(), Ok(false), "nothing waits any more");
        });
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// Play the coordinator: read one request and answer it with `Cancelled { removed }`.
    async fn answer_one(theirs: &mut UnixStream, frames: &mut FrameReader, removed: usize) {
        let req = loop {
            if let Some(req) = frames.next_frame::<Request>().unwrap() {
                break req;
            }
            frames.fill(theirs).await.unwrap();
        };
        let body = ResponseBody::Cancelled { removed };
        frame::write(theirs, &Response { id: req.id, body })
            .await
            .unwrap();
    }

    fn ask(
        link: &Link,
        scope: u64,
    ) -> oneshot::Receiver<Result<(ResponseBody, u64), AdmissionError>> {
        let (tx, rx) = oneshot::channel();
        link.submit(RequestBody::Cancel { scope }, Some(tx))
            .unwrap();
        rx
    }

    fn removed(answer: Result<(ResponseBody, u64), AdmissionError>) -> usize {
        match answer.unwrap() {
            (ResponseBody::Cancelled { removed }, 1) => removed,
            other => panic!("unexpected answer {other:?}"),
        }
    }

    #[test]
    fn the_callers_runtime_reads_the_answers_without_the_connection_thread() {
        current_thread().block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            let link = Arc::new(Link::new());
            let (wire, writer) = Wire::new(ours, 1, &link, Some(&Handle::current())).unwrap();
            link.connected(writer).unwrap();
            assert!(wire.is_delegated());
            let mut frames = FrameReader::new();
            // The connection thread's side (`turn`) never runs here: only the task on this
            // runtime can deliver the answers.
            for n in 0..50 {
                let rx = ask(&link, n);
                answer_one(&mut theirs, &mut frames, n as usize).await;
                let answer = tokio::time::timeout(Duration::from_secs(10), rx)
                    .await
                    .expect("nobody read the answer");
                assert_eq!(removed(answer.unwrap()), n as usize);
            }
        });
    }

    #[test]
    fn a_shut_down_callers_runtime_hands_reading_back_to_the_connection_thread() {
        let host = current_thread();
        let host_handle = host.handle().clone();
        current_thread().block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            let link = Arc::new(Link::new());
            let (mut wire, writer) = Wire::new(ours, 1, &link, Some(&host_handle)).unwrap();
            link.connected(writer).unwrap();
            host.shutdown_background();
            let rx = ask(&link, 3);
            let mut frames = FrameReader::new();
            answer_one(&mut theirs, &mut frames, 3).await;
            let mut took_back = false;
            tokio::pin!(rx);
            let answer = loop {
                tokio::select! {
                    answer = &mut rx => break answer.unwrap(),
                    turned = wire.turn(&link) => took_back |= turned.unwrap(),
                }
            };
            assert_eq!(removed(answer), 3);
            assert!(took_back && !wire.is_delegated(), "the thread reads now");
        });
    }

    #[test]
    fn a_callers_runtime_that_is_no_longer_driven_is_watched_then_replaced() {
        // Alive but never driven again: its reader task never runs.
        let host = current_thread();
        current_thread().block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            let link = Arc::new(Link::new());
            let (mut wire, writer) = Wire::new(ours, 1, &link, Some(host.handle())).unwrap();
            link.connected(writer).unwrap();
            let mut frames = FrameReader::new();
            let mut took_back_at = None;
            for n in 0..(STALLED_TICKS as usize + 2) {
                let rx = ask(&link, n as u64);
                answer_one(&mut theirs, &mut frames, n).await;
                tokio::pin!(rx);
                let answer = loop {
                    tokio::select! {
                        answer = &mut rx => break answer.unwrap(),
                        turned = wire.turn(&link) => if turned.unwrap() {
                            took_back_at = Some(n);
                        },
                    }
                };
                assert_eq!(
                    removed(answer),
                    n,
                    "the watch delivers what the reader left"
                );
            }
            assert_eq!(
                took_back_at,
                Some(STALLED_TICKS as usize - 1),
                "reading comes back after {STALLED_TICKS} stalled ticks"
            );
            assert!(!wire.is_delegated());
        });
        drop(host);
    }
}
