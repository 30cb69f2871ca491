//! The floor of `bench admission --processes`: a bare Unix-socket echo of 64-byte frames,
//! in two styles, both at least as lean as tollgate's own socket code
//! (`tollgate_actors::remote::socket`), so that it is a floor and not a handicapped peer:
//!
//! - [`EchoStyle::Blocking`]: one OS thread per connection on the server, plain blocking
//!   `read`/`write` on both sides. No readiness registration at all, no wake-up of a
//!   runtime: the fewest syscalls a round trip can take.
//! - [`EchoStyle::ReadOnly`]: what tollgate does: the socket is registered with the
//!   runtime for reading only, written with plain non-blocking writes (write readiness is
//!   registered on a duplicate only while a full socket holds bytes back), and each read
//!   takes in everything the peer has sent so far (up to 4 KiB) and echoes it in one write.
//!
//! Four more styles measure what a *shape* of coordinator costs at the least (issue 35:
//! why the cross-process p50 is where it is). The first three have blocking clients, as
//! the blocking style's, so only the server differs:
//!
//! - [`EchoStyle::Locked`]: [`EchoStyle::Blocking`] whose connection threads each take one
//!   process-wide lock per round trip (as deciding one shared key from every connection's
//!   own thread would);
//! - [`EchoStyle::OneThread`]: one thread serves every connection (tokio's current-thread
//!   runtime, read-only registration): the shape of tollgate's coordinator, where one
//!   thread owns the quota actors and serves their sockets;
//! - [`EchoStyle::TwoThreads`]: the same on tokio's multi-thread runtime with two workers:
//!   a coordinator that serves its sockets on both cores of the project's machine.
//!
//! And [`EchoStyle::AsyncClient`] keeps the blocking style's server (a thread per
//! connection) with the read-only style's clients (tokio): the least any coordinator costs
//! when its clients wait on a runtime, as a process calling the asynchronous AWS SDK does.
//!
//! A tokio `UnixStream`, which the echo used before, registers for reading *and* writing,
//! so every answer the client reads wakes the server for write space it does not need:
//! that echo's p99 was above tollgate's. Which style is faster depends on the machine
//! (threads against one event loop on few cores): `bench admission --floor` picks one,
//! docs/benchmarks.md records which was the lower floor where it was measured.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener as StdUnixListener, UnixStream as StdUnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Bytes asked of the socket per read (frames are 64 bytes; a batch takes in many).
const READ_CHUNK: usize = 4 * 1024;

/// How the echo floor's server and clients use their sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EchoStyle {
    /// Blocking reads and writes, one server thread per connection.
    Blocking,
    /// Registered for reading only, batched reads, non-blocking writes (tollgate's way).
    ReadOnly,
    /// Blocking, one server thread per connection, one process-wide lock per round trip.
    Locked,
    /// One server thread for every connection (read-only registration); blocking clients.
    OneThread,
    /// Two server threads for every connection (read-only registration on tokio's
    /// multi-thread runtime); blocking clients.
    TwoThreads,
    /// A blocking server thread per connection; clients on tokio, registered for reading
    /// only (as `ReadOnly`'s).
    AsyncClient,
}

impl EchoStyle {
    pub fn name(self) -> &'static str {
        match self {
            EchoStyle::Blocking => "blocking",
            EchoStyle::ReadOnly => "read-only",
            EchoStyle::Locked => "locked",
            EchoStyle::OneThread => "one-thread",
            EchoStyle::TwoThreads => "two-threads",
            EchoStyle::AsyncClient => "async-client",
        }
    }
}

/// Register `socket` with the current runtime for `interest` only.
// `with_interest` is deprecated in favour of the `unsafe` `register_with_interest`, whose
// contract is that the object owns its fd, open and unchanged, while registered: a std
// `UnixStream` does exactly that, and this crate forbids `unsafe`.
#[allow(deprecated)]
fn register(socket: StdUnixStream, interest: Interest) -> std::io::Result<AsyncFd<StdUnixStream>> {
    AsyncFd::with_interest(socket, interest)
}

/// Write all of `buf` on a non-blocking socket, waiting for write space (registered on a
/// duplicate for that wait only) when the socket is full.
async fn write_all_nonblocking(socket: &StdUnixStream, mut buf: &[u8]) -> std::io::Result<()> {
    let mut writable: Option<AsyncFd<StdUnixStream>> = None;
    while !buf.is_empty() {
        match (&*socket).write(buf) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if writable.is_none() {
                    writable = Some(register(socket.try_clone()?, Interest::WRITABLE)?);
                }
                if let Some(fd) = &writable {
                    fd.writable().await?.clear_ready();
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Read once from a registered socket: whatever is there (at least one byte) into `buf`;
/// 0 at the end of the stream.
async fn read_some(fd: &AsyncFd<StdUnixStream>, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        let mut ready = fd.readable().await?;
        match ready.get_inner().read(buf) {
            Ok(n) => {
                // A short read drained the socket: no read that only says "would block".
                if n < buf.len() {
                    ready.clear_ready();
                }
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => ready.clear_ready(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The echo server of one floor measurement; stops (and removes its socket) when dropped.
pub struct EchoServer {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EchoServer {
    /// Bind `socket` and serve in the background in `style`.
    pub fn start(socket: &Path, style: EchoStyle) -> anyhow::Result<EchoServer> {
        let listener = StdUnixListener::bind(socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let runtime = match style {
            EchoStyle::Blocking | EchoStyle::Locked | EchoStyle::AsyncClient => None,
            EchoStyle::ReadOnly | EchoStyle::OneThread => {
                Some(tokio::runtime::Builder::new_current_thread())
            }
            EchoStyle::TwoThreads => {
                let mut two = tokio::runtime::Builder::new_multi_thread();
                two.worker_threads(2);
                Some(two)
            }
        };
        let thread = match runtime {
            None => {
                // Shared by the connection threads of `Locked` only.
                let lock = (style == EchoStyle::Locked).then(|| Arc::new(Mutex::new(0u64)));
                std::thread::spawn(move || serve_blocking(&listener, &flag, lock))
            }
            Some(mut builder) => {
                let runtime = builder.enable_all().build()?;
                listener.set_nonblocking(true)?;
                std::thread::spawn(move || serve_read_only(listener, &flag, &runtime))
            }
        };
        Ok(EchoServer {
            socket: socket.to_owned(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = StdUnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A thread per connection; with `lock`, each round trip takes it (and counts itself).
fn serve_blocking(listener: &StdUnixListener, stop: &AtomicBool, lock: Option<Arc<Mutex<u64>>>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        let lock = lock.clone();
        // Connection threads end when their client closes; they are not joined.
        std::thread::spawn(move || {
            let mut buf = [0u8; READ_CHUNK];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if let Some(lock) = &lock {
                            // A poisoned lock still counts: no connection thread panics.
                            *lock.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                        }
                        if stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// Every connection a task on `rt` (one thread or several), read-only registration.
fn serve_read_only(listener: StdUnixListener, stop: &AtomicBool, rt: &tokio::runtime::Runtime) {
    rt.block_on(async move {
        let Ok(listener) = tokio::net::UnixListener::from_std(listener) else {
            return;
        };
        while let Ok((stream, _)) = listener.accept().await {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(std) = stream.into_std() else { continue };
            let Ok(fd) = register(std, Interest::READABLE) else {
                continue;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; READ_CHUNK];
                loop {
                    match read_some(&fd, &mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if write_all_nonblocking(fd.get_ref(), &buf[..n])
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
}

/// One client connection of the floor, in the same style as the server.
pub enum EchoClient {
    Blocking(StdUnixStream),
    ReadOnly(AsyncFd<StdUnixStream>),
}

impl EchoClient {
    /// Connect (inside a runtime for [`EchoStyle::ReadOnly`] and [`EchoStyle::AsyncClient`]).
    pub fn connect(socket: &Path, style: EchoStyle) -> std::io::Result<EchoClient> {
        let stream = StdUnixStream::connect(socket)?;
        Ok(match style {
            EchoStyle::Blocking
            | EchoStyle::Locked
            | EchoStyle::OneThread
            | EchoStyle::TwoThreads => EchoClient::Blocking(stream),
            EchoStyle::ReadOnly | EchoStyle::AsyncClient => {
                stream.set_nonblocking(true)?;
                EchoClient::ReadOnly(register(stream, Interest::READABLE)?)
            }
        })
    }

    /// Send `frame` and read the same number of bytes back into it.
    pub async fn round_trip(&mut self, frame: &mut [u8]) -> std::io::Result<()> {
        match self {
            EchoClient::Blocking(s) => {
                s.write_all(frame)?;
                s.read_exact(frame)
            }
            EchoClient::ReadOnly(fd) => {
                write_all_nonblocking(fd.get_ref(), frame).await?;
                let mut got = 0;
                while got < frame.len() {
                    match read_some(fd, &mut frame[got..]).await? {
                        0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                        n => got += n,
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo_round_trips(style: EchoStyle) {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("echo.sock");
        let server = EchoServer::start(&socket, style).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut clients: Vec<EchoClient> = (0..3)
                .map(|_| EchoClient::connect(&socket, style).unwrap())
                .collect();
            for i in 0..200u32 {
                for (c, client) in clients.iter_mut().enumerate() {
                    let mut frame = [0u8; 64];
                    frame[..4].copy_from_slice(&i.to_be_bytes());
                    frame[4] = c as u8;
                    let sent = frame;
                    client.round_trip(&mut frame).await.unwrap();
                    assert_eq!(frame, sent, "{style:?}: round trip {i} of client {c}");
                }
            }
        });
        drop(server);
        assert!(
            !socket.exists(),
            "the server removes its socket when stopped"
        );
    }

    #[test]
    fn every_style_echoes_every_frame_to_its_own_client() {
        for style in [
            EchoStyle::Blocking,
            EchoStyle::ReadOnly,
            EchoStyle::Locked,
            EchoStyle::OneThread,
            EchoStyle::TwoThreads,
            EchoStyle::AsyncClient,
        ] {
            echo_round_trips(style);
        }
    }
}
