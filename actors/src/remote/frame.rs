//! Frames on the coordinator socket: a 4-byte big-endian length, then one version byte,
//! then a JSON document.
//!
//! The length counts the version byte and the document. A frame longer than
//! [`MAX_FRAME_BYTES`], an empty frame, an unknown version or a document that does not
//! decode is a [`FrameError`]: the peer is broken or hostile, and the server closes that
//! one connection with the reason logged. JSON keeps the protocol inspectable with
//! `socat`; the messages are small, so its cost stays below the socket's.
//!
//! # Why not tokio-util's `LengthDelimitedCodec`
//! Issue 32 rebuilt this reader on `LengthDelimitedCodec`'s `Decoder` (the same 4-byte
//! big-endian length, the same limit and error), kept the writer (it encodes in place into
//! the callers' outboxes), and measured both in one sitting, rounds alternated, on the
//! same tree (`scripts/bench-table compare frame-codec ... -- {bin}/tollgate-bench
//! admission --processes 4 --serve --json`, 5 rounds each, 2-core VM, 2026-12-02; the
//! files are `docs/bench-results/frame-codec-{before,after}.json`):
//!
//! | admission through the socket | this reader | `LengthDelimitedCodec` |
//! |---|---|---|
//! | p50 µs (min / median / max) | 50 / 50 / 51 | 51 / 52 / 52 |
//! | throughput /s | 73,493 / 73,933 / 74,383 | 71,670 / 72,402 / 73,524 |
//!
//! The codec was slower in every round (1 to 2 µs at the median, 2 % of the throughput:
//! its `BytesMut` is one more buffer the bytes pass through before the JSON decoder), at
//! the edge of the spread, on the path every admission of a client takes; so this reader
//! stays. What it does is small and tested below: split and batched frames, the limit,
//! an undecodable request skipped by id.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The protocol version this build speaks. Version 6 adds `reserve_pass` (a reservation
/// and the breaker's passage in one round trip) and lets `release` carry the call's last
/// `feedback` and `breaker` report (a version 5 coordinator would refuse the first and
/// drop the others). Version 5 charges any number of keys beside
/// an attempt's own (`admit_with_budget`'s `budgets` list; version 4 had one `budget`).
/// Version 4 wraps the admission operations in
/// one `op` request and one `answer` response (`{"op": {"reserve": {...}}}`, see
/// `crate::ops`), sends a missing cancellation scope as `null` instead of `0`, and adds
/// the `coordination` error. Version 3 adds the key-wide Retry-After pause
/// and the circuit breakers (`pause`, `breaker_pass`, `breaker_report`; a version 2
/// coordinator could not decode them). Version 2 tags messages externally
/// (`{"admit": {...}}`); version 1 had `{"op": "admit", ...}`.
pub const PROTOCOL_VERSION: u8 = 6;

/// The largest frame either side accepts (length field excluded).
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// Why a frame could not be read or written.
#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    Closed,
    /// The socket failed (or closed mid-frame).
    Io(std::io::Error),
    /// The length field announced more than [`MAX_FRAME_BYTES`].
    Oversized(usize),
    /// A zero-length frame: no version byte.
    Empty,
    /// A version this build does not speak.
    UnknownVersion(u8),
    /// The document is not a message of this protocol.
    Malformed(serde_json::Error),
    /// The document names the request it is (its `id`) but its body does not decode, for
    /// example a key that is not a quota key: the frame was skipped, and the peer can be
    /// answered and kept.
    Undecodable {
        /// The `id` the document carries.
        id: u64,
        /// Why the body does not decode.
        error: serde_json::Error,
    },
}

impl FrameError {
    /// Whether the connection can go on after it (the frame was skipped whole).
    pub fn is_recoverable(&self) -> bool {
        matches!(self, FrameError::Undecodable { .. })
    }
}

/// The `id` of a document whose body did not decode.
#[derive(serde::Deserialize)]
struct IdOnly {
    id: u64,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Closed => f.write_str("connection closed"),
            FrameError::Io(e) => write!(f, "socket error: {e}"),
            FrameError::Oversized(n) => {
                write!(
                    f,
                    "frame of {n} bytes exceeds the {MAX_FRAME_BYTES}-byte limit"
                )
            }
            FrameError::Empty => f.write_str("empty frame"),
            FrameError::UnknownVersion(v) => write!(
                f,
                "protocol version {v} is not supported (this build speaks {PROTOCOL_VERSION}); \
                 run one tollgate version per admission directory"
            ),
            FrameError::Malformed(e) => write!(f, "malformed message: {e}"),
            FrameError::Undecodable { id, error } => {
                write!(f, "request {id} is not a request of this protocol: {error}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Encode `msg` as one frame.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    encode_into(&mut out, msg)?;
    Ok(out)
}

/// Append `msg` as one frame to `out` (a reused buffer: several frames then go out in one
/// write). On error `out` is left as it was.
pub fn encode_into<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> Result<(), FrameError> {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, PROTOCOL_VERSION]);
    if let Err(e) = serde_json::to_writer(&mut *out, msg) {
        out.truncate(start);
        return Err(FrameError::Malformed(e));
    }
    let len = out.len() - start - 4;
    if len > MAX_FRAME_BYTES {
        out.truncate(start);
        return Err(FrameError::Oversized(len));
    }
    out[start..start + 4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

/// Frames read from a byte stream in chunks: one read takes in every frame the peer has
/// sent so far, and [`FrameReader::next_frame`] hands them out one by one. Cancel-safe (the
/// bytes live here, not in a pending future), with the same checks as [`read`].
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
}

/// Bytes asked of the socket per read (frames are far smaller).
const READ_CHUNK: usize = 16 * 1024;
/// The same for [`FrameReader::read_from`], which zeroes its buffer first.
pub const SYNC_READ_CHUNK: usize = 4 * 1024;

impl FrameReader {
    /// An empty reader.
    pub fn new() -> Self {
        FrameReader::default()
    }

    /// The next complete frame already read, decoded; `Ok(None)` if more bytes are needed.
    pub fn next_frame<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        let avail = &self.buf[self.start..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if len == 0 {
            return Err(FrameError::Empty);
        }
        if len > MAX_FRAME_BYTES {
            return Err(FrameError::Oversized(len));
        }
        if avail.len() < 4 + len {
            return Ok(None);
        }
        let body = &avail[4..4 + len];
        if body[0] != PROTOCOL_VERSION {
            return Err(FrameError::UnknownVersion(body[0]));
        }
        let msg = match serde_json::from_slice(&body[1..]) {
            Ok(msg) => msg,
            Err(error) => {
                let Ok(IdOnly { id }) = serde_json::from_slice(&body[1..]) else {
                    return Err(FrameError::Malformed(error));
                };
                self.consumed(len);
                return Err(FrameError::Undecodable { id, error });
            }
        };
        self.consumed(len);
        Ok(Some(msg))
    }

    /// Forget the frame of `len` bytes (length field excluded) just handed out.
    fn consumed(&mut self, len: usize) {
        self.start += 4 + len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Read once from `r` (whatever is available, up to a chunk). `Closed` at a clean end
    /// of stream between frames, `Io` if it ends mid-frame.
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<(), FrameError> {
        self.make_room();
        let n = r.read_buf(&mut self.buf).await.map_err(FrameError::Io)?;
        self.check_eof(n)
    }

    /// Read once from a non-blocking `r`: the bytes read, 0 if nothing is available now.
    /// Fewer than [`SYNC_READ_CHUNK`] bytes means the socket was drained (the caller may
    /// clear its readiness without a read that only says "would block").
    pub fn read_from<R: std::io::Read>(&mut self, mut r: R) -> Result<usize, FrameError> {
        self.make_room();
        let before = self.buf.len();
        self.buf.resize(before + SYNC_READ_CHUNK, 0);
        let read = loop {
            match r.read(&mut self.buf[before..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                read => break read,
            }
        };
        self.buf.truncate(before + read.as_ref().map_or(0, |&n| n));
        match read {
            Ok(n) => self.check_eof(n).map(|()| n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(FrameError::Io(e)),
        }
    }

    fn make_room(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(READ_CHUNK);
    }

    fn check_eof(&self, n: usize) -> Result<(), FrameError> {
        match n {
            0 if self.buf.len() == self.start => Err(FrameError::Closed),
            0 => Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            _ => Ok(()),
        }
    }
}

/// Write `msg` as one frame.
pub async fn write<T: Serialize, W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &T,
) -> Result<(), FrameError> {
    let bytes = encode(msg)?;
    w.write_all(&bytes).await.map_err(FrameError::Io)
}

/// Read one frame and decode it. Not cancel-safe: drive it from one task to completion.
pub async fn read<T: DeserializeOwned, R: AsyncRead + Unpin>(r: &mut R) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await.map_err(FrameError::Io)?;
    if body[0] != PROTOCOL_VERSION {
        return Err(FrameError::UnknownVersion(body[0]));
    }
    serde_json::from_slice(&body[1..]).map_err(FrameError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Ping {
        n: u32,
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn round_trip() {
        rt().block_on(async {
            let bytes = encode(&Ping { n: 7 }).unwrap();
            let got: Ping = read(&mut bytes.as_slice()).await.unwrap();
            assert_eq!(got, Ping { n: 7 });
        });
    }

    #[test]
    fn a_reader_hands_out_frames_split_and_batched_across_reads() {
        rt().block_on(async {
            let mut bytes = Vec::new();
            for n in 0..3 {
                encode_into(&mut bytes, &Ping { n }).unwrap();
            }
            // Two reads: the second frame is split between them.
            let (first, second) = bytes.split_at(bytes.len() / 2);
            let mut reader = FrameReader::new();
            let mut got = Vec::new();
            for mut part in [first, second] {
                reader.fill(&mut part).await.unwrap();
                while let Some(p) = reader.next_frame::<Ping>().unwrap() {
                    got.push(p.n);
                }
            }
            assert_eq!(got, vec![0, 1, 2]);
            let err = reader.fill(&mut [].as_slice()).await.unwrap_err();
            assert!(matches!(err, FrameError::Closed), "{err:?}");
            reader.fill(&mut [0u8, 0, 0].as_slice()).await.unwrap();
            let err = reader.fill(&mut [].as_slice()).await.unwrap_err();
            assert!(matches!(err, FrameError::Io(_)), "mid-frame end: {err:?}");
            let mut bad = FrameReader::new();
            bad.fill(&mut [0u8, 0, 0, 3, 9, b'{', b'}'].as_slice())
                .await
                .unwrap();
            assert!(matches!(
                bad.next_frame::<Ping>(),
                Err(FrameError::UnknownVersion(9))
            ));
            let mut huge = FrameReader::new();
            huge.fill(&mut [0xffu8, 0xff, 0xff, 0xff].as_slice())
                .await
                .unwrap();
            assert!(matches!(
                huge.next_frame::<Ping>(),
                Err(FrameError::Oversized(_))
            ));
        });
    }

    #[test]
    fn a_document_with_an_id_whose_body_does_not_decode_is_skipped_and_named() {
        rt().block_on(async {
            let mut bytes = Vec::new();
            encode_into(&mut bytes, &serde_json::json!({"id": 8, "n": "eight"})).unwrap();
            encode_into(&mut bytes, &Ping { n: 9 }).unwrap();
            let mut reader = FrameReader::new();
            reader.fill(&mut bytes.as_slice()).await.unwrap();
            match reader.next_frame::<Ping>() {
                Err(e @ FrameError::Undecodable { id: 8, .. }) => assert!(e.is_recoverable()),
                other => panic!("unexpected {other:?}"),
            }
            assert_eq!(reader.next_frame::<Ping>().unwrap(), Some(Ping { n: 9 }));
            let mut garbage = FrameReader::new();
            garbage
                .fill(&mut [0u8, 0, 0, 3, PROTOCOL_VERSION, b'{', b'x'].as_slice())
                .await
                .unwrap();
            let err = garbage.next_frame::<Ping>().unwrap_err();
            assert!(matches!(err, FrameError::Malformed(_)) && !err.is_recoverable());
        });
    }

    #[test]
    fn refuses_broken_frames() {
        rt().block_on(async {
            let cases: Vec<(Vec<u8>, &str)> = vec![
                (vec![], "closed"),
                (vec![0, 0, 0, 0], "empty"),
                (vec![0xff, 0xff, 0xff, 0xff], "oversized"),
                (vec![0, 0, 0, 3, 9, b'{', b'}'], "version"),
                (vec![0, 0, 0, 3, PROTOCOL_VERSION, b'{', b'x'], "malformed"),
                (vec![0, 0, 0, 9, PROTOCOL_VERSION], "io"),
            ];
            for (bytes, want) in cases {
                let err = read::<Ping, _>(&mut bytes.as_slice()).await.unwrap_err();
                let ok = match want {
                    "closed" => matches!(err, FrameError::Closed),
                    "empty" => matches!(err, FrameError::Empty),
                    "oversized" => matches!(err, FrameError::Oversized(_)),
                    "version" => matches!(err, FrameError::UnknownVersion(9)),
                    "malformed" => matches!(err, FrameError::Malformed(_)),
                    _ => matches!(err, FrameError::Io(_)),
                };
                assert!(ok, "{want}: got {err:?}");
            }
        });
    }
}
