//! `Reads`: the read side of one coordinator connection, and the reader that runs on the
//! caller's runtime.
//!
//! An answer read on the client's connection thread reaches its caller through one more
//! thread wake-up than the socket itself costs (coordinator, connection thread, caller:
//! three threads instead of an echo's two). So when a client is opened inside a tokio
//! runtime, that runtime reads the answers: a task there waits for the socket, decodes the
//! answers and wakes the callers, which on a current-thread runtime (the CLI's actix
//! system, the bench worker) is the same thread. The connection thread keeps everything
//! else: connecting, failover, re-sending, flushing a full outbox.
//!
//! The runtime may stop reading, and the connection thread then reads again:
//! - the runtime shut down (the reader task is dropped): at once;
//! - the runtime is no longer driven (a current-thread runtime whose `block_on` returned
//!   while the handle is used elsewhere): the thread's watch sees answers wait while the
//!   reader makes no progress, delivers them, and after [`STALLED_TICKS`] such ticks takes
//!   reading back for good.
//!
//! Whoever reads holds the lock on the connection's frame buffer, so frames are never
//! split between readers.

use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::frame::{FrameReader, SYNC_READ_CHUNK};
use super::link::Link;
use super::protocol::Response;

/// How often the connection thread checks a delegated reader's progress.
pub(super) const WATCH_INTERVAL: Duration = Duration::from_millis(50);
/// Ticks in a row at which the thread found answers the delegated reader had not read,
/// with no progress from it in between, before the thread reads for good.
pub(super) const STALLED_TICKS: u32 = 3;

struct Inner {
    socket: StdUnixStream,
    frames: FrameReader,
}

/// One connection's read side, shared by the delegated reader and the connection thread.
pub(super) struct Reads {
    inner: Mutex<Inner>,
    epoch: u64,
    /// The delegated reader must stop: the conversation is over or the thread took
    /// reading back.
    retired: AtomicBool,
    /// The delegated reader saw the connection end.
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
            retired: AtomicBool::new(false),
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

    /// Stop the delegated reader (it exits at its next wake-up).
    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
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

/// Register `socket` with the current runtime for `interest` only.
// `with_interest` is deprecated in favour of the `unsafe` `register_with_interest`, whose
// contract is that the object owns its fd, open and unchanged, while registered: a std
// `UnixStream` does exactly that, and this crate forbids `unsafe`.
#[allow(deprecated)]
pub(super) fn register(
    socket: StdUnixStream,
    interest: Interest,
) -> std::io::Result<AsyncFd<StdUnixStream>> {
    AsyncFd::with_interest(socket, interest)
}

/// Wakes the connection thread when the delegated reader ends, including when its
/// runtime drops it (even before its first poll: the guard is an argument, not a local).
struct Ended(Arc<Reads>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended.notify_one();
    }
}

/// Start the delegated reader on `host`.
pub(super) fn spawn_reader(
    host: &Handle,
    reads: Arc<Reads>,
    link: Arc<Link>,
) -> tokio::task::JoinHandle<()> {
    host.spawn(read_on_caller_runtime(Ended(reads), link))
}

async fn read_on_caller_runtime(ended: Ended, link: Arc<Link>) {
    let reads = &ended.0;
    let fd = match reads
        .duplicate()
        .and_then(|s| register(s, Interest::READABLE))
    {
        Ok(fd) => fd,
        // Not lost: the thread reads instead.
        Err(_) => return,
    };
    loop {
        if reads.retired.load(Ordering::Acquire) {
            return;
        }
        let Ok(mut ready) = fd.readable().await else {
            break;
        };
        if reads.retired.load(Ordering::Acquire) {
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
    reads.lost.store(true, Ordering::Release);
}
