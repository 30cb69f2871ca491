//! The coordinator's side of one client connection, registered for reading only (and
//! [`register`], which both sides use to register a socket for one interest).
//!
//! A tokio `UnixStream` registers for reading and writing. Then every time the client
//! reads an answer, the kernel signals write space, and the coordinator's thread wakes up
//! for nothing: one wasted wake-up per admission on the busiest thread of the machine.
//! Here answers are written with plain non-blocking writes, and write readiness is
//! registered (on a duplicate) only while a full socket holds an answer back.

use std::io::Write;
use std::os::unix::net::UnixStream as StdUnixStream;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::UnixStream;

use super::frame::{FrameError, FrameReader, SYNC_READ_CHUNK};

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

pub(super) struct Socket {
    read: AsyncFd<StdUnixStream>,
}

impl Socket {
    pub(super) fn new(stream: UnixStream) -> std::io::Result<Socket> {
        Ok(Socket {
            read: register(stream.into_std()?, Interest::READABLE)?,
        })
    }

    /// Wait until bytes arrive and read what is there into `frames`. Cancel-safe: once
    /// bytes are read it returns without waiting again.
    pub(super) async fn fill(&self, frames: &mut FrameReader) -> Result<(), FrameError> {
        loop {
            let mut ready = self.read.readable().await.map_err(FrameError::Io)?;
            match frames.read_from(ready.get_inner())? {
                0 => ready.clear_ready(),
                n => {
                    // A short read drained the socket (see `FrameReader::read_from`).
                    if n < SYNC_READ_CHUNK {
                        ready.clear_ready();
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Write all of `buf`.
    pub(super) async fn write_all(&self, mut buf: &[u8]) -> std::io::Result<()> {
        let mut writable: Option<AsyncFd<StdUnixStream>> = None;
        while !buf.is_empty() {
            match self.read.get_ref().write(buf) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if writable.is_none() {
                        let dup = self.read.get_ref().try_clone()?;
                        writable = Some(register(dup, Interest::WRITABLE)?);
                    }
                    if let Some(fd) = &writable {
                        // Clear, then write again: no edge is lost.
                        fd.writable().await?.clear_ready();
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // `writable` is dropped here: write space is not watched between answers.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn a_full_socket_holds_a_write_until_the_peer_reads() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            let socket = Socket::new(ours).unwrap();
            // Far more than a socket buffer holds.
            let sent: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
            let reader = async {
                // Read nothing until the writer must have filled the socket.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                let mut got = vec![0u8; sent.len()];
                theirs.read_exact(&mut got).await.unwrap();
                got
            };
            let (written, got) = tokio::join!(socket.write_all(&sent), reader);
            written.unwrap();
            assert!(got == sent, "every byte, in order");
        });
    }
}
