//! The coordinator socket's frame decoder, as the server and the client run it: bytes
//! from a peer (possibly hostile, same OS user) into `FrameReader`, frames decoded as
//! requests (server side) and as responses (client side), and every key a request names
//! parsed as the server would (`CanonicalKey::parse`; the breaker requests parse its
//! canonical text again into a `QuotaKey`, so that text must parse back to itself).
//! Errors are expected; a panic, a hang or an allocation beyond the frame cap is a
//! finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_actors::remote::frame::FrameReader;
use tollgate_actors::remote::protocol::{Request, RequestBody, Response};
use tollgate_actors::CanonicalKey;
use tollgate_quota::key::QuotaKey;

fn key_of(body: &RequestBody) -> Option<&str> {
    match body {
        RequestBody::Reserve { key, .. }
        | RequestBody::Admit { key, .. }
        | RequestBody::Feedback { key, .. }
        | RequestBody::Pause { key, .. }
        | RequestBody::BreakerPass { key, .. }
        | RequestBody::BreakerReport { key, .. }
        | RequestBody::Release { key, .. } => Some(key),
        _ => None,
    }
}

/// Feed `data` to a reader (in the reader's own chunks) and decode frames of `T` until
/// one fails or more bytes would be needed.
fn decode_all<T: serde::de::DeserializeOwned>(data: &[u8], mut each: impl FnMut(T)) {
    let mut reader = FrameReader::new();
    let mut rest = data;
    loop {
        // Errors (a clean or torn end of input) are the stream's end; the frames read
        // so far are still decoded.
        let _ = reader.read_from(&mut rest);
        loop {
            match reader.next_frame::<T>() {
                Ok(Some(msg)) => each(msg),
                Ok(None) => break,
                Err(_) => return,
            }
        }
        if rest.is_empty() {
            return;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    decode_all::<Request>(data, |req| {
        if let Some(Ok(key)) = key_of(&req.body).map(CanonicalKey::parse) {
            let again: QuotaKey = key.as_str().parse().unwrap_or_else(|e| {
                panic!("canonical key {key} does not parse again: {e}");
            });
            assert_eq!(
                again.to_string(),
                key.as_str(),
                "a canonical key is its own canonical form"
            );
        }
    });
    decode_all::<Response>(data, |_| {});
});
