//! How a [`CanonicalKey`] crosses the socket: as its canonical text, parsed on arrival.
//!
//! This is the one place a request's key is parsed: decoding an operation
//! (`crate::ops::Operation`) parses its key, so the server hands the quota actors a typed
//! key and nothing downstream reads the text again (a breaker's scope and a key's
//! schedule come from its parsed parts). Text that is not a quota key fails the decoding
//! with a message naming it; the server answers that request with the message and keeps
//! the connection (see `server`).
//!
//! Parsing validates and canonicalises every component, which allocates; a client sends
//! the same few keys (its collectors' operations) over and over, so the thread that
//! decodes keeps the keys it has parsed ([`KeyCache`]) and answers a repeat with a lookup
//! and a reference count. Why per thread and not per connection: serde's derived decoding
//! has no way to pass a connection's state to a field, and a coordinator decodes every
//! connection on one thread (its actors' thread), so the thread's cache is the
//! connection's cache shared. It memoises a pure function (text to key), so nothing
//! anyone observes depends on what it holds; it is bounded: past [`MAX_CACHED_KEYS`] it
//! starts over.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tollgate_quota::key::KeyError;

use crate::key::CanonicalKey;

/// How many keys one thread keeps parsed; far more than a scan's operations times its
/// regions.
pub const MAX_CACHED_KEYS: usize = 4096;

/// Parsed keys by the text they were sent as.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    parsed: HashMap<String, CanonicalKey>,
}

impl KeyCache {
    /// The key `text` names, parsed on its first use.
    pub(crate) fn parse(&mut self, text: &str) -> Result<CanonicalKey, KeyError> {
        if let Some(key) = self.parsed.get(text) {
            return Ok(key.clone());
        }
        let key = CanonicalKey::parse(text)?;
        if self.parsed.len() >= MAX_CACHED_KEYS {
            self.parsed.clear();
        }
        self.parsed.insert(text.to_owned(), key.clone());
        Ok(key)
    }
}

thread_local! {
    static DECODED: RefCell<KeyCache> = RefCell::new(KeyCache::default());
}

impl Serialize for CanonicalKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CanonicalKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyText)
    }
}

struct KeyText;

impl Visitor<'_> for KeyText {
    type Value = CanonicalKey;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a canonical quota key (partition/account/region/service:group)")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<CanonicalKey, E> {
        DECODED
            .with(|cache| cache.borrow_mut().parse(text))
            .map_err(|e| E::custom(format!("not a canonical quota key: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGS: &str = "aws/123456789012/us-east-1/logs:DescribeLogStreams";

    #[test]
    fn a_repeated_key_is_answered_from_the_cache_without_parsing_again() {
        let mut cache = KeyCache::default();
        let first = cache.parse(LOGS).unwrap();
        let again = cache.parse(LOGS).unwrap();
        assert!(
            std::ptr::eq(first.as_str(), again.as_str()),
            "the same parsed key, shared"
        );
    }

    #[test]
    fn an_aliased_key_is_cached_under_its_text_and_answered_in_canonical_form() {
        let mut cache = KeyCache::default();
        let key = cache
            .parse("aws/123456789012/us-east-1/elbv2:DescribeLoadBalancers")
            .unwrap();
        assert_eq!(
            key.as_str(),
            "aws/123456789012/us-east-1/elasticloadbalancingv2:DescribeLoadBalancers"
        );
    }

    #[test]
    fn text_that_is_not_a_key_is_refused_every_time_and_never_cached() {
        let mut cache = KeyCache::default();
        for _ in 0..2 {
            assert!(cache
                .parse("aws/1/us-east-1/logs:DescribeLogStreams")
                .is_err());
        }
        assert!(cache.parsed.is_empty());
    }

    #[test]
    fn a_full_cache_starts_over_instead_of_growing() {
        let mut cache = KeyCache::default();
        for i in 0..=MAX_CACHED_KEYS {
            cache
                .parse(&format!("aws/123456789012/us-east-1/logs:Op{i}"))
                .unwrap();
        }
        assert_eq!(cache.parsed.len(), 1);
    }

    #[test]
    fn a_decoded_key_is_its_canonical_form_and_a_repeat_shares_it() {
        let first: CanonicalKey = serde_json::from_str(&format!("\"{LOGS}\"")).unwrap();
        let again: CanonicalKey = serde_json::from_str(&format!("\"{LOGS}\"")).unwrap();
        assert!(std::ptr::eq(first.as_str(), again.as_str()));
        assert_eq!(
            serde_json::to_string(&first).unwrap(),
            format!("\"{LOGS}\"")
        );
        let err = serde_json::from_str::<CanonicalKey>("\"aws/1/r/s:o\"").unwrap_err();
        assert!(
            err.to_string().contains("not a canonical quota key"),
            "{err}"
        );
    }
}
