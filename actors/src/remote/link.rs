//! `Link`: what a client's callers and its connection thread share.
//!
//! Callers write their requests to the socket themselves, without waking the connection
//! thread: under one lock a request gets its id, joins the pending table (so it is re-sent
//! after a failover) and is written with one non-blocking write. Only when the socket
//! cannot take it all (or is broken, or there is no connection) does the rest wait in the
//! outbox, and the connection thread is woken to flush it once the socket is writable.
//! Ids are handed out and bytes appended under the same lock, so the socket carries the
//! requests in id order, and a re-send in id order repeats that order.
//!
//! Inside [`batch_writes`], a caller's requests are appended but not written: the write
//! happens once, when the batch ends, so a call's last messages (its feedback, breaker
//! report and release, told one after another) cost the client one write and the
//! coordinator one wake-up instead of three. A batch is synchronous (a closure), so no
//! other task on the thread is held back by it.
//!
//! On a current-thread runtime (the CLI's and the service's discovery thread), requests
//! are also held until the runtime's current round of tasks has run, and written then by
//! one flush task: the answers of a round arrive together and their callers ask again in
//! the same round, so in `bench org` the client's writes fell from about 4 per AWS call to
//! 1.1, and the coordinator's CPU per call by about 12 %. The delay is the rest of the
//! round, which a request already waited for on that thread. If the runtime stops being
//! driven with requests held, dropping it flushes them (the flush task's drop), and the
//! connection thread's tick writes whatever is still queued meanwhile.
//!
//! # Why thread-local state is safe here
//! The batch (`BATCH`) and the round (`ROUND`) are thread-locals, not values a caller
//! holds, because the requests they hold back are sent from deep inside the gate (a
//! quota client's `reserve`, `feedback`, `release`), far from the code that knows a batch
//! or a round is open; threading a value through every call would change every signature
//! on the admission path for one write's worth of saving. Three invariants make that
//! safe:
//! 1. **Thread-local state holds which links to flush, never bytes.** A held request is
//!    numbered, made pending and encoded into its link's outbox under the link's lock,
//!    like any other, so it is re-sent after a failover and the socket sees id order
//!    whatever happens to the thread-local lists. Losing a list can only delay a write.
//! 2. **Every held link has a flusher that cannot be skipped**: a batch's guard (its
//!    `Drop`, so a panic flushes too); a round's flush task, which flushes when it runs
//!    *or* when it is dropped unrun; and, whatever else fails, the connection thread's
//!    tick, which writes the outbox while anything is pending (at most one tick late).
//! 3. **Whoever flushes takes the list** (`take()`), so no thread keeps a stale list: a
//!    round whose flush task was dropped on another thread finds its token gone and
//!    spawns a new task.
//!
//! The ways it could break, each with its test below: a batch inside a batch (joins the
//! outer one), a panic inside a batch, a batch inside a round (the batch's end writes),
//! a runtime dropped before its round ends, a runtime dropped on another thread, and a
//! runtime moved to another thread and driven there (the first thread's round is left to
//! its next round), and a round whose runtime is neither driven nor dropped (the tick).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde::Serialize;
use tokio::sync::{oneshot, Notify};

use super::frame;
use super::liveness::LivenessTimes;
use super::protocol::{RequestBody, ResponseBody};
use crate::AdmissionError;

/// Where a request's answer goes, with the connection epoch that answered it.
pub(super) type Reply = oneshot::Sender<Result<(ResponseBody, u64), AdmissionError>>;

/// A request sent and not yet answered.
pub(super) struct Pending {
    pub(super) body: RequestBody,
    /// `None` for fire-and-forget requests (feedback, release).
    pub(super) reply: Option<Reply>,
}

/// A [`Request`](super::protocol::Request) by reference: the same JSON, without a clone.
#[derive(Serialize)]
struct RequestRef<'a> {
    id: u64,
    body: &'a RequestBody,
}

/// The live connection's write side.
struct Conn {
    /// A non-blocking duplicate of the connection's socket.
    writer: StdUnixStream,
    /// Bytes not yet written, in order.
    outbox: Vec<u8>,
    /// A write failed: the connection thread reconnects.
    broken: bool,
}

#[derive(Default)]
struct Book {
    pending: BTreeMap<u64, Pending>,
    next_id: u64,
    conn: Option<Conn>,
    stopped: bool,
}

/// Shared by every handle of one client and its connection thread.
pub(super) struct Link {
    book: Mutex<Book>,
    /// Wakes the connection thread: the outbox waits, the connection broke, a request
    /// arrived while disconnected, or one arrived while the thread was idle.
    pub(super) wake: Notify,
    /// The connection thread stopped ticking (nothing was pending): the next request
    /// wakes it.
    idle: AtomicBool,
    /// When the connection thread pings a silent coordinator and gives it up.
    pub(super) times: LivenessTimes,
    /// Pings sent so far (the tests wait on it instead of on a fixed sleep).
    pings: AtomicU64,
}

fn stopped() -> AdmissionError {
    AdmissionError::Stopped
}

thread_local! {
    /// The batch open on this thread, if any: the links written to inside it, in the
    /// order they were first written to.
    static BATCH: RefCell<Option<Vec<Arc<Link>>>> = const { RefCell::new(None) };
}

/// Run `f`, holding back the socket writes of the requests it sends to coordinators of
/// other processes (from this thread) until it returns, then writing each connection's
/// requests at once, in their order. A batch inside a batch joins the outer one.
/// In-process admission is unaffected.
pub fn batch_writes<R>(f: impl FnOnce() -> R) -> R {
    struct Flush(bool);
    impl Drop for Flush {
        // On the way out, a panic included: nothing stays held back.
        fn drop(&mut self) {
            if !self.0 {
                return;
            }
            let links = BATCH.with(|b| b.borrow_mut().take()).unwrap_or_default();
            for link in links {
                link.flush_batch();
            }
        }
    }
    let outer = BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let outer = b.is_none();
        if outer {
            *b = Some(Vec::new());
        }
        outer
    });
    let _flush = Flush(outer);
    f()
}

thread_local! {
    /// The links whose requests wait for this thread's runtime to finish its current
    /// round of tasks, if any, and the token of the flush task spawned behind them (gone
    /// if that task was dropped on another thread without flushing this one's round).
    static ROUND: RefCell<Option<Round>> = const { RefCell::new(None) };
}

/// The links held to the end of a round, and its flush task's token.
type Round = (Vec<Arc<Link>>, Weak<()>);

/// On a current-thread runtime, hold `link`'s request back until the tasks the runtime
/// is running now have run: a flush task spawned behind them writes everything they sent
/// at once. Many calls' requests then share one write (their answers come in batches,
/// and each wakes a caller that asks again in the same round), and the coordinator reads
/// and decodes them in one go. Elsewhere (no runtime, a multi-thread one): `None`, write
/// now. `Some(handle)`: the runtime to spawn the flush task on, once the caller released
/// the link's lock (the first request held in this round); `Some(None)`: already spawned.
fn held_to_round_end(link: &Arc<Link>) -> Option<Option<tokio::runtime::Handle>> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread {
        return None;
    }
    ROUND.with(|t| {
        let mut t = t.borrow_mut();
        match t.as_mut() {
            Some((links, token)) => {
                if !links.iter().any(|l| Arc::ptr_eq(l, link)) {
                    links.push(link.clone());
                }
                // A round whose flush task is gone gets a new one (it flushes the
                // round's earlier links too).
                Some((token.strong_count() == 0).then_some(handle))
            }
            None => {
                *t = Some((vec![link.clone()], Weak::new()));
                Some(Some(handle))
            }
        }
    })
}

/// Spawn the round's flush task on `handle`. A runtime shutting down drops it unrun,
/// which flushes at once (see [`RoundFlush`]).
fn spawn_round_flush(handle: &tokio::runtime::Handle) {
    let token = Arc::new(());
    ROUND.with(|t| {
        if let Some((_, held)) = t.borrow_mut().as_mut() {
            *held = Arc::downgrade(&token);
        }
    });
    let flush = RoundFlush { _token: token };
    handle.spawn(async move { drop(flush) });
}

/// Flushes this thread's held links when dropped: when the flush task runs, or when it
/// is dropped unrun (its runtime shut down). Dropped on another thread, it flushes that
/// thread's round, if any (early, which is harmless), and this thread's round finds its
/// token gone and spawns a new flush.
struct RoundFlush {
    _token: Arc<()>,
}

impl Drop for RoundFlush {
    fn drop(&mut self) {
        let links = ROUND.with(|t| t.borrow_mut().take());
        for link in links.map(|(links, _)| links).unwrap_or_default() {
            link.flush_batch();
        }
    }
}

/// Whether a batch is open on this thread; if so, `link` is flushed when it ends.
fn held_in_batch(link: &Arc<Link>) -> bool {
    BATCH.with(|b| match b.borrow_mut().as_mut() {
        Some(links) => {
            if !links.iter().any(|l| Arc::ptr_eq(l, link)) {
                links.push(link.clone());
            }
            true
        }
        None => false,
    })
}

impl Link {
    pub(super) fn new() -> Self {
        Link::with_times(LivenessTimes::DEFAULT)
    }

    pub(super) fn with_times(times: LivenessTimes) -> Self {
        Link {
            book: Mutex::new(Book {
                next_id: 1,
                ..Book::default()
            }),
            wake: Notify::new(),
            idle: AtomicBool::new(false),
            times,
            pings: AtomicU64::new(0),
        }
    }

    /// The connection thread sent a ping.
    pub(super) fn pinged(&self) {
        self.pings.fetch_add(1, Ordering::Relaxed);
    }

    /// Pings sent on every connection so far.
    #[cfg(test)]
    pub(super) fn pings(&self) -> u64 {
        self.pings.load(Ordering::Relaxed)
    }

    /// The connection thread would stop ticking: true if it may (nothing is pending; a
    /// request from now on wakes it), false if a request arrived meanwhile.
    pub(super) fn go_idle(&self) -> bool {
        self.idle.store(true, Ordering::SeqCst);
        if self.has_pending() {
            self.idle.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn book(&self) -> Result<MutexGuard<'_, Book>, AdmissionError> {
        self.book.lock().map_err(|_| stopped())
    }

    /// Number `body`, keep it pending and write it (or queue it for the connection thread).
    pub(super) fn submit(
        self: &Arc<Self>,
        body: RequestBody,
        reply: Option<Reply>,
    ) -> Result<(), AdmissionError> {
        self.submit_with(body, reply, Some(self))
    }

    /// [`Link::submit`] outside any batch: the connection thread's own requests (pings).
    pub(super) fn submit_now(
        &self,
        body: RequestBody,
        reply: Option<Reply>,
    ) -> Result<(), AdmissionError> {
        self.submit_with(body, reply, None)
    }

    fn submit_with(
        &self,
        body: RequestBody,
        reply: Option<Reply>,
        batchable: Option<&Arc<Link>>,
    ) -> Result<(), AdmissionError> {
        let mut book = self.book()?;
        if book.stopped {
            return Err(stopped());
        }
        let id = book.next_id;
        let mut wake = true;
        let mut spawn_flush = None;
        if let Some(conn) = book.conn.as_mut().filter(|c| !c.broken) {
            let was_empty = conn.outbox.is_empty();
            frame::encode_into(&mut conn.outbox, &RequestRef { id, body: &body }).map_err(|e| {
                AdmissionError::coordination(
                    crate::error::CoordinationErrorKind::Client,
                    format!("cannot send an admission request: {e}"),
                )
            })?;
            // With bytes already queued, the connection thread is flushing: keep the order.
            // In a batch, the batch's end writes them (or wakes the thread if the socket
            // is full): the bytes queued may be the batch's own.
            let held = match batchable {
                Some(link) if held_in_batch(link) => true,
                Some(link) => match held_to_round_end(link) {
                    Some(spawn) => {
                        spawn_flush = spawn;
                        true
                    }
                    None => false,
                },
                None => false,
            };
            wake = !held && (!was_empty || !conn.write_some());
        }
        book.next_id += 1;
        book.pending.insert(id, Pending { body, reply });
        drop(book);
        if let Some(handle) = spawn_flush {
            spawn_round_flush(&handle);
        }
        // After the insert: `go_idle` either sees this request or is seen here. Read
        // first, so a busy connection's requests do not all write the shared flag.
        if self.idle.load(Ordering::SeqCst) && self.idle.swap(false, Ordering::SeqCst) {
            wake = true;
        }
        if wake {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// A batch ended: write what it held back; what the socket does not take now (or a
    /// broken connection) is the connection thread's to finish.
    fn flush_batch(&self) {
        let Ok(mut book) = self.book() else {
            return;
        };
        let Some(conn) = book.conn.as_mut() else {
            return;
        };
        let done = !conn.broken && (conn.outbox.is_empty() || conn.write_some());
        drop(book);
        if !done {
            self.wake.notify_one();
        }
    }

    /// Whether a connection that has not failed a write is up.
    pub(super) fn is_connected(&self) -> bool {
        self.book()
            .map(|book| book.conn.as_ref().is_some_and(|c| !c.broken))
            .unwrap_or(false)
    }

    /// A new connection: queue every pending request, in id order, for the connection
    /// thread to write.
    pub(super) fn connected(&self, writer: StdUnixStream) -> Result<(), AdmissionError> {
        let mut book = self.book()?;
        let mut outbox = Vec::new();
        for (&id, p) in book.pending.iter() {
            // Every pending request was encoded once already, so this cannot fail.
            let _ = frame::encode_into(&mut outbox, &RequestRef { id, body: &p.body });
        }
        book.conn = Some(Conn {
            writer,
            outbox,
            broken: false,
        });
        Ok(())
    }

    /// The connection is gone: callers only queue until the next one.
    pub(super) fn disconnected(&self) {
        if let Ok(mut book) = self.book.lock() {
            book.conn = None;
        }
    }

    /// Write what the outbox holds. `Ok(true)` if bytes remain (the socket is full: wait
    /// until it is writable), `Err` if the connection broke.
    pub(super) fn flush(&self) -> Result<bool, ()> {
        let mut book = self.book.lock().map_err(|_| ())?;
        let Some(conn) = book.conn.as_mut() else {
            return Ok(false);
        };
        if !conn.broken && !conn.outbox.is_empty() {
            conn.write_some();
        }
        if conn.broken {
            return Err(());
        }
        Ok(!conn.outbox.is_empty())
    }

    /// The answer to request `id` arrived: hand it over (an unknown id was answered before
    /// a failover and re-sent; the first answer counts).
    pub(super) fn answered(&self, id: u64, body: ResponseBody, epoch: u64) {
        let pending = self
            .book
            .lock()
            .ok()
            .and_then(|mut b| b.pending.remove(&id));
        if let Some(Pending {
            reply: Some(reply), ..
        }) = pending
        {
            let _ = reply.send(Ok((body, epoch)));
        }
    }

    /// Whether fire-and-forget requests still wait for their acknowledgement.
    pub(super) fn unsettled(&self) -> bool {
        self.book
            .lock()
            .map(|b| b.pending.values().any(|p| p.reply.is_none()))
            .unwrap_or(false)
    }

    pub(super) fn has_pending(&self) -> bool {
        self.book
            .lock()
            .map(|b| !b.pending.is_empty())
            .unwrap_or(false)
    }

    /// Answer every pending request with `error` and forget them; with `stop`, refuse
    /// every later request too.
    pub(super) fn fail_pending(&self, error: &AdmissionError, stop: bool) {
        let pending = match self.book.lock() {
            Ok(mut book) => {
                if stop {
                    book.stopped = true;
                    book.conn = None;
                }
                std::mem::take(&mut book.pending)
            }
            Err(_) => return,
        };
        for (_, p) in pending {
            if let Some(reply) = p.reply {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

impl Conn {
    /// Write as much of the outbox as the socket takes now; false if the connection
    /// thread must finish it (or reconnect).
    fn write_some(&mut self) -> bool {
        loop {
            match (&self.writer).write(&self.outbox) {
                Ok(0) => return false,
                Ok(n) if n == self.outbox.len() => {
                    self.outbox.clear();
                    return true;
                }
                Ok(n) => drop(self.outbox.drain(..n)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(e) => {
                    tracing::debug!(error = %e, "writing to the admission coordinator failed");
                    self.broken = true;
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::ops::Operation;

    fn cancel(scope: u64) -> RequestBody {
        RequestBody::Op(Operation::Cancel { scope })
    }

    /// A link connected to one end of a socket pair; the other end, non-blocking.
    fn linked() -> (Arc<Link>, StdUnixStream) {
        let (ours, theirs) = StdUnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        theirs.set_nonblocking(true).unwrap();
        let link = Arc::new(Link::new());
        link.connected(ours).unwrap();
        (link, theirs)
    }

    /// Every byte readable now.
    fn readable(peer: &mut StdUnixStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match peer.read(&mut buf) {
                Ok(0) => return got,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return got,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// The request ids of the frames in `bytes`.
    fn ids(bytes: &[u8]) -> Vec<u64> {
        if bytes.is_empty() {
            return Vec::new();
        }
        let mut frames = frame::FrameReader::new();
        let _ = frames.read_from(bytes).unwrap();
        let mut ids = Vec::new();
        while let Some(req) = frames
            .next_frame::<super::super::protocol::Request>()
            .unwrap()
        {
            ids.push(req.id);
        }
        ids
    }

    #[test]
    fn requests_sent_in_a_batch_are_written_when_it_ends_in_their_order() {
        let (link, mut peer) = linked();
        link.submit(cancel(1), None).unwrap();
        assert_eq!(
            ids(&readable(&mut peer)),
            [1],
            "outside a batch: written at once"
        );
        let inside = batch_writes(|| {
            link.submit(cancel(2), None).unwrap();
            batch_writes(|| link.submit(cancel(3), None).unwrap());
            link.submit(cancel(4), None).unwrap();
            readable(&mut peer)
        });
        assert!(inside.is_empty(), "held back while the batch is open");
        assert_eq!(ids(&readable(&mut peer)), [2, 3, 4]);
        assert_eq!(link.book().unwrap().pending.len(), 4, "all still pending");
        link.submit(cancel(5), None).unwrap();
        assert_eq!(ids(&readable(&mut peer)), [5], "the batch is over");
    }

    #[test]
    fn a_batch_that_panics_still_writes_what_it_held() {
        let (link, mut peer) = linked();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            batch_writes(|| {
                link.submit(cancel(1), None).unwrap();
                panic!("in the batch");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(ids(&readable(&mut peer)), [1]);
        link.submit(cancel(2), None).unwrap();
        assert_eq!(ids(&readable(&mut peer)), [2], "no batch is left open");
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn on_a_current_thread_runtime_a_rounds_requests_leave_together_when_it_ends() {
        let (link, mut peer) = linked();
        current_thread().block_on(async {
            // Two tasks of one round each send a request; the round ends when both ran.
            let (a, b) = (link.clone(), link.clone());
            let first = tokio::spawn(async move { a.submit(cancel(1), None).unwrap() });
            let second = tokio::spawn(async move { b.submit(cancel(2), None).unwrap() });
            link.submit(cancel(3), None).unwrap();
            assert!(
                ids(&readable(&mut peer)).is_empty(),
                "held while the round runs"
            );
            first.await.unwrap();
            second.await.unwrap();
            tokio::task::yield_now().await;
            assert_eq!(
                ids(&readable(&mut peer)),
                [1, 2, 3],
                "one write, in id order"
            );
            link.submit(cancel(4), None).unwrap();
            tokio::task::yield_now().await;
            assert_eq!(
                ids(&readable(&mut peer)),
                [4],
                "a new round holds and flushes again"
            );
        });
    }

    #[test]
    fn a_runtime_dropped_before_its_round_ends_still_writes_what_it_held() {
        let (link, mut peer) = linked();
        let rt = current_thread();
        // `block_on` returns before the flush task ran; dropping the runtime drops it.
        rt.block_on(async { link.submit(cancel(1), None).unwrap() });
        assert!(ids(&readable(&mut peer)).is_empty());
        drop(rt);
        assert_eq!(ids(&readable(&mut peer)), [1]);
        link.submit(cancel(2), None).unwrap();
        assert_eq!(ids(&readable(&mut peer)), [2], "outside a runtime: at once");
    }

    #[test]
    fn a_round_whose_flush_task_was_dropped_on_another_thread_is_flushed_by_the_next_round() {
        let (link, mut peer) = linked();
        let rt = current_thread();
        rt.block_on(async { link.submit(cancel(1), None).unwrap() });
        // The runtime, its flush task still queued, is dropped on another thread: this
        // thread's round is left without a flush task.
        std::thread::spawn(move || drop(rt)).join().unwrap();
        assert!(ids(&readable(&mut peer)).is_empty());
        current_thread().block_on(async {
            link.submit(cancel(2), None).unwrap();
            tokio::task::yield_now().await;
            assert_eq!(ids(&readable(&mut peer)), [1, 2], "the new round's flush");
        });
    }

    #[test]
    fn a_batch_inside_a_round_writes_when_the_batch_ends_not_at_the_rounds_end() {
        let (link, mut peer) = linked();
        current_thread().block_on(async {
            link.submit(cancel(1), None).unwrap();
            let inside = batch_writes(|| {
                link.submit(cancel(2), None).unwrap();
                readable(&mut peer)
            });
            assert!(inside.is_empty(), "held while the batch is open");
            // The batch's end writes the link's whole outbox: the round's request too.
            assert_eq!(ids(&readable(&mut peer)), [1, 2]);
            tokio::task::yield_now().await;
            assert!(
                ids(&readable(&mut peer)).is_empty(),
                "the round's flush finds nothing left"
            );
        });
    }

    #[test]
    fn a_runtime_moved_to_another_thread_leaves_this_threads_round_to_its_next_round() {
        let (link, mut peer) = linked();
        let rt = current_thread();
        rt.block_on(async { link.submit(cancel(1), None).unwrap() });
        // Driven on another thread, the flush task runs there and flushes that thread's
        // round (none), not this one's.
        let moved = link.clone();
        std::thread::spawn(move || {
            rt.block_on(async {
                tokio::task::yield_now().await;
                moved.submit(cancel(2), None).unwrap();
                tokio::task::yield_now().await;
            });
        })
        .join()
        .unwrap();
        // Request 2's round flushed the link's outbox, which held request 1 too: a held
        // request is bytes in the link, not in the thread's list.
        assert_eq!(ids(&readable(&mut peer)), [1, 2], "one outbox, in id order");
        // This thread's round still names the link, its flush task gone with the move:
        // its next round spawns a new one.
        current_thread().block_on(async {
            link.submit(cancel(3), None).unwrap();
            tokio::task::yield_now().await;
            assert_eq!(ids(&readable(&mut peer)), [3], "this thread's next round");
        });
    }

    #[test]
    fn a_request_held_by_a_round_nobody_flushes_is_written_by_the_connection_threads_tick() {
        let (link, mut peer) = linked();
        let rt = current_thread();
        rt.block_on(async { link.submit(cancel(1), None).unwrap() });
        // The runtime is kept (not dropped, not driven): its flush task never runs.
        assert!(ids(&readable(&mut peer)).is_empty());
        assert!(link.has_pending(), "the connection thread keeps ticking");
        assert_eq!(link.flush(), Ok(false), "the tick writes the held bytes");
        assert_eq!(ids(&readable(&mut peer)), [1]);
        drop(rt);
        assert!(
            ids(&readable(&mut peer)).is_empty(),
            "nothing written twice"
        );
    }
}
