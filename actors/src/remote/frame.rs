//! Frames on the coordinator socket: a 4-byte big-endian length, then one version byte,
//! then a JSON document.
//!
//! The length counts the version byte and the document. A frame longer than
//! [`MAX_FRAME_BYTES`], an empty frame, an unknown version or a document that does not
//! decode is a [`FrameError`]: the peer is broken or hostile, and the server closes that
//! one connection with the reason logged. JSON keeps the protocol inspectable with
//! `socat`; the messages are small, so its cost stays below the socket's.
//!
//! # Built on tokio-util's `LengthDelimitedCodec`
//! The length field is tokio-util's [`LengthDelimitedCodec`], configured once
//! (`length_codec`: 4 bytes, big-endian, at most [`MAX_FRAME_BYTES`]). Reading uses its
//! [`Decoder`] on the reader's own `BytesMut`, not a `FramedRead`, because the client
//! reads a non-blocking std socket ([`FrameReader::read_from`]) as well as tokio ones
//! ([`FrameReader::fill`]), and [`read`] must take exactly one frame from the stream
//! (what follows a hello belongs to the connection's reader). This file adds only what
//! the codec does not know: the version byte, the JSON document, the frame that names
//! its request but does not decode, and the announced length in [`FrameError::Oversized`]
//! (the codec's own error does not carry it).
//!
//! Writing puts the same bytes in place: [`encode_into`] appends the frame to a caller's
//! `Vec<u8>` (the outboxes that batch several frames into one write), serializing the
//! document straight after its length field. The codec's `Encoder` takes the body as a
//! finished buffer and copies it into a `BytesMut`, which here would be one more buffer
//! and two more copies per request; a test holds the two to the same bytes.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, LengthDelimitedCodec};

/// The protocol version this build speaks. Version 4 wraps the admission operations in
/// one `op` request and one `answer` response (`{"op": {"reserve": {...}}}`, see
/// `crate::ops`), sends a missing cancellation scope as `null` instead of `0`, and adds
/// the `coordination` error. Version 3 adds the key-wide Retry-After pause
/// and the circuit breakers (`pause`, `breaker_pass`, `breaker_report`; a version 2
/// coordinator could not decode them). Version 2 tags messages externally
/// (`{"admit": {...}}`); version 1 had `{"op": "admit", ...}`.
pub const PROTOCOL_VERSION: u8 = 4;

/// The largest frame either side accepts (length field excluded).
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// Bytes of the length field at the head of every frame.
const LENGTH_FIELD_BYTES: usize = 4;

/// The codec of the frames' length field: [`LENGTH_FIELD_BYTES`], big-endian, counting
/// what follows it (the version byte and the document), at most [`MAX_FRAME_BYTES`];
/// a decoded frame is what follows the field.
fn length_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(LENGTH_FIELD_BYTES)
        .big_endian()
        .max_frame_length(MAX_FRAME_BYTES)
        .new_codec()
}

/// The length a frame's field announces (`bytes` start with it).
fn announced_length(bytes: &[u8]) -> usize {
    bytes
        .first_chunk::<LENGTH_FIELD_BYTES>()
        .map_or(0, |field| u32::from_be_bytes(*field) as usize)
}

/// A decoded frame's document, once its version byte is this build's.
fn document(frame: &[u8]) -> Result<&[u8], FrameError> {
    match frame.split_first() {
        None => Err(FrameError::Empty),
        Some((&PROTOCOL_VERSION, document)) => Ok(document),
        Some((&version, _)) => Err(FrameError::UnknownVersion(version)),
    }
}

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
    let len = out.len() - start - LENGTH_FIELD_BYTES;
    if len > MAX_FRAME_BYTES {
        out.truncate(start);
        return Err(FrameError::Oversized(len));
    }
    out[start..start + LENGTH_FIELD_BYTES].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(())
}

/// Frames read from a byte stream in chunks: one read takes in every frame the peer has
/// sent so far, and [`FrameReader::next_frame`] hands them out one by one, split off the
/// buffer by the length codec. Cancel-safe (the bytes and the codec's state live
/// here, not in a pending future), with the same checks as [`read`].
#[derive(Debug)]
pub struct FrameReader {
    buf: BytesMut,
    codec: LengthDelimitedCodec,
    /// The codec has taken in a frame's length field (it is no longer in `buf`) and not
    /// yet its whole body: an end of stream now is mid-frame even if `buf` is empty.
    mid_frame: bool,
}

/// Bytes asked of the socket per read (frames are far smaller).
const READ_CHUNK: usize = 16 * 1024;
/// The same for [`FrameReader::read_from`], which zeroes its buffer first.
pub const SYNC_READ_CHUNK: usize = 4 * 1024;

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            buf: BytesMut::new(),
            codec: length_codec(),
            mid_frame: false,
        }
    }
}

impl FrameReader {
    /// An empty reader.
    pub fn new() -> Self {
        FrameReader::default()
    }

    /// The next complete frame already read, decoded; `Ok(None)` if more bytes are needed.
    pub fn next_frame<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        let before = self.buf.len();
        let frame = match self.codec.decode(&mut self.buf) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                // The codec took the length field in when `buf` shrank.
                self.mid_frame |= self.buf.len() < before;
                return Ok(None);
            }
            // The codec's one refusal at this configuration: a length over the limit,
            // whose field it leaves at the head of `buf`.
            Err(_) => return Err(FrameError::Oversized(announced_length(&self.buf))),
        };
        self.mid_frame = false;
        let document = document(&frame)?;
        match serde_json::from_slice(document) {
            Ok(msg) => Ok(Some(msg)),
            // The frame is already split off: skipped whole, the connection can go on.
            Err(error) => Err(match serde_json::from_slice(document) {
                Ok(IdOnly { id }) => FrameError::Undecodable { id, error },
                Err(_) => FrameError::Malformed(error),
            }),
        }
    }

    /// Read once from `r` (whatever is available, up to a chunk). `Closed` at a clean end
    /// of stream between frames, `Io` if it ends mid-frame.
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<(), FrameError> {
        self.buf.reserve(READ_CHUNK);
        let n = r.read_buf(&mut self.buf).await.map_err(FrameError::Io)?;
        self.check_eof(n)
    }

    /// Read once from a non-blocking `r`: the bytes read, 0 if nothing is available now.
    /// Fewer than [`SYNC_READ_CHUNK`] bytes means the socket was drained (the caller may
    /// clear its readiness without a read that only says "would block").
    pub fn read_from<R: std::io::Read>(&mut self, mut r: R) -> Result<usize, FrameError> {
        // `reserve` also takes back the room of the frames handed out.
        self.buf.reserve(READ_CHUNK);
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

    fn check_eof(&self, n: usize) -> Result<(), FrameError> {
        match n {
            0 if self.buf.is_empty() && !self.mid_frame => Err(FrameError::Closed),
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

/// Read one frame and decode it, taking no byte of the next one from `r`. Not
/// cancel-safe: drive it from one task to completion.
pub async fn read<T: DeserializeOwned, R: AsyncRead + Unpin>(r: &mut R) -> Result<T, FrameError> {
    let mut buf = BytesMut::zeroed(LENGTH_FIELD_BYTES);
    match r.read_exact(&mut buf).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = announced_length(&buf);
    // The codec checks the length field and takes it in; then exactly the body is read.
    let frame = match length_codec().decode(&mut buf) {
        Err(_) => return Err(FrameError::Oversized(len)),
        Ok(Some(empty)) => empty,
        Ok(None) => {
            buf.resize(len, 0);
            r.read_exact(&mut buf).await.map_err(FrameError::Io)?;
            buf
        }
    };
    serde_json::from_slice(document(&frame)?).map_err(FrameError::Malformed)
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
    fn frames_are_the_bytes_the_length_delimited_codec_writes() {
        use tokio_util::codec::Encoder;
        for msg in [
            serde_json::json!({"n": 7}),
            serde_json::json!("a".repeat(MAX_FRAME_BYTES - 3)),
        ] {
            let mut body = vec![PROTOCOL_VERSION];
            serde_json::to_writer(&mut body, &msg).unwrap();
            let mut theirs = BytesMut::new();
            length_codec().encode(&body[..], &mut theirs).unwrap();
            assert_eq!(encode(&msg).unwrap(), &theirs[..]);
        }
        let mut reader = FrameReader::new();
        reader
            .buf
            .extend_from_slice(&[0, 0, 0, 5, PROTOCOL_VERSION, b'"', b'a', b'b', b'"']);
        assert_eq!(
            reader.next_frame::<String>().unwrap().as_deref(),
            Some("ab")
        );
    }

    #[test]
    fn the_limit_is_the_largest_frame_and_one_byte_more_is_refused_with_its_length() {
        rt().block_on(async {
            // The version byte and a JSON string's quotes: a frame of exactly the limit.
            let largest = "a".repeat(MAX_FRAME_BYTES - 3);
            let bytes = encode(&largest).unwrap();
            assert_eq!(bytes.len(), LENGTH_FIELD_BYTES + MAX_FRAME_BYTES);
            assert_eq!(
                read::<String, _>(&mut bytes.as_slice()).await.unwrap(),
                largest
            );
            let mut reader = FrameReader::new();
            reader.fill(&mut bytes.as_slice()).await.unwrap();
            let mut taken = reader.buf.len();
            while taken < bytes.len() {
                // `fill` takes at most its buffer's spare room per read.
                reader.fill(&mut &bytes[taken..]).await.unwrap();
                taken = reader.buf.len();
            }
            assert_eq!(reader.next_frame::<String>().unwrap(), Some(largest));

            let too_long = "a".repeat(MAX_FRAME_BYTES - 2);
            let err = encode(&too_long).unwrap_err();
            assert!(matches!(err, FrameError::Oversized(n) if n == MAX_FRAME_BYTES + 1));
            let field = ((MAX_FRAME_BYTES + 1) as u32).to_be_bytes();
            let err = read::<String, _>(&mut field.as_slice()).await.unwrap_err();
            assert_eq!(
                err.to_string(),
                "frame of 65537 bytes exceeds the 65536-byte limit"
            );
            let mut reader = FrameReader::new();
            reader.fill(&mut field.as_slice()).await.unwrap();
            let err = reader.next_frame::<String>().unwrap_err();
            assert!(matches!(err, FrameError::Oversized(n) if n == MAX_FRAME_BYTES + 1));
        });
    }

    #[test]
    fn a_stream_that_ends_after_a_length_field_ends_mid_frame() {
        rt().block_on(async {
            let mut reader = FrameReader::new();
            reader.fill(&mut [0u8, 0, 0, 9].as_slice()).await.unwrap();
            assert!(reader.next_frame::<Ping>().unwrap().is_none());
            let err = reader.fill(&mut [].as_slice()).await.unwrap_err();
            assert!(matches!(err, FrameError::Io(_)), "{err:?}");
            let err = reader.read_from([].as_slice()).unwrap_err();
            assert!(matches!(err, FrameError::Io(_)), "{err:?}");
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
