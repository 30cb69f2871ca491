//! `KeyCache`: the keys one client connection has sent, parsed.
//!
//! Keys travel as text (see `protocol`), and the server hands the quota actors a
//! [`CanonicalKey`]. Parsing a key validates and canonicalises every component, which
//! allocates; a client sends the same few keys (its collectors' operations) over and over,
//! so each connection keeps the keys it has parsed and answers a repeat with a lookup and
//! a reference count. A request's key is thus parsed at most once, and a repeated key not
//! at all. The cache is bounded: past [`MAX_CACHED_KEYS`] it starts over.

use std::collections::HashMap;

use super::protocol::WireError;
use crate::key::CanonicalKey;

/// How many keys one connection keeps parsed; far more than a scan's operations times
/// its regions.
pub const MAX_CACHED_KEYS: usize = 4096;

/// Parsed keys by the text they were sent as.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    parsed: HashMap<String, CanonicalKey>,
}

impl KeyCache {
    /// The key `text` names, parsed on its first use; an error answer if it is not a key.
    pub(crate) fn parse(&mut self, text: &str) -> Result<CanonicalKey, WireError> {
        if let Some(key) = self.parsed.get(text) {
            return Ok(key.clone());
        }
        let key = CanonicalKey::parse(text).map_err(|e| WireError::Rejected {
            reason: format!("not a canonical quota key: {e}"),
        })?;
        if self.parsed.len() >= MAX_CACHED_KEYS {
            self.parsed.clear();
        }
        self.parsed.insert(text.to_owned(), key.clone());
        Ok(key)
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
            match cache.parse("aws/1/us-east-1/logs:DescribeLogStreams") {
                Err(WireError::Rejected { reason }) => {
                    assert!(reason.contains("not a canonical quota key"), "{reason}")
                }
                other => panic!("unexpected {other:?}"),
            }
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
}
