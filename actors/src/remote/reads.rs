//! `Reads`: the read side of one coordinator connection, and the reader that runs on a
//! caller's runtime.
//!
//! An answer read on the client's connection thread reaches its caller through one more
//! thread wake-up than the socket itself costs (coordinator, connection thread, caller:
//! three threads instead of an echo's two). So a runtime that will await the admissions
//! can ask to read the answers itself (`AdmissionHandle::read_answers_here`; the CLI's
//! discovery system and the bench worker do): a task there waits for the socket, decodes
//! the answers and wakes the callers, which on a current-thread runtime is the same
//! thread. The connection thread keeps everything else: connecting, failover, re-sending,
//! flushing a full outbox, liveness.
//!
//! The runtime may stop reading, and the connection thread then reads again:
//! - the runtime shut down (the reader task is dropped): at once;
//! - the runtime is no longer driven (a current-thread runtime whose `block_on` returned
//!   while the handle is used elsewhere): the thread's watch sees answers wait while the
//!   reader makes no progress, delivers them, and after [`STALLED_TICKS`] such ticks takes
//!   reading back for good.
//!
//! Whoever reads holds the lock on the connection's frame buffer, so frames are never
//! split between readers. Each reader has a generation: replacing or retiring it bumps the
//! connection's, and a reader of an older generation stops at its next wake-up, unheard.

use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::Interest;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::frame::{FrameReader, SYNC_READ_CHUNK};
use super::link::Link;
use super::protocol::Response;
use super::socket::register;

/// How often the connection thread checks a delegated reader's progress.
pub(super) const WATCH_INTERVAL: Duration = Duration::from_millis(50);
/// Ticks at which the thread found answers the delegated reader had left (with no
/// progress from it since the tick before) before the thread reads for good.
pub(super) const STALLED_TICKS: u32 = 3;

struct Inner {
    socket: StdUnixStream,
    frames: FrameReader,
}

/// One connection's read side, shared by the delegated reader and the connection thread.
pub(super) struct Reads {
    inner: Mutex<Inner>,
    epoch: u64,
    /// The current delegated reader's generation; any other reader stops.
    generation: AtomicU64,
    /// The current delegated reader saw the connection end.
    lost: AtomicBool,
    /// Reads the delegated reader made (the thread's watch compares it between ticks).
    progress: AtomicU64,
    /// Answers read so far, by either reader (the thread's liveness check watches it).
    answers: AtomicU64,
    /// Wakes the connection thread when the delegated reader ends, however it ends.
    pub(super) ended: Notify,
}

impl Reads {
    /// `socket` must be non-blocking.
    pub(super) fn new(socket: StdUnixStream, epoch: u64) -> Reads {
        Reads {
            inner: Mutex::new(Inner {
                socket,
                frames: FrameReader::new(),
            }),
            epoch,
            generation: AtomicU64::new(0),
            lost: AtomicBool::new(false),
            progress: AtomicU64::new(0),
            answers: AtomicU64::new(0),
            ended: Notify::new(),
        }
    }

    /// A duplicate of the socket, for a readiness registration.
    pub(super) fn duplicate(&self) -> std::io::Result<StdUnixStream> {
        self.inner
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .socket
            .try_clone()
    }

    /// Read every answer available now and hand each to its caller: the number handed
    /// over, or `Err` if the connection ended (or the coordinator sent a bad frame).
    pub(super) fn drain(&self, link: &Link) -> Result<usize, ()> {
        let mut inner = self.inner.lock().map_err(|_| ())?;
        let Inner { socket, frames } = &mut *inner;
        let mut answered = 0;
        loop {
            let read = frames.read_from(&*socket).map_err(|e| {
                tracing::debug!(reason = %e, "admission coordinator connection ended");
            })?;
            loop {
                match frames.next_frame::<Response>() {
                    Ok(Some(Response { id, body })) => {
                        link.answered(id, body, self.epoch);
                        answered += 1;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(reason = %e, "the admission coordinator sent a bad frame");
                        return Err(());
                    }
                }
            }
            // A short read drained the socket: no second read just to hear "would block"
            // (a later answer raises readiness again, so clearing it loses nothing).
            if read < SYNC_READ_CHUNK {
                if answered > 0 {
                    self.answers.fetch_add(answered as u64, Ordering::AcqRel);
                }
                return Ok(answered);
            }
        }
    }

    /// Stop the delegated reader (it exits at its next wake-up, without a word).
    pub(super) fn retire(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn is_current(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) == generation
    }

    /// Whether the delegated reader saw the connection end.
    pub(super) fn lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    pub(super) fn progress(&self) -> u64 {
        self.progress.load(Ordering::Acquire)
    }

    /// Answers read so far on this connection.
    pub(super) fn answers(&self) -> u64 {
        self.answers.load(Ordering::Acquire)
    }
}

/// Wakes the connection thread when the current delegated reader ends, including when its
/// runtime drops it (even before its first poll: the guard is an argument, not a local).
struct Ended {
    reads: Arc<Reads>,
    generation: u64,
}

impl Drop for Ended {
    fn drop(&mut self) {
        if self.reads.is_current(self.generation) {
            self.reads.ended.notify_one();
        }
    }
}

/// Start a delegated reader on `host` (the caller retired any previous one).
pub(super) fn spawn_reader(
    host: &Handle,
    reads: Arc<Reads>,
    link: Arc<Link>,
) -> tokio::task::JoinHandle<()> {
    let generation = reads.generation.load(Ordering::Acquire);
    host.spawn(read_on_caller_runtime(Ended { reads, generation }, link))
}

async fn read_on_caller_runtime(ended: Ended, link: Arc<Link>) {
    let (reads, generation) = (&ended.reads, ended.generation);
    let fd = match reads
        .duplicate()
        .and_then(|s| register(s, Interest::READABLE))
    {
        Ok(fd) => fd,
        // Not lost: the thread reads instead.
        Err(_) => return,
    };
    loop {
        if !reads.is_current(generation) {
            return;
        }
        let Ok(mut ready) = fd.readable().await else {
            break;
        };
        if !reads.is_current(generation) {
            return;
        }
        match reads.drain(&link) {
            Ok(_) => {
                reads.progress.fetch_add(1, Ordering::AcqRel);
                ready.clear_ready();
            }
            Err(()) => break,
        }
    }
    if reads.is_current(generation) {
        reads.lost.store(true, Ordering::Release);
    }
}
