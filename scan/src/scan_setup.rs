//! A scan's setup, before any collector runs: SDK configuration, regions, caller identity
//! and the scan's [`AwsGate`].
//!
//! The caller's account keys every quota, so it is resolved first (STS
//! GetCallerIdentity, with its own small budget). If that fails the scan still runs, on
//! an isolated in-memory admission runtime scoped `unresolved:<scan-id>` that lives as
//! long as the scan, and the report says so.
//!
//! [`SupervisorDeps`], what every scan shares, lives here rather than in the supervisor
//! so that the dependency points one way: the supervisor runs setups, setup knows
//! nothing of the supervisor.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_actors::{AdmissionHandle, AdmissionRuntime};
use tollgate_quota::key::{AccountScope, RunId};
use tollgate_quota::PolicyTable;

use crate::regions::{choose_regions, ChosenRegions, ListRegionsAnswer, RegionSource};
use crate::request::{DiscoveryRequest, FALLBACK_REGION};
use tollgate_collectors::output::{Reason, RegionsSource};
use tollgate_collectors::AccountClients;
use tollgate_engine::aws::credentials::safe_description;
use tollgate_engine::aws::primed::Primed;
use tollgate_engine::aws::{
    isolated_admission, resolve_identity, sdk_config_assuming, AwsGate, ScanId,
    CREDENTIALS_CHECK_TIMEOUT,
};
use tollgate_engine::aws::{CallContext, CallerIdentity};
use tollgate_engine::throttling::ScanTelemetry;

/// What the supervisor shares with every scan.
#[derive(Clone)]
pub struct SupervisorDeps {
    /// Admission (the engine's handle: embedded coordinator or client).
    pub admission: AdmissionHandle,
    /// Effective policies.
    pub policies: PolicyTable,
    /// Attempt telemetry: the user's sink plus per-scan throttling tallies.
    pub telemetry: ScanTelemetry,
    /// The inner HTTP client gated requests go out through
    /// ([`default_http_client`](tollgate_engine::aws::default_http_client); a fake transport in
    /// simulation tests).
    pub http: aws_smithy_runtime_api::client::http::SharedHttpClient,
    /// Whether a scan's end asks which of its keys degraded (fleet mode only).
    pub fleet_notes: tollgate_engine::fleet_degraded::DegradedNotes,
}

impl std::fmt::Debug for SupervisorDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisorDeps")
            .field("admission", &self.admission)
            .finish_non_exhaustive()
    }
}

/// What every collector of one scan shares.
pub struct ScanSetup {
    /// The scan's gate (account-keyed, with the scan's telemetry).
    pub gate: AwsGate,
    /// SDK configuration clients are built from.
    pub sdk: aws_config::SdkConfig,
    /// Regions to scan (at least one).
    pub regions: Vec<String>,
    /// S3 path-style addressing (set with an endpoint URL: emulators).
    pub force_path_style: bool,
    /// Partition name for the report.
    pub partition: String,
    /// The account, when resolved.
    pub account: Option<String>,
    /// Why the account is unknown, when it is.
    pub identity_note: Option<String>,
    /// `--regions all`: why the fallback regions were scanned, when they were.
    pub regions_reason: Option<Reason>,
    /// `--regions all`: where the regions came from.
    pub regions_source: Option<RegionsSource>,
    /// A member account's use of its organization's shared SDK clients (`None`: the
    /// scan's collectors build their own from `sdk`).
    pub account_clients: Option<AccountClients>,
    /// The isolated admission of an unresolved scan; dropped with the scan.
    _isolated: Option<AdmissionRuntime>,
}

/// The scan could not be set up (every dataset fails with this reason).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// Cancelled while resolving the caller.
    #[error("cancelled while resolving the caller's identity")]
    Cancelled,
    /// Admission could not be started for an unresolved caller.
    #[error("could not start isolated admission for an unresolved caller: {0}")]
    Admission(String),
    /// STS refused (or did not answer) `AssumeRole` for the request's role.
    #[error(
        "could not assume role {role_arn}: {reason}; check that the role exists, that its \
         trust policy allows the base credentials (and the external id, if it requires \
         one), and that they may call sts:AssumeRole"
    )]
    AssumeRole {
        /// The role.
        role_arn: String,
        /// What STS or the transport said (no secrets: see `safe_description`).
        reason: String,
    },
}

/// A role's credentials, fetched once before the scan so that a refusal fails the scan
/// naming the role (later, the identity lookup would only report it unresolved). They
/// prime the SDK configuration's provider ([`Primed`]), so the scan's first use does not
/// call `AssumeRole` a second time; like every credential provider's request it is
/// ungated.
async fn assume_now(
    sdk: aws_config::SdkConfig,
    role_arn: &str,
    cancel: &CancellationToken,
) -> Result<aws_config::SdkConfig, SetupError> {
    use aws_credential_types::provider::ProvideCredentials;
    let failed = |reason: String| SetupError::AssumeRole {
        role_arn: role_arn.to_owned(),
        reason,
    };
    let provider = sdk
        .credentials_provider()
        .ok_or_else(|| failed("no credentials provider".into()))?;
    tokio::select! {
        _ = cancel.cancelled() => Err(SetupError::Cancelled),
        answer = tokio::time::timeout(CREDENTIALS_CHECK_TIMEOUT, provider.provide_credentials()) => match answer {
            Err(_) => Err(failed(format!("no answer within {CREDENTIALS_CHECK_TIMEOUT:?}"))),
            Ok(Err(e)) => Err(failed(safe_description(&e))),
            Ok(Ok(credentials)) => Ok(Primed::install(sdk, credentials)),
        },
    }
}

/// One member account of an organization scan: its SDK configuration (the member role's
/// gated credentials, or the caller's own), its identity (known from the listing, so no
/// `GetCallerIdentity`), and the configured region (`ListRegions`' signing region and the
/// fallback's default).
pub struct MemberScan {
    pub(crate) request: DiscoveryRequest,
    pub(crate) sdk: aws_config::SdkConfig,
    pub(crate) identity: CallerIdentity,
    pub(crate) configured_region: String,
    /// The organization's shared SDK clients with this member's credentials; `None` for
    /// the caller's own account, whose clients are its own (its credentials are the SDK
    /// configuration's, cached by the SDK).
    pub(crate) account_clients: Option<AccountClients>,
}

impl std::fmt::Debug for MemberScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberScan")
            .field("account", &self.identity.account.to_string())
            .finish_non_exhaustive()
    }
}

/// The regions of a scan whose gate is `gate`: the request's (or `configured`), or with
/// `--regions all` the enabled ones (one gated `ListRegions`), else the fallback with a
/// reason.
async fn scan_regions(
    request: &DiscoveryRequest,
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    configured: &str,
    ctx: CallContext,
) -> ChosenRegions {
    match &request.region_source {
        RegionSource::Listed if request.regions.is_empty() => ChosenRegions {
            regions: vec![configured.to_owned()],
            reason: None,
            source: None,
        },
        RegionSource::Listed => ChosenRegions {
            regions: request.regions.clone(),
            reason: None,
            source: None,
        },
        RegionSource::Enabled { fallback } => {
            let answer = enabled_regions(gate, &ctx, sdk, configured).await;
            let chosen = choose_regions(answer, fallback, configured);
            if chosen.listed() {
                return chosen;
            }
            chosen.or_described(described_regions(gate, &ctx, sdk, configured).await)
        }
    }
}

/// The regions enabled for the gate's account: `ListRegions` with `ENABLED` and
/// `ENABLED_BY_DEFAULT`, every page through the gate (global `account:ListRegions` key).
pub async fn enabled_regions(
    gate: &AwsGate,
    ctx: &CallContext,
    sdk: &aws_config::SdkConfig,
    signing_region: &str,
) -> ListRegionsAnswer {
    use aws_sdk_account::types::RegionOptStatus;
    let config = aws_sdk_account::config::Builder::from(sdk)
        .region(aws_config::Region::new(signing_region.to_owned()))
        .build();
    let client = aws_sdk_account::Client::from_conf(config);
    let mut regions = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = gate
            .call(ctx, "account", "ListRegions", None, |http| {
                client
                    .list_regions()
                    .region_opt_status_contains(RegionOptStatus::Enabled)
                    .region_opt_status_contains(RegionOptStatus::EnabledByDefault)
                    .set_next_token(token.clone())
                    .customize()
                    .config_override(aws_sdk_account::Config::builder().http_client(http))
                    .send()
            })
            .await?;
        regions.extend(
            page.regions()
                .iter()
                .filter(|r| {
                    matches!(
                        r.region_opt_status(),
                        None | Some(RegionOptStatus::Enabled | RegionOptStatus::EnabledByDefault)
                    )
                })
                .filter_map(|r| r.region_name().map(str::to_owned)),
        );
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => return Ok(regions),
        }
    }
}

/// The regions enabled for the gate's account by EC2 `DescribeRegions` (without
/// `AllRegions`: those opted in or needing no opt-in), one gated call under the account's
/// `ec2:DescribeRegions` key in `region`: where `ListRegions` is denied or unavailable
/// (member accounts often lack `account:ListRegions`; seed 000).
pub async fn described_regions(
    gate: &AwsGate,
    ctx: &CallContext,
    sdk: &aws_config::SdkConfig,
    region: &str,
) -> ListRegionsAnswer {
    let config = aws_sdk_ec2::config::Builder::from(sdk)
        .region(aws_config::Region::new(region.to_owned()))
        .build();
    let client = aws_sdk_ec2::Client::from_conf(config);
    let answer = gate
        .call(ctx, "ec2", "DescribeRegions", Some(region), |_| {
            client.describe_regions().send()
        })
        .await?;
    Ok(answer
        .regions()
        .iter()
        .filter_map(|r| r.region_name().map(str::to_owned))
        .collect())
}

/// The call context of a scan's own setup calls (`ListRegions`, `DescribeRegions`).
fn setup_context(
    scan_id: ScanId,
    deadline: tokio::time::Instant,
    cancel: &CancellationToken,
) -> CallContext {
    CallContext {
        scan_id,
        collector: "regions",
        datasets: Vec::new(),
        deadline,
        cancel: cancel.clone(),
    }
}

/// Set up one member account's scan (identity known, credentials given).
pub async fn prepare_member(
    member: MemberScan,
    deps: SupervisorDeps,
    scan_id: ScanId,
    cancel: CancellationToken,
) -> Result<ScanSetup, SetupError> {
    let deadline = monotonic_now() + member.request.timeout;
    let gate = AwsGate::new(
        deps.admission.clone(),
        deps.policies.clone(),
        &member.identity,
        deps.http.clone(),
    )
    .with_telemetry(Arc::new(deps.telemetry.clone()));
    let chosen = scan_regions(
        &member.request,
        &gate,
        &member.sdk,
        &member.configured_region,
        setup_context(scan_id, deadline, &cancel),
    )
    .await;
    if cancel.is_cancelled() {
        return Err(SetupError::Cancelled);
    }
    Ok(ScanSetup {
        gate,
        sdk: member.sdk,
        regions: chosen.regions,
        force_path_style: member.request.endpoint_url.is_some(),
        partition: member.identity.partition.as_str().to_string(),
        account: match &member.identity.account {
            AccountScope::Account(id) => Some(id.as_str().to_string()),
            AccountScope::Unresolved(_) => None,
        },
        identity_note: None,
        regions_reason: chosen.reason,
        regions_source: chosen.source,
        account_clients: member.account_clients,
        _isolated: None,
    })
}

/// What every scan establishes first, single-account and organization alike, in one
/// place ([`establish`]): the SDK configuration (a `--role-arn` assumed at once, so a
/// refusal names the role), the configured region, the STS client, the caller's identity
/// and the scan's gate over the right admission. The regions come after, from the
/// context ([`ScanContext::regions`]); an organization's hub scans none.
pub struct ScanContext {
    /// SDK configuration service clients are built from.
    pub sdk: aws_config::SdkConfig,
    /// The region the configuration names (the request's first, else the profile's,
    /// else [`FALLBACK_REGION`]).
    pub configured_region: String,
    /// STS, in the configured region (or the request's first listed region).
    pub sts: aws_sdk_sts::Client,
    /// Who the caller is; unresolved when STS would not say.
    pub identity: CallerIdentity,
    /// The scan's gate: the engine's admission for a resolved caller, an isolated
    /// in-memory one scoped `unresolved:<scan-id>` otherwise.
    pub gate: AwsGate,
    isolated: Option<AdmissionRuntime>,
}

/// Establish a scan's context for `request` (see [`ScanContext`]).
pub async fn establish(
    request: &DiscoveryRequest,
    deps: &SupervisorDeps,
    scan_id: ScanId,
    cancel: &CancellationToken,
    deadline: tokio::time::Instant,
) -> Result<ScanContext, SetupError> {
    let mut sdk = sdk_config_assuming(
        deps.http.clone(),
        request.profile.as_deref(),
        request.regions.first().map(String::as_str),
        request.endpoint_url.as_deref(),
        request.credentials.clone(),
        request.role.as_ref(),
    )
    .await;
    if let Some(role) = &request.role {
        sdk = assume_now(sdk, &role.role_arn, cancel).await?;
    }
    let configured_region = sdk
        .region()
        .map(|r| r.as_ref().to_string())
        .unwrap_or_else(|| FALLBACK_REGION.to_string());
    let sts_region = match (&request.region_source, request.regions.first()) {
        (RegionSource::Listed, Some(first)) => first.clone(),
        _ => configured_region.clone(),
    };
    let sts = aws_sdk_sts::Client::from_conf(
        aws_sdk_sts::config::Builder::from(&sdk)
            .region(aws_config::Region::new(sts_region))
            .build(),
    );
    let run_id = RunId::new(&scan_id.to_string()).expect("scan-<hex> is a valid run id");
    let identity = resolve_identity(&sts, &deps.http, run_id, cancel, deadline, &deps.telemetry)
        .await
        .map_err(|_| SetupError::Cancelled)?;
    let (admission, isolated) = if identity.is_resolved() {
        (deps.admission.clone(), None)
    } else {
        let runtime = isolated_admission().map_err(|e| SetupError::Admission(e.to_string()))?;
        (runtime.handle(), Some(runtime))
    };
    let gate = AwsGate::new(
        admission,
        deps.policies.clone(),
        &identity,
        deps.http.clone(),
    )
    .with_telemetry(Arc::new(deps.telemetry.clone()));
    Ok(ScanContext {
        sdk,
        configured_region,
        sts,
        identity,
        gate,
        isolated,
    })
}

impl ScanContext {
    /// The regions `request` scans under this context's gate (see [`scan_regions`]).
    pub async fn regions(
        &self,
        request: &DiscoveryRequest,
        scan_id: ScanId,
        deadline: tokio::time::Instant,
        cancel: &CancellationToken,
    ) -> ChosenRegions {
        let ctx = setup_context(scan_id, deadline, cancel);
        scan_regions(request, &self.gate, &self.sdk, &self.configured_region, ctx).await
    }
}

/// Establish the scan's context, then choose its regions.
pub async fn prepare(
    request: DiscoveryRequest,
    deps: SupervisorDeps,
    scan_id: ScanId,
    cancel: CancellationToken,
) -> Result<ScanSetup, SetupError> {
    let deadline = monotonic_now() + request.timeout;
    let context = establish(&request, &deps, scan_id, &cancel, deadline).await?;
    if let Some(reason) = &context.identity.unresolved_reason {
        tracing::warn!(%scan_id, "{reason}");
    }
    let chosen = context.regions(&request, scan_id, deadline, &cancel).await;
    let identity = context.identity;
    Ok(ScanSetup {
        gate: context.gate,
        sdk: context.sdk,
        regions: chosen.regions,
        regions_reason: chosen.reason,
        regions_source: chosen.source,
        force_path_style: request.endpoint_url.is_some(),
        partition: identity.partition.as_str().to_string(),
        account: match &identity.account {
            AccountScope::Account(id) => Some(id.as_str().to_string()),
            AccountScope::Unresolved(_) => None,
        },
        identity_note: identity.unresolved_reason.clone(),
        account_clients: None,
        _isolated: context.isolated,
    })
}
