//! `Primed`: a credentials provider that hands out credentials already fetched, once.
//!
//! A scan with a role fetches the role's credentials before it starts, so that a refusal
//! fails the scan naming the role (the scan crate's scan set-up). Without this, the SDK
//! configuration's identity cache would fetch its own on first use: a second `AssumeRole`
//! for every scan. Wrapping the role's provider in `Primed` gives the cache the checked
//! credentials first; the cache keeps them until they near expiry and then asks the
//! role's provider, so long scans still refresh.

use std::sync::Mutex;

use aws_config::SdkConfig;
use aws_credential_types::provider::{future, ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;

/// `first` once, then whatever `inner` provides.
#[derive(Debug)]
pub struct Primed {
    first: Mutex<Option<Credentials>>,
    inner: SharedCredentialsProvider,
}

impl Primed {
    /// A provider answering `first` to its first request and asking `inner` afterwards.
    pub fn new(first: Credentials, inner: SharedCredentialsProvider) -> Primed {
        Primed {
            first: Mutex::new(Some(first)),
            inner,
        }
    }

    /// `sdk` with its credentials provider primed with `first` (unchanged if it has no
    /// provider).
    pub fn install(sdk: SdkConfig, first: Credentials) -> SdkConfig {
        let Some(inner) = sdk.credentials_provider() else {
            return sdk;
        };
        sdk.into_builder()
            .credentials_provider(SharedCredentialsProvider::new(Primed::new(first, inner)))
            .build()
    }
}

impl ProvideCredentials for Primed {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner()).take();
        match first {
            Some(credentials) => future::ProvideCredentials::ready(Ok(credentials)),
            None => self.inner.provide_credentials(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// Counts its calls; answers credentials named by the count.
    #[derive(Debug, Default)]
    struct Counting(Arc<AtomicUsize>);

    impl ProvideCredentials for Counting {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            future::ProvideCredentials::ready(Ok(Credentials::new(
                format!("inner-{n}"),
                "secret",
                None,
                None,
                "test",
            )))
        }
    }

    #[tokio::test]
    async fn the_checked_credentials_are_used_first_then_the_inner_provider() {
        let calls = Arc::new(AtomicUsize::new(0));
        let inner = SharedCredentialsProvider::new(Counting(calls.clone()));
        let checked = Credentials::new("checked", "secret", None, None, "test");
        let primed = Primed::new(checked, inner);

        let first = primed.provide_credentials().await.unwrap();
        assert_eq!(first.access_key_id(), "checked");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "no second fetch for the first use"
        );

        let refreshed = primed.provide_credentials().await.unwrap();
        assert_eq!(refreshed.access_key_id(), "inner-1");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
