//! `Wire`: one coordinator connection as the client's connection thread sees it.
//!
//! - **Reading.** Answers are read on this thread, or by a task on a runtime that asked to
//!   read them (`AdmissionHandle::read_answers_here`, see `reads`). The thread watches such
//!   a reader and takes reading back when its runtime shuts down or stops being driven.
//! - **Writing.** Callers write their requests themselves (see `link`); the thread only
//!   flushes what a full socket could not take. The socket is registered for reading
//!   only: a registration that also asks for writability is woken each time the
//!   coordinator consumes a request (the kernel signals write space to every waiter),
//!   which would wake this thread once more per request. Write readiness is registered, on
//!   a duplicate, only while a full socket holds the outbox back.
//! - **Liveness.** While requests wait and nothing arrives for [`PING_AFTER`](super::liveness::PING_AFTER), the thread
//!   sends a `Ping`; a ping unanswered for [`UNRESPONSIVE_AFTER`](super::liveness::UNRESPONSIVE_AFTER) gives the connection up
//!   (as if lost). A coordinator stopped with SIGSTOP, or whose connection task is stuck,
//!   keeps its socket open and its lock held, so nothing else would notice. (Its quota
//!   actors being stuck is not detected this way: pings are answered by the connection
//!   task; requests then wait until their own deadlines.)
//! - **Idle.** With nothing pending for [`DORMANT_AFTER`], the thread stops ticking: the
//!   next request wakes it. Not at once: a busy client's pending table empties for an
//!   instant between calls again and again, and a thread that stopped at each such instant
//!   would be woken by nearly every call (a futex wake-up and a context switch on the
//!   caller's thread: about one per AWS call in `bench org`).

use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::UnixStream;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::{Instant, Interval};

use crate::clock::monotonic_now;

use super::link::Link;
use super::liveness::LivenessTimes;
use super::protocol::RequestBody;
use super::reads::{spawn_reader, Reads, STALLED_TICKS, WATCH_INTERVAL};
use super::socket::register;

/// A delegated reader and the thread's watch over it.
struct Delegated {
    task: tokio::task::JoinHandle<()>,
    /// The reader's progress at the last tick.
    seen: u64,
    /// Ticks (not necessarily in a row) at which the thread found answers the reader had
    /// left, with no progress from it since the previous tick.
    stalled: u32,
}

/// See the module docs, "Liveness".
struct Liveness {
    /// Answers read at the last tick, and since when that count has not moved.
    seen: u64,
    quiet_since: Instant,
    ping_sent_at: Option<Instant>,
}

impl Liveness {
    fn reset(&mut self, answers: u64, now: Instant) {
        self.seen = answers;
        self.quiet_since = now;
        self.ping_sent_at = None;
    }
}

pub(super) struct Wire {
    reads: Arc<Reads>,
    /// This thread's read registration; `None` while a delegated reader reads.
    reader: Option<AsyncFd<StdUnixStream>>,
    delegated: Option<Delegated>,
    writable: Option<AsyncFd<StdUnixStream>>,
    /// The outbox may hold bytes: flush at the next turn.
    pub(super) flushing: bool,
    /// Watch the delegated reader and the coordinator's liveness, while anything is pending.
    tick: Interval,
    ticking: bool,
    /// Since when the ticks found nothing pending.
    idle_since: Option<Instant>,
    liveness: Liveness,
    times: LivenessTimes,
}

/// How long nothing must be pending before the thread stops ticking (see "Idle").
pub(super) const DORMANT_AFTER: Duration = Duration::from_secs(2);

/// An interval whose first tick is one period away (tokio's fires at once).
fn ticker(period: Duration) -> Interval {
    let mut tick = tokio::time::interval_at(monotonic_now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

impl Wire {
    /// The connection's write side goes to the link; with `host`, answers are read by a
    /// task on that runtime.
    pub(super) fn new(
        stream: UnixStream,
        epoch: u64,
        link: &Arc<Link>,
        host: Option<&Handle>,
    ) -> std::io::Result<(Wire, StdUnixStream)> {
        let stream = stream.into_std()?;
        let writer = stream.try_clone()?;
        let mut wire = Wire {
            reads: Arc::new(Reads::new(stream, epoch)),
            reader: None,
            delegated: None,
            writable: None,
            // Re-sent requests are queued: write them first.
            flushing: true,
            tick: ticker(link.times.interval),
            ticking: true,
            idle_since: None,
            liveness: Liveness {
                seen: 0,
                quiet_since: monotonic_now(),
                ping_sent_at: None,
            },
            times: link.times,
        };
        match host {
            Some(host) => wire.delegate(host, link),
            None => wire.read_here()?,
        }
        Ok((wire, writer))
    }

    /// Let a task on `host` read the answers from now on (replacing any other reader).
    pub(super) fn delegate(&mut self, host: &Handle, link: &Arc<Link>) {
        self.stop_delegated_reader();
        self.reader = None;
        let task = spawn_reader(host, self.reads.clone(), link.clone());
        self.delegated = Some(Delegated {
            task,
            seen: self.reads.progress(),
            stalled: 0,
        });
        self.tick = ticker(WATCH_INTERVAL);
    }

    /// Read on this thread from now on.
    fn read_here(&mut self) -> std::io::Result<()> {
        if self.stop_delegated_reader() {
            self.tick = ticker(self.times.interval);
        }
        if self.reader.is_none() {
            self.reader = Some(register(self.reads.duplicate()?, Interest::READABLE)?);
        }
        Ok(())
    }

    /// Retire the delegated reader, if any (true if there was one).
    fn stop_delegated_reader(&mut self) -> bool {
        match self.delegated.take() {
            Some(d) => {
                self.reads.retire();
                d.task.abort();
                true
            }
            None => false,
        }
    }

    /// Whether a task on another runtime reads the answers.
    pub(super) fn is_delegated(&self) -> bool {
        self.delegated.is_some()
    }

    /// Flush the outbox if asked to, then wait for an answer, a wake-up from a caller,
    /// write space, news of the delegated reader, or a tick. `Ok(true)` if this thread took
    /// reading back from a delegated reader; `Err` when the connection is lost (or given up).
    pub(super) async fn turn(&mut self, link: &Link) -> Result<bool, ()> {
        if self.flushing {
            self.flushing = link.flush()?;
            if !self.flushing {
                self.writable = None;
            } else if self.writable.is_none() {
                let dup = self.reads.duplicate().map_err(|_| ())?;
                self.writable = Some(register(dup, Interest::WRITABLE).map_err(|_| ())?);
            }
        }
        let (flushing, delegated, ticking) = (self.flushing, self.is_delegated(), self.ticking);
        tokio::select! {
            ready = wait_ready(self.reader.as_ref(), Interest::READABLE) => {
                let mut guard = ready.map_err(|_| ())?;
                self.reads.drain(link)?;
                guard.clear_ready();
            },
            _ = link.wake.notified() => {
                self.flushing = true;
                if !self.ticking {
                    // A request after a quiet spell: watch again.
                    self.ticking = true;
                    self.tick.reset();
                    self.liveness.reset(self.reads.answers(), monotonic_now());
                }
            },
            ready = wait_ready(self.writable.as_ref(), Interest::WRITABLE), if flushing => {
                // Clear, then write again at the next turn: no edge is lost.
                ready.map_err(|_| ())?.clear_ready();
            },
            () = self.reads.ended.notified(), if delegated => {
                if self.reads.lost() {
                    return Err(());
                }
                // The delegated reader's runtime dropped it (it shut down).
                tracing::debug!("the runtime reading admission answers stopped; reading here");
                self.read_here().map_err(|_| ())?;
                return Ok(true);
            },
            _ = self.tick.tick(), if ticking => return self.on_tick(link),
        }
        Ok(false)
    }

    fn on_tick(&mut self, link: &Link) -> Result<bool, ()> {
        if !link.has_pending() {
            let now = monotonic_now();
            self.liveness.reset(self.reads.answers(), now);
            // Quiet for long enough: stop ticking until a request wakes us
            // (`Link::go_idle` re-checks, so a request arriving meanwhile is not missed).
            let since = *self.idle_since.get_or_insert(now);
            if now - since >= DORMANT_AFTER && link.go_idle() {
                self.ticking = false;
                self.idle_since = None;
            }
            return Ok(false);
        }
        self.idle_since = None;
        // Requests a caller's runtime held back to the end of its round and then stopped
        // running (see `link`) are written here, at the latest one tick later.
        self.flushing = true;
        let took_back = self.watch(link)?;
        self.check_liveness(link)?;
        Ok(took_back)
    }

    /// Check the delegated reader: deliver answers it left waiting, and take reading back
    /// once that happened at [`STALLED_TICKS`] ticks without progress from it in between.
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
        if self.reads.drain(link)? > 0 {
            d.stalled += 1;
            if d.stalled >= STALLED_TICKS {
                tracing::info!(
                    "the runtime reading this process's admission answers has stopped running; \
                     the connection thread reads them from now on"
                );
                self.read_here().map_err(|_| ())?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Ping a coordinator that has been silent while requests wait; `Err` (the connection
    /// is given up) when a ping has gone unanswered for [`UNRESPONSIVE_AFTER`](super::liveness::UNRESPONSIVE_AFTER) (the
    /// client's [`LivenessTimes`]).
    fn check_liveness(&mut self, link: &Link) -> Result<(), ()> {
        let now = monotonic_now();
        let answers = self.reads.answers();
        if answers != self.liveness.seen {
            self.liveness.reset(answers, now);
            return Ok(());
        }
        match self.liveness.ping_sent_at {
            Some(sent) if now - sent >= self.times.unresponsive_after => {
                // This process may itself have been stopped with the answer already
                // waiting: read what is there before giving up.
                self.reads.drain(link)?;
                if self.reads.answers() != self.liveness.seen {
                    self.liveness.reset(self.reads.answers(), now);
                    return Ok(());
                }
                tracing::warn!(
                    "the admission coordinator has not answered for {:?} (stopped or hung?); \
                     giving its connection up",
                    self.times.unresponsive_after
                );
                Err(())
            }
            Some(_) => Ok(()),
            None if now - self.liveness.quiet_since >= self.times.ping_after => {
                // The answer only needs to arrive (it moves `answers`), not to be read.
                let (reply, _) = oneshot::channel();
                self.liveness.ping_sent_at = Some(now);
                link.pinged();
                link.submit_now(RequestBody::Ping, Some(reply))
                    .map_err(|_| ())
            }
            None => Ok(()),
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.stop_delegated_reader();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Answer, Operation};
    use crate::remote::frame::{self, FrameReader};
    use crate::remote::protocol::{Request, Response, ResponseBody};
    use crate::AdmissionError;

    #[test]
    fn a_full_socket_holds_requests_in_the_outbox_until_the_coordinator_reads() {
        current_thread().block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            // This coordinator reads but never answers: with the default times, a test slowed
            // past `PING_AFTER` (a loaded machine) had the connection thread ping it, and the
            // ping (request n + 1, rightly queued behind the rest) arrived as one frame too
            // many; past `UNRESPONSIVE_AFTER` the connection would be given up. Liveness is
            // not what this test is about (`client`'s tests check it): keep it out of reach.
            let link = Arc::new(Link::with_times(LivenessTimes {
                ping_after: Duration::from_secs(3600),
                unresponsive_after: Duration::from_secs(3600),
                interval: LivenessTimes::DEFAULT.interval,
            }));
            let (mut wire, writer) = Wire::new(ours, 1, &link, None).unwrap();
            link.connected(writer).unwrap();
            // Far more than a socket buffer holds, while nobody reads.
            let n = 40_000u64;
            for scope in 0..n {
                link.submit(RequestBody::Op(Operation::Cancel { scope }), None)
                    .unwrap();
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
                .map(|scope| (scope + 1, RequestBody::Op(Operation::Cancel { scope })))
                .collect();
            let first_difference = seen.iter().zip(&want).position(|(s, w)| s != w);
            assert!(
                seen.len() == want.len() && first_difference.is_none(),
                "every request arrives once, whole, in order: {} frames for {} requests, \
                 first difference at {first_difference:?}",
                seen.len(),
                want.len(),
            );
            assert_eq!(link.flush(), Ok(false), "nothing waits any more");
            // Once: nothing follows the last request (a duplicate would).
            let mut rest = [0u8; 1];
            let after = theirs.try_read(&mut rest);
            assert!(
                matches!(&after, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
                "bytes after the last request: {after:?}"
            );
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
        let body = ResponseBody::Answer(Answer::Cancelled(removed));
        frame::write(theirs, &Response { id: req.id, body })
            .await
            .unwrap();
    }

    fn ask(
        link: &Link,
        scope: u64,
    ) -> oneshot::Receiver<Result<(ResponseBody, u64), AdmissionError>> {
        let (tx, rx) = oneshot::channel();
        link.submit_now(RequestBody::Op(Operation::Cancel { scope }), Some(tx))
            .unwrap();
        rx
    }

    fn removed(answer: Result<(ResponseBody, u64), AdmissionError>) -> usize {
        match answer.unwrap() {
            (ResponseBody::Answer(Answer::Cancelled(removed)), 1) => removed,
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
