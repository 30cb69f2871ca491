//! The coordinator socket's frame decoder, as the server and the client run it: bytes
//! from a peer (possibly hostile, same OS user) into `FrameReader`, frames decoded as
//! requests (server side) and as responses (client side). Decoding a request parses the
//! key its operation names (the one place a request's key is parsed): the canonical text
//! it keeps must parse back to itself, and to the parts the key carries.
//! Errors are expected; a panic, a hang or an allocation beyond the frame cap is a
//! finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_actors::remote::frame::FrameReader;
use tollgate_actors::remote::protocol::{Request, RequestBody, Response};
use tollgate_actors::CanonicalKey;
use tollgate_quota::key::QuotaKey;

fn key_of(body: &RequestBody) -> Option<&CanonicalKey> {
    match body {
        RequestBody::Op(op) => op.key(),
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
        if let Some(key) = key_of(&req.body) {
            let again: QuotaKey = key.as_str().parse().unwrap_or_else(|e| {
                panic!("canonical key {key} does not parse again: {e}");
            });
            assert_eq!(
                again.to_string(),
                key.as_str(),
                "a canonical key is its own canonical form"
            );
            assert_eq!(&again, key.quota_key(), "the parts it carries are its text's");
        }
    });
    decode_all::<Response>(data, |_| {});
});
