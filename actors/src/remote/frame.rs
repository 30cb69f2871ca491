//! Frames on the coordinator socket: a 4-byte big-endian length, then one version byte,
//! then a JSON document.
//!
//! The length counts the version byte and the document. A frame longer than
//! [`MAX_FRAME_BYTES`], an empty frame, an unknown version or a document that does not
//! decode is a [`FrameError`]: the peer is broken or hostile, and the server closes that
//! one connection with the reason logged. JSON keeps the protocol inspectable with
//! `socat`; the messages are small, so its cost stays below the socket's.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u8 = 1;

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
        }
    }
}

impl std::error::Error for FrameError {}

/// Encode `msg` as one frame.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut out = vec![0u8; 5];
    serde_json::to_writer(&mut out, msg).map_err(FrameError::Malformed)?;
    let len = out.len() - 4;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized(len));
    }
    out[..4].copy_from_slice(&(len as u32).to_be_bytes());
    out[4] = PROTOCOL_VERSION;
    Ok(out)
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
