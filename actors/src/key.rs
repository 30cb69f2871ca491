//! `CanonicalKey`: a [`QuotaKey`] as admission carries it, and the admission request.
//!
//! A quota key is built (or parsed) once at the edge: by the caller as a [`QuotaKey`], or
//! when a request arrives on the coordinator's socket (`remote::keys`, the one place a
//! request's key is parsed). From there to the key's actor it travels as a
//! `CanonicalKey`: its canonical text and the parsed [`QuotaKey`] behind one `Arc`, so
//! the handle, its guards, the registry and the actor share one allocation (cloning is a
//! reference count), hash the text the store keys records by, and read the key's parts
//! (its breaker scope, its schedule) without parsing the text again. The type says the
//! text is canonical: the only ways to make one are from a `QuotaKey` or by parsing into
//! one, so two requests for the same budget always carry equal keys.

use std::borrow::Borrow;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use tollgate_quota::key::{KeyError, QuotaKey};

/// A [`QuotaKey`] with its canonical text, shared (see the module docs).
#[derive(Clone)]
pub struct CanonicalKey(Arc<Parsed>);

struct Parsed {
    text: Box<str>,
    key: QuotaKey,
}

impl CanonicalKey {
    /// The key, with its canonical text (`partition/account/region/service:group`).
    pub fn new(key: &QuotaKey) -> Self {
        let mut text = String::with_capacity(64);
        // Writing to a `String` cannot fail.
        let _ = write!(text, "{key}");
        CanonicalKey(Arc::new(Parsed {
            text: text.into_boxed_str(),
            key: key.clone(),
        }))
    }

    /// Parse `text` as a quota key (accepting what `QuotaKey`'s `FromStr` accepts) and keep
    /// its canonical form.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        text.parse::<QuotaKey>().map(|key| CanonicalKey::new(&key))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The parsed key (its parts: scope, service, group).
    pub fn quota_key(&self) -> &QuotaKey {
        &self.0.key
    }
}

// Equality, order and hash are the canonical text's, so a map keyed by `CanonicalKey`
// answers lookups by `&str` (see `Borrow`).
impl PartialEq for CanonicalKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for CanonicalKey {}

impl std::hash::Hash for CanonicalKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for CanonicalKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CanonicalKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::str::FromStr for CanonicalKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, KeyError> {
        CanonicalKey::parse(text)
    }
}

impl From<&QuotaKey> for CanonicalKey {
    fn from(key: &QuotaKey) -> Self {
        CanonicalKey::new(key)
    }
}

impl Borrow<str> for CanonicalKey {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for CanonicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for CanonicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const ELB: &str = "aws/123456789012/us-east-1/elasticloadbalancingv2:DescribeLoadBalancers";

    #[test]
    fn a_parsed_key_keeps_the_canonical_form_not_the_alias_it_was_written_with() {
        let key =
            CanonicalKey::parse("aws/123456789012/us-east-1/elbv2:DescribeLoadBalancers").unwrap();
        let canonical: QuotaKey = key.as_str().parse().unwrap();
        assert_eq!(key.as_str(), ELB);
        assert_eq!(key, CanonicalKey::new(&canonical));
    }

    #[test]
    fn a_key_from_a_quota_key_is_its_display_text() {
        let quota_key: QuotaKey = ELB.parse().unwrap();
        assert_eq!(
            CanonicalKey::new(&quota_key).as_str(),
            quota_key.to_string()
        );
    }

    #[test]
    fn text_that_is_not_a_quota_key_is_refused() {
        assert!(CanonicalKey::parse("aws/1/r/s:o").is_err());
        assert!(CanonicalKey::parse("").is_err());
    }

    #[test]
    fn clones_share_one_allocation_and_look_up_by_text() {
        let key = CanonicalKey::parse(ELB).unwrap();
        let clone = key.clone();
        assert!(std::ptr::eq(key.as_str(), clone.as_str()));
        let map = HashMap::from([(key, 1)]);
        assert_eq!(map.get(clone.as_str()), Some(&1));
    }

    #[test]
    fn a_key_keeps_its_parsed_parts_so_nobody_parses_its_text_again() {
        let key = CanonicalKey::parse(ELB).unwrap();
        assert_eq!(key.quota_key().service(), "elasticloadbalancingv2");
        assert_eq!(key.quota_key().to_string(), key.as_str());
    }
}
