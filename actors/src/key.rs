//! `CanonicalKey`: a [`QuotaKey`] as admission carries it, and the admission request.
//!
//! A quota key is built (or parsed) once at the edge: by the caller as a [`QuotaKey`], or
//! by the coordinator's socket server from a request's text. From there to the key's
//! actor it travels as a `CanonicalKey`: its canonical text behind an `Arc`, so the
//! handle, its guards, the registry and the actor share one allocation (cloning is a
//! reference count) and hash the text the store keys records by. The type says the text
//! is canonical: the only ways to make one are from a `QuotaKey` or by parsing into one,
//! so two requests for the same budget always carry equal keys.
//!
//! [`AdmitCall`] is one attempt's final admission as it travels from a
//! `ReservationGuard` to the key's actor, in process or over the socket, where its
//! [`AdmitRequest`] is what `QuotaState::admit` decides on.

use std::borrow::Borrow;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use tollgate_quota::key::{KeyError, QuotaKey};
use tollgate_quota::{AdmitRequest, Policy};

use crate::wait::WaitOptions;

/// The canonical text of a [`QuotaKey`], shared (see the module docs).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CanonicalKey(Arc<str>);

impl CanonicalKey {
    /// The key's canonical text (`partition/account/region/service:group`).
    pub fn new(key: &QuotaKey) -> Self {
        let mut text = String::with_capacity(64);
        // Writing to a `String` cannot fail.
        let _ = write!(text, "{key}");
        CanonicalKey(text.into())
    }

    /// Parse `text` as a quota key (accepting what `QuotaKey`'s `FromStr` accepts) and keep
    /// its canonical form.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        text.parse::<QuotaKey>().map(|key| CanonicalKey::new(&key))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&QuotaKey> for CanonicalKey {
    fn from(key: &QuotaKey) -> Self {
        CanonicalKey::new(key)
    }
}

impl Borrow<str> for CanonicalKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CanonicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CanonicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// One attempt's final admission: which key, under which policy, what is asked, how long
/// to wait. The same value whether the actor runs in this process or the coordinator's.
#[derive(Debug, Clone)]
pub(crate) struct AdmitCall {
    /// The key's budget.
    pub key: CanonicalKey,
    /// The caller's policy for the key.
    pub policy: Policy,
    /// Reservation, cost and whether it is a retry: what `QuotaState::admit` decides on.
    pub request: AdmitRequest,
    /// How long to wait, and the cancellation scope.
    pub wait: WaitOptions,
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
}
