//! `RemoteClient`: admission through another process's coordinator, with failover.
//!
//! A dedicated thread owns the connection, and responses are matched by id, so any number
//! of requests are in flight at once. Callers write their requests to the socket
//! themselves through the shared [`Link`] (no hop through the thread on the way out; the
//! thread only flushes what a full socket could not take). A runtime that asks to
//! (`AdmissionHandle::read_answers_here`) reads the answers itself (no hop on the way back
//! either; see `reads`). The thread also pings a coordinator that stays silent while
//! requests wait, and gives up one that does not answer (see `wire`).
//! Every request stays *pending* until answered. When the connection
//! drops (the coordinator exited or was killed), the thread tries to connect again and, if
//! nobody serves the socket, to take the coordinator lock itself: the winner opens the
//! state and serves (and its own requests then go through its own socket like everyone
//! else's). Once connected again it re-sends everything pending in its original order, so
//! a waiting reservation or admission is answered by the successor. Slots already held
//! survive in the stored state; a slot the dead coordinator never stored is taken afresh
//! by its guard (see `ReservationGuard::admit`).
//!
//! Closing settles what was already sent (releases, feedback) within [`CLEANUP_BUDGET`].
//! A coordinator that hands over at that moment drops the connection, and with it a
//! release it had not read yet: so when the connection is lost while releases are still
//! unacknowledged, closing reconnects (or takes over) once, within
//! [`CLEANUP_RETRY_BUDGET`], re-sends them, and settles again. Past that budget they lapse
//! with the process: the coordinator releases a departed client's slots once its pid is
//! gone, and a successor reaps dead owners when it loads the key.
//!
//! A client that takes over starts its coordinator with the [`CoordinatorSpec`] it was
//! started with (the spec of the `connect` that made it), so the successor enforces the
//! same schedules and fleet mode as the process would have had it coordinated first.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tollgate_quota::{Clock, Owner, Timestamp};
use tollgate_storage::{AdmissionDir, CoordinatorLock};

use super::frame::{self, PROTOCOL_VERSION};
use super::link::Link;
use super::protocol::{Request, RequestBody, Response, ResponseBody, WireError};
use super::wire::Wire;
use crate::cleanup::Cleanup;
use crate::clock::TokioClock;
use crate::error::CoordinationErrorKind;
use crate::ops::{Answer, Operation};
use crate::spec::CoordinatorSpec;
use crate::AdmissionError;

/// The coordinator role a client holds after taking over. The client names no coordinator
/// type: [`crate::join`] hands it the function that starts one ([`TakeOver`],
/// `coordinator::take_over`), so `coordinator` → `runtime` → `handle` → this file closes
/// no import cycle (`scripts/file-cycles`).
pub(crate) trait HostedRole {
    /// Hand the role over gracefully (the coordinator's `shutdown`).
    fn hand_over(self: Box<Self>) -> Pin<Box<dyn Future<Output = Result<(), AdmissionError>>>>;
}

/// Starts the coordinator role under a lock this client acquired, enforcing the spec.
pub(crate) type TakeOver = fn(
    &AdmissionDir,
    CoordinatorLock,
    &CoordinatorSpec,
) -> Result<Box<dyn HostedRole>, AdmissionError>;

/// How long connecting or taking over may take before it is an error (DESIGN §5).
pub const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(5);
/// The first and the longest pause between connection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(2);
const BACKOFF_MAX: Duration = Duration::from_millis(50);
/// How long closing waits for releases already sent to be acknowledged (seed 000: final
/// cleanup has a separate 100 ms budget).
pub const CLEANUP_BUDGET: Duration = Duration::from_millis(100);
/// How long closing may spend reconnecting (or taking over) to re-send releases whose
/// connection was lost before they were acknowledged (seed 000: a cleanup retry has at
/// most 1 second to acquire storage).
pub const CLEANUP_RETRY_BUDGET: Duration = Duration::from_secs(1);

/// What only the connection thread can do (requests go through the [`Link`]).
enum Command {
    /// Let a task on this runtime read the answers (see `reads`).
    ReadOn(Handle),
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
    pub(crate) fn start(
        dir: AdmissionDir,
        owner: Owner,
        spec: CoordinatorSpec,
        take_over: TakeOver,
    ) -> Result<RemoteClient, AdmissionError> {
        Self::start_with_link(dir, owner, (spec, take_over), Link::new())
    }

    /// [`start`](Self::start) with the link the callers and the connection thread share
    /// (the tests give it shorter liveness timings).
    fn start_with_link(
        dir: AdmissionDir,
        owner: Owner,
        (spec, take_over): (CoordinatorSpec, TakeOver),
        link: Link,
    ) -> Result<RemoteClient, AdmissionError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let epoch = Arc::new(AtomicU64::new(0));
        let thread_epoch = epoch.clone();
        let link = Arc::new(link);
        let thread_link = link.clone();
        let thread = std::thread::Builder::new()
            .name("tollgate-client".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(AdmissionError::coordination(
                            CoordinationErrorKind::Client,
                            format!("cannot start the admission client: {e}"),
                        )));
                        return;
                    }
                };
                rt.block_on(run(
                    dir,
                    (spec, take_over),
                    owner,
                    thread_epoch,
                    thread_link,
                    rx,
                    ready_tx,
                ));
            })
            .map_err(|e| {
                AdmissionError::coordination(
                    CoordinationErrorKind::Client,
                    format!("cannot start the admission client: {e}"),
                )
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

    /// Have the current tokio runtime read the coordinator's answers (see `reads`); false
    /// outside a runtime.
    pub(crate) fn read_answers_here(&self) -> bool {
        match Handle::try_current() {
            Ok(h) => self.shared.tx.send(Command::ReadOn(h)).is_ok(),
            Err(_) => false,
        }
    }

    /// Send `op` and wait for its answer, with the connection epoch that answered it.
    pub(crate) async fn call(&self, op: Operation) -> Result<(Answer, u64), AdmissionError> {
        let (reply, rx) = oneshot::channel();
        self.shared.link.submit(RequestBody::Op(op), Some(reply))?;
        match rx.await.map_err(|_| AdmissionError::Stopped)?? {
            (ResponseBody::Answer(answer), epoch) => Ok((answer, epoch)),
            (ResponseBody::Error(e), _) => Err(e.into()),
            (other, _) => Err(out_of_protocol(&other)),
        }
    }

    /// Send `op` without waiting for its answer (it stays pending, and is re-sent after
    /// a failover, until the coordinator acknowledges it).
    pub(crate) fn tell(&self, op: Operation) {
        let _ = self.shared.link.submit(RequestBody::Op(op), None);
    }

    /// Tell the release `op`: [`Cleanup::Queued`] when no live connection takes it now (it
    /// waits in the pending table and is re-sent after the failover).
    pub(crate) fn tell_release(&self, op: Operation) -> Cleanup {
        let live = self.shared.link.is_connected();
        match self.shared.link.submit(RequestBody::Op(op), None) {
            Ok(()) if live => Cleanup::Released,
            _ => Cleanup::Queued,
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

fn out_of_protocol(body: &ResponseBody) -> AdmissionError {
    AdmissionError::coordination(
        CoordinationErrorKind::OutOfProtocol,
        format!(
            "the admission coordinator answered out of protocol ({body:?}); run one \
             tollgate version per admission directory"
        ),
    )
}

/// Why a connection ended.
enum Ended {
    /// Reconnect (or take over) and re-send.
    Lost,
    /// Every handle is gone, or shutdown was asked.
    Stop(Option<oneshot::Sender<Result<(), AdmissionError>>>),
    /// Closing, but the connection was lost with releases not yet acknowledged:
    /// reconnect once and re-send them (see the module docs).
    LostClosing(Option<oneshot::Sender<Result<(), AdmissionError>>>),
}

async fn run(
    dir: AdmissionDir,
    (spec, take_over): (CoordinatorSpec, TakeOver),
    owner: Owner,
    epoch: Arc<AtomicU64>,
    link: Arc<Link>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    ready: std::sync::mpsc::Sender<Result<(), AdmissionError>>,
) {
    let mut hosted: Option<Box<dyn HostedRole>> = None;
    // The runtime that asked to read the answers, if any.
    let mut host: Option<Handle> = None;
    let mut ready = Some(ready);
    // Set once closing lost its connection with releases unacknowledged: who asked to stop.
    let mut closing: Option<Option<oneshot::Sender<Result<(), AdmissionError>>>> = None;
    let stop = loop {
        if closing.is_some() {
            let reconnected = tokio::time::timeout(
                CLEANUP_RETRY_BUDGET,
                establish(&dir, (&spec, take_over), owner, &mut hosted),
            )
            .await;
            let Ok(Ok(stream)) = reconnected else {
                tracing::warn!(
                    "could not reach the admission coordinator again while closing; \
                     unacknowledged releases lapse with this process"
                );
                break closing.take().flatten();
            };
            let current = epoch.fetch_add(1, Ordering::AcqRel) + 1;
            converse(stream, current, &link, &mut host, &mut rx, true).await;
            break closing.take().flatten();
        }
        let stream = match establish(&dir, (&spec, take_over), owner, &mut hosted).await {
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
                        cmd = rx.recv() => match cmd {
                            Some(Command::ReadOn(h)) => host = Some(h),
                            cmd => break cmd,
                        },
                        _ = link.wake.notified() => if link.has_pending() {
                            break None;
                        },
                    }
                };
                match command {
                    Some(Command::Shutdown(done)) => break Some(done),
                    Some(Command::ReadOn(_)) => unreachable!("handled in the loop"),
                    None if link.has_pending() => continue,
                    None => break None,
                }
            }
        };
        let current = epoch.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(r) = ready.take() {
            let _ = r.send(Ok(()));
        }
        match converse(stream, current, &link, &mut host, &mut rx, false).await {
            Ended::Lost => {
                tracing::info!("admission coordinator connection lost; reconnecting");
                continue;
            }
            Ended::Stop(done) => break done,
            Ended::LostClosing(done) => {
                tracing::info!(
                    "admission coordinator connection lost while closing; re-sending releases"
                );
                closing = Some(done);
            }
        }
    };
    link.fail_pending(&AdmissionError::Stopped, true);
    let mut result = Ok(());
    if let Some(coordinator) = hosted {
        result = coordinator.hand_over().await;
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

/// Serve one connection until it is lost or we stop. Callers write their requests
/// themselves (see `link`); this reads the answers, and flushes what the socket could not
/// take at once. `closing`: only settle what is pending (re-sent on connecting), then stop.
async fn converse(
    stream: UnixStream,
    epoch: u64,
    link: &Arc<Link>,
    host: &mut Option<Handle>,
    rx: &mut mpsc::UnboundedReceiver<Command>,
    closing: bool,
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
    if closing {
        settle(&mut wire, link).await;
        return Ended::Stop(None);
    }
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(Command::ReadOn(h)) => {
                    wire.delegate(&h, link);
                    *host = Some(h);
                }
                Some(Command::Shutdown(done)) => {
                    return closed(settle(&mut wire, link).await, link, Some(done));
                }
                None => return closed(settle(&mut wire, link).await, link, None),
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

/// How a conversation that settled before stopping ends: with releases unacknowledged on
/// a lost connection, [`Ended::LostClosing`] (one more try), otherwise [`Ended::Stop`].
fn closed(
    lost: bool,
    link: &Link,
    done: Option<oneshot::Sender<Result<(), AdmissionError>>>,
) -> Ended {
    if lost && link.unsettled() {
        Ended::LostClosing(done)
    } else {
        Ended::Stop(done)
    }
}

/// Let releases and feedback already sent be written and acknowledged, within
/// [`CLEANUP_BUDGET`]. True if the connection was lost meanwhile.
async fn settle(wire: &mut Wire, link: &Link) -> bool {
    wire.flushing = true;
    tokio::time::timeout(CLEANUP_BUDGET, async {
        while link.unsettled() {
            if wire.turn(link).await.is_err() {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

/// Connect to the coordinator, or become it. Errors after [`TAKEOVER_TIMEOUT`].
async fn establish(
    dir: &AdmissionDir,
    (spec, take_over): (&CoordinatorSpec, TakeOver),
    owner: Owner,
    hosted: &mut Option<Box<dyn HostedRole>>,
) -> Result<UnixStream, AdmissionError> {
    let started = crate::clock::monotonic_now();
    let mut backoff = BACKOFF_MIN;
    let mut last_problem: String;
    loop {
        match UnixStream::connect(dir.socket_path()).await {
            Ok(mut stream) => match hello(&mut stream, owner).await {
                Ok(()) => return Ok(stream),
                Err(Hello::Refused(rejected)) => {
                    return Err(AdmissionError::coordination(
                        CoordinationErrorKind::Refused,
                        rejected,
                    ))
                }
                Err(Hello::Closed) => {
                    last_problem = format!(
                        "the coordinator closed the connection (a coordinator of another \
                         tollgate version does that: this build speaks protocol {PROTOCOL_VERSION})"
                    )
                }
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
            let lock = CoordinatorLock::try_acquire(dir).map_err(|e| {
                AdmissionError::coordination(CoordinationErrorKind::Takeover, e.to_string())
            })?;
            if let Some(lock) = lock {
                *hosted = Some(take_over(dir, lock, spec)?);
                continue;
            }
        }
        if crate::clock::since(started) >= TAKEOVER_TIMEOUT {
            let holder = tollgate_storage::read_holder(dir)
                .ok()
                .flatten()
                .map_or_else(|| "unknown".to_owned(), |h| h.pid.to_string());
            return Err(AdmissionError::coordination(
                CoordinationErrorKind::Unreachable,
                format!(
                    "could not reach or become the admission coordinator for {} within {}s \
                     ({last_problem}; lock holder pid {holder}); check that the process \
                     holding {} is healthy, or stop every tollgate process using this \
                     directory and retry",
                    dir.path().display(),
                    TAKEOVER_TIMEOUT.as_secs(),
                    dir.lock_path().display(),
                ),
            ));
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
    use crate::key::CanonicalKey;
    use crate::remote::liveness::LivenessTimes;
    use tollgate_quota::Policy;

    /// A client of the coordinator on `dir` as this process (a later generation than the
    /// coordinator's), a runtime to drive it, and the key the tests use.
    fn client_of_this_process(
        dir: AdmissionDir,
        times: LivenessTimes,
    ) -> (RemoteClient, tokio::runtime::Runtime, CanonicalKey) {
        let client = RemoteClient::start_with_link(
            dir,
            Owner {
                pid: std::process::id(),
                generation: 2,
            },
            (CoordinatorSpec::none(), crate::coordinator::take_over),
            Link::with_times(times),
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let key =
            CanonicalKey::parse("aws/123456789012/us-east-1/logs:DescribeLogStreams").unwrap();
        (client, rt, key)
    }

    /// A reservation that legitimately waits longer than the give-up delay is kept alive
    /// by pings: the client never drops a coordinator that answers them.
    #[test]
    fn a_long_legitimate_wait_is_pinged_not_given_up() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
        let coordinator = crate::connect(&dir, CoordinatorSpec::none()).unwrap();
        assert!(coordinator.is_coordinator());
        // The production rule on a short scale (the connection thread runs on the real
        // clock): pinged after 100 ms of silence, given up after 1 s without an answer.
        let times = LivenessTimes {
            ping_after: Duration::from_millis(100),
            unresponsive_after: Duration::from_secs(1),
            interval: Duration::from_millis(20),
        };
        // Each ping follows at least `ping_after` of silence from the reservation: this
        // many pings mean the reservation waited longer than `unresponsive_after`.
        const PINGS: u64 = 15;
        assert!(times.ping_after * PINGS as u32 > times.unresponsive_after);
        let (client, rt, key) = client_of_this_process(dir, times);
        let key = &key;
        // Concurrency 1: the second reservation waits for the first to go.
        let policy = Policy::new(1000.0, 10.0, 1, 20).unwrap();
        let minute = crate::WaitOptions {
            timeout: Duration::from_secs(60),
            scope: None,
        };
        rt.block_on(async {
            let reserve = || Operation::Reserve {
                key: key.clone(),
                policy,
                timeout: minute.timeout,
                scope: minute.scope,
            };
            let Ok((Answer::Reserved(first), _)) = client.call(reserve()).await else {
                panic!("the first reservation is granted at once");
            };
            let release_later = async {
                // Wait on the event (the pings), not on a guess of how long they take.
                while client.shared.link.pings() < PINGS {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                client.tell(Operation::Release {
                    key: key.clone(),
                    policy,
                    reservation: first,
                    feedback: None,
                    breaker: None,
                });
            };
            let (second, ()) = tokio::join!(client.call(reserve()), release_later);
            second.expect("the waiting reservation is granted once the slot is released");
            assert_eq!(client.epoch(), 1, "the client never gave its connection up");
            client.shutdown().await.unwrap();
            coordinator.shutdown().await.unwrap();
        });
    }

    /// Forward every connection on `listener` to `real`, except that the first release a
    /// client sends closes its connection unread, as a coordinator handing over does, once
    /// `go` says the client is closing.
    fn proxy_dropping_the_first_release(
        listener: std::os::unix::net::UnixListener,
        real: std::path::PathBuf,
        go: std::sync::mpsc::Receiver<()>,
        dropped: Arc<std::sync::atomic::AtomicBool>,
    ) {
        let go = Arc::new(Mutex::new(go));
        use std::io::{Read, Write};
        use std::os::unix::net::UnixStream as StdStream;
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(server) = StdStream::connect(&real) else {
                return;
            };
            let (mut to_client, mut from_server) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
            });
            let (dropped, go) = (dropped.clone(), go.clone());
            std::thread::spawn(move || {
                let mut server = server;
                loop {
                    let mut len = [0u8; 4];
                    if client.read_exact(&mut len).is_err() {
                        break;
                    }
                    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                    if client.read_exact(&mut body).is_err() {
                        break;
                    }
                    let doc: serde_json::Value = serde_json::from_slice(&body[1..]).unwrap();
                    if doc["body"]["op"].get("release").is_some()
                        && !dropped.swap(true, Ordering::SeqCst)
                    {
                        let _ = go.lock().unwrap().recv();
                        break;
                    }
                    if server
                        .write_all(&len)
                        .and_then(|()| server.write_all(&body))
                        .is_err()
                    {
                        break;
                    }
                }
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
        }
    }

    /// A coordinator that hands over while a client closes drops the release it had not
    /// read yet: the closing client connects again and re-sends it, so the slot is free in
    /// the coordinator's state instead of held until the lease lapses.
    #[test]
    fn a_release_lost_with_the_connection_while_closing_is_sent_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
        let coordinator = crate::connect(&dir, CoordinatorSpec::none()).unwrap();
        assert!(coordinator.is_coordinator());
        // The coordinator keeps listening under another name; the proxy takes its path.
        let real = tmp.path().join("real.sock");
        std::fs::rename(dir.socket_path(), &real).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(dir.socket_path()).unwrap();
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (go, wait) = std::sync::mpsc::channel();
        {
            let dropped = dropped.clone();
            std::thread::spawn(move || {
                proxy_dropping_the_first_release(listener, real, wait, dropped)
            });
        }
        let (client, rt, key) = client_of_this_process(dir, LivenessTimes::DEFAULT);
        let key = &key;
        let policy = Policy::new(1000.0, 10.0, 4, 20).unwrap();
        rt.block_on(async {
            let Ok((Answer::Reserved(slot), _)) = client
                .call(Operation::Reserve {
                    key: key.clone(),
                    policy,
                    timeout: Duration::from_secs(60),
                    scope: None,
                })
                .await
            else {
                panic!("the reservation is granted at once");
            };
            client.tell(Operation::Release {
                key: key.clone(),
                policy,
                reservation: slot,
                feedback: None,
                breaker: None,
            });
            // Ask to close first (the first poll sends the command), then drop the
            // release: the connection is lost while the client settles.
            let closing = client.shutdown();
            tokio::pin!(closing);
            tokio::select! {
                biased;
                _ = &mut closing => panic!("closing waits for the release's answer"),
                () = std::future::ready(()) => {}
            }
            go.send(()).unwrap();
            closing.await.unwrap();
            assert!(
                dropped.load(Ordering::SeqCst),
                "the proxy dropped the release"
            );
            let status = coordinator.handle().status().await.unwrap();
            let held: usize = status.iter().map(|k| k.state.reservations).sum();
            assert_eq!(held, 0, "the release reached the coordinator: {status:?}");
            coordinator.shutdown().await.unwrap();
        });
    }
}
