//! `RoleCredentials`: one member account's role credentials, fetched with STS
//! `AssumeRole` through the gate under the *caller's* account, cached, and refreshed
//! through the same gated path before they expire.
//!
//! Why not aws-config's `AssumeRoleProvider` (what `--role-arn` uses)? Its requests are
//! a credential provider's, sent ungated (DESIGN §6), and every SDK client built from a
//! configuration resolves its identity in its own cache partition, so a member scanned
//! in many regions with four services would assume its role once per client. In an
//! organization the caller's STS quota is the one budget every member shares, so here
//! the calls are gated (`aws/<caller>/<region>/sts:AssumeRole`) and the cache is ours:
//! every client of the member asks this provider, which answers from its cache until
//! [`refresh_after`] of the session has passed; one fetch at a time (a lock held across
//! the call), so concurrent clients wait for it rather than each assuming the role. An
//! organization of 1,000 accounts makes 1,000 `AssumeRole` calls per scan (and one more
//! per member for each hour a scan outlives its sessions).
//!
//! Credentials handed to the SDK carry an expiry at the refresh point on the SDK's own
//! time source, so the SDK's identity cache asks again when ours would refresh. The
//! clients an organization's members share have no SDK identity cache
//! (`tollgate_engine::aws::account_credentials`): they ask this provider on every
//! request, and it answers from its cache (a lock and a clone) until the refresh point. The
//! refresh point itself is kept on tollgate's monotonic clock (paused in tests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{self, future, ProvideCredentials};
use aws_credential_types::Credentials;
use aws_smithy_async::time::SharedTimeSource;
use tokio::time::Instant;
use tollgate_actors::clock::monotonic_now;

use tollgate_engine::aws::{AssumeRole, AwsGate, CallContext, CallError};

/// A session's length when STS's answer gives no usable expiry (STS's default, 1 hour).
pub const DEFAULT_SESSION: Duration = Duration::from_secs(3_600);

/// How long before a session ends its credentials are refreshed (at most half the
/// session).
pub const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(300);

/// The longest session STS grants (12 hours); an expiry further away means the answer's
/// clock is not ours (an emulator's calendar), and [`DEFAULT_SESSION`] is assumed.
pub const MAX_SESSION: Duration = Duration::from_secs(12 * 3_600);

/// How long a session lasts, from STS's `Expiration` read against the SDK's clock at the
/// answer; [`DEFAULT_SESSION`] when either is missing or they disagree (past, or beyond
/// [`MAX_SESSION`]).
pub fn session_length(expiration: Option<SystemTime>, now: Option<SystemTime>) -> Duration {
    match (expiration, now) {
        (Some(expiration), Some(now)) => match expiration.duration_since(now) {
            Ok(left) if !left.is_zero() && left <= MAX_SESSION => left,
            _ => DEFAULT_SESSION,
        },
        _ => DEFAULT_SESSION,
    }
}

/// When, into a session of `length`, its credentials are refreshed.
pub fn refresh_after(length: Duration) -> Duration {
    length - REFRESH_BEFORE_EXPIRY.min(length / 2)
}

/// What the provider needs to assume one member's role.
pub struct RoleCredentials {
    inner: Arc<Inner>,
}

struct Inner {
    gate: AwsGate,
    ctx: CallContext,
    sts: aws_sdk_sts::Client,
    region: String,
    role: AssumeRole,
    time_source: Option<SharedTimeSource>,
    cached: tokio::sync::Mutex<Option<Cached>>,
    calls: AtomicU64,
}

#[derive(Clone)]
struct Cached {
    credentials: Credentials,
    refresh_at: Instant,
}

impl std::fmt::Debug for RoleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleCredentials")
            .field("role", &self.inner.role)
            .field("calls", &self.assume_role_calls())
            .finish_non_exhaustive()
    }
}

impl Clone for RoleCredentials {
    fn clone(&self) -> Self {
        RoleCredentials {
            inner: self.inner.clone(),
        }
    }
}

impl RoleCredentials {
    /// A provider assuming `role` with `sts` (a client of the caller's configuration in
    /// `region`) through `gate` (the caller's), attributed and bounded by `ctx`.
    pub fn new(
        gate: AwsGate,
        ctx: CallContext,
        sts: aws_sdk_sts::Client,
        region: String,
        role: AssumeRole,
    ) -> RoleCredentials {
        let time_source = sts.config().time_source();
        RoleCredentials {
            inner: Arc::new(Inner {
                gate,
                ctx,
                sts,
                region,
                role,
                time_source,
                cached: tokio::sync::Mutex::new(None),
                calls: AtomicU64::new(0),
            }),
        }
    }

    /// The role.
    pub fn role(&self) -> &AssumeRole {
        &self.inner.role
    }

    /// `AssumeRole` calls made so far (each with its attempts).
    pub fn assume_role_calls(&self) -> u64 {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// The cached credentials, or fresh ones from a gated `AssumeRole`.
    pub async fn fetch(&self) -> Result<Credentials, CallError> {
        let inner = &*self.inner;
        let mut cached = inner.cached.lock().await;
        let now = monotonic_now();
        if let Some(c) = cached.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(self.handed_out(c, now));
        }
        inner.calls.fetch_add(1, Ordering::Relaxed);
        let role = &inner.role;
        let out = inner
            .gate
            .call(
                &inner.ctx,
                "sts",
                "AssumeRole",
                Some(&inner.region),
                |http| {
                    inner
                        .sts
                        .assume_role()
                        .role_arn(&role.role_arn)
                        .role_session_name(role.session_name())
                        .set_external_id(role.external_id.clone())
                        .customize()
                        .config_override(aws_sdk_sts::Config::builder().http_client(http))
                        .send()
                },
            )
            .await?;
        let Some(answer) = out.credentials() else {
            return Err(CallError::in_answer(
                tollgate_engine::aws::CallErrorKind::Fatal,
                "AssumeRole",
                None,
                "AssumeRole answered without credentials",
            ));
        };
        let expiration = SystemTime::try_from(*answer.expiration()).ok();
        let length = session_length(expiration, inner.time_source.as_ref().map(|t| t.now()));
        let fresh = Cached {
            credentials: Credentials::new(
                answer.access_key_id(),
                answer.secret_access_key(),
                Some(answer.session_token().to_owned()),
                None,
                "tollgate-organization",
            ),
            refresh_at: now + refresh_after(length),
        };
        let handed = self.handed_out(&fresh, now);
        *cached = Some(fresh);
        Ok(handed)
    }

    /// The credentials with an expiry at the refresh point on the SDK's clock.
    fn handed_out(&self, cached: &Cached, now: Instant) -> Credentials {
        let c = &cached.credentials;
        let expiry = self
            .inner
            .time_source
            .as_ref()
            .map(|time| time.now() + cached.refresh_at.saturating_duration_since(now));
        Credentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            c.session_token().map(str::to_owned),
            expiry,
            "tollgate-organization",
        )
    }
}

impl ProvideCredentials for RoleCredentials {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(async move {
            self.fetch().await.map_err(|e| {
                provider::error::CredentialsError::provider_error(format!(
                    "could not assume {}: {e}",
                    self.inner.role.role_arn
                ))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_read_from_the_answer_unless_its_clock_is_not_ours() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let hour = Duration::from_secs(3_600);
        let rows = [
            (Some(now + hour), Some(now), hour),
            (
                Some(now + 15 * 60 * Duration::from_secs(1)),
                Some(now),
                Duration::from_secs(900),
            ),
            (Some(now - hour), Some(now), DEFAULT_SESSION),
            (Some(now), Some(now), DEFAULT_SESSION),
            (Some(now + 13 * hour), Some(now), DEFAULT_SESSION),
            (None, Some(now), DEFAULT_SESSION),
            (Some(now + hour), None, DEFAULT_SESSION),
        ];
        for (expiration, at, length) in rows {
            assert_eq!(session_length(expiration, at), length, "{expiration:?}");
        }
    }

    #[test]
    fn credentials_refresh_five_minutes_before_the_end_or_halfway_through_short_sessions() {
        assert_eq!(
            refresh_after(Duration::from_secs(3_600)),
            Duration::from_secs(3_300)
        );
        assert_eq!(
            refresh_after(Duration::from_secs(900)),
            Duration::from_secs(600)
        );
        assert_eq!(
            refresh_after(Duration::from_secs(400)),
            Duration::from_secs(200)
        );
    }
}
