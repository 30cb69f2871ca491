//! One organization scan, from the caller's identity to the report. Runs as a future of
//! the supervisor's context (it opens each account's scan with a message to it), so it
//! never blocks the actor thread.
//!
//! 1. The caller: STS `GetCallerIdentity` (the bootstrap budget); its account keys the
//!    hub's quotas, so an unresolved caller fails the scan.
//! 2. The listing ([`listing`]), page by page, each page planned ([`select::Planner`])
//!    as it arrives: the first page's accounts start while the next pages are fetched
//!    (the hub's `ListAccounts` quota is low, 1 page a second by default, so waiting for
//!    every page would delay every AssumeRole by the whole listing). A page that fails
//!    is the organization's error; the accounts of the pages before it are still
//!    scanned.
//! 3. Accounts start as [`schedule::next_step`] says; each gets its credentials (the
//!    caller's own, or one gated `AssumeRole` whose answer [`RoleCredentials`] keeps and
//!    refreshes) and then an ordinary supervisor scan with the remaining deadline.
//! 4. Cancellation skips the queued accounts and cancels the running accounts' scans,
//!    whose reports still arrive; the report holds what was collected.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix::Recipient;
use aws_credential_types::provider::SharedCredentialsProvider;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_quota::key::{AccountId, RunId};
use tollgate_quota::{AccountScope, Timestamp};

use crate::organization::credentials::RoleCredentials;
use crate::organization::listing;
use crate::organization::progress::{AccountPhase, ProgressBoard};
use crate::organization::report::{
    OrganizationReport, OrganizationSummary, SkipReason, SkippedAccount,
};
use crate::organization::request::OrganizationRequest;
use crate::organization::schedule::{next_step, Slots, Step};
use crate::organization::select::{self, ListedAccount};
use crate::request::FALLBACK_REGION;
use crate::scan_setup::{MemberScan, SupervisorDeps};
use crate::supervisor::messages::{AwaitReport, CancelScan, ForgetScan, StartMemberScan};
use tollgate_collectors::output::{rfc3339, DiscoveryReport, Reason, ReasonKind};
use tollgate_engine::aws::{
    resolve_identity, sdk_config_assuming, AwsGate, CallContext, CallError, CallErrorKind,
    CallerIdentity, ScanId,
};

/// The supervisor's messages the run sends (recipients, so the run names no actor).
pub(crate) struct SupervisorLink {
    pub start: Recipient<StartMemberScan>,
    pub await_report: Recipient<AwaitReport>,
    pub cancel: Recipient<CancelScan>,
    pub forget: Recipient<ForgetScan>,
}

/// What every account's task shares.
struct Env {
    supervisor: SupervisorLink,
    request: OrganizationRequest,
    /// The caller's configuration (base credentials).
    sdk: aws_config::SdkConfig,
    sts: aws_sdk_sts::Client,
    /// The hub's gate (the caller's account).
    gate: AwsGate,
    /// The hub calls' context (the organization scan's id, deadline, cancellation).
    hub: CallContext,
    configured_region: String,
    partition: tollgate_quota::Partition,
    caller: String,
    progress: ProgressBoard,
    cancel: CancellationToken,
    deadline: Instant,
}

/// How one account ended.
enum Outcome {
    Scanned(Box<DiscoveryReport>),
    Skipped(SkippedAccount),
}

/// The report's parts as they accumulate.
struct Assembly {
    scan_id: ScanId,
    partition: String,
    started_at: Timestamp,
    summary: OrganizationSummary,
    accounts: Vec<DiscoveryReport>,
}

impl Assembly {
    fn failed(
        mut self,
        operation: &str,
        kind: ReasonKind,
        code: Option<String>,
        message: String,
    ) -> Self {
        self.summary.error = Some(Reason {
            operation: operation.to_owned(),
            field: None,
            kind,
            code,
            message,
            count: 1,
        });
        self
    }

    fn finish(mut self, deps: &SupervisorDeps) -> OrganizationReport {
        self.accounts.sort_by(|a, b| a.account.cmp(&b.account));
        self.summary
            .skipped
            .sort_by(|a, b| a.account.cmp(&b.account));
        self.summary.scanned = self.accounts.len() as u64;
        self.summary.hub_throttling = deps.telemetry.take(&self.scan_id.to_string());
        OrganizationReport {
            scan_id: self.scan_id.to_string(),
            partition: self.partition,
            started_at: rfc3339(self.started_at),
            finished_at: rfc3339(deps.admission.now()),
            organization: self.summary,
            accounts: self.accounts,
        }
    }
}

/// Run the organization scan `scan_id` to its report.
pub(crate) async fn run(
    supervisor: SupervisorLink,
    deps: SupervisorDeps,
    request: OrganizationRequest,
    scan_id: ScanId,
    progress: ProgressBoard,
    cancel: CancellationToken,
) -> OrganizationReport {
    let deadline = monotonic_now() + request.scan.timeout;
    let base = &request.scan;
    let mut report = Assembly {
        scan_id,
        partition: "aws".to_owned(),
        started_at: deps.admission.now(),
        summary: OrganizationSummary {
            management_account: None,
            caller_account: None,
            role_name: request.role_name.clone(),
            listed: 0,
            scanned: 0,
            skipped: Vec::new(),
            error: None,
            hub_throttling: None,
        },
        accounts: Vec::new(),
    };
    let sdk = sdk_config_assuming(
        deps.http.clone(),
        base.profile.as_deref(),
        base.regions.first().map(String::as_str),
        base.endpoint_url.as_deref(),
        base.credentials.clone(),
        None,
    )
    .await;
    let configured_region = base
        .regions
        .first()
        .cloned()
        .or_else(|| sdk.region().map(|r| r.as_ref().to_owned()))
        .unwrap_or_else(|| FALLBACK_REGION.to_owned());
    let sts = aws_sdk_sts::Client::from_conf(
        aws_sdk_sts::config::Builder::from(&sdk)
            .region(aws_config::Region::new(configured_region.clone()))
            .build(),
    );
    let run_id = RunId::new(&scan_id.to_string()).expect("scan-<hex> is a valid run id");
    let identity = match resolve_identity(
        &sts,
        &deps.http,
        run_id,
        &cancel,
        deadline,
        &deps.telemetry,
    )
    .await
    {
        Err(_) => {
            return report
                .failed(
                    "sts:GetCallerIdentity",
                    ReasonKind::Cancelled,
                    None,
                    "cancelled while resolving the caller's identity".into(),
                )
                .finish(&deps)
        }
        Ok(identity) => identity,
    };
    let AccountScope::Account(caller) = &identity.account else {
        let why = identity.unresolved_reason.clone().unwrap_or_default();
        return report
            .failed(
                "sts:GetCallerIdentity",
                ReasonKind::Failed,
                None,
                format!("{why}; an organization scan needs the caller's account (it keys the listing's and every AssumeRole's quotas): check the caller's credentials"),
            )
            .finish(&deps);
    };
    let caller = caller.as_str().to_owned();
    report.partition = identity.partition.as_str().to_owned();
    report.summary.caller_account = Some(caller.clone());
    let gate = AwsGate::new(
        deps.admission.clone(),
        deps.policies.clone(),
        &identity,
        deps.http.clone(),
    )
    .with_telemetry(Arc::new(deps.telemetry.clone()));
    let hub = CallContext {
        scan_id,
        collector: "organization",
        datasets: Vec::new(),
        deadline,
        cancel: cancel.clone(),
    };
    let organizations = listing::client(&sdk, &configured_region);
    report.summary.management_account =
        listing::management_account(&gate, &hub, &organizations).await;
    let mut planner = select::Planner::new(request.accounts.clone());
    let mut page: Option<PageFuture> = Some(Box::pin(
        listing::Pager::new(gate.clone(), hub.clone(), organizations).next(),
    ));

    let max_in_flight = request.max_accounts_in_flight;
    let env = Arc::new(Env {
        supervisor,
        request,
        sdk,
        sts,
        gate,
        hub,
        configured_region,
        partition: identity.partition.clone(),
        caller,
        progress: progress.clone(),
        cancel: cancel.clone(),
        deadline,
    });
    let mut queue: VecDeque<String> = VecDeque::new();
    let mut running = FuturesUnordered::new();
    let mut cancel_seen = false;
    loop {
        let step = next_step(Slots {
            queued: queue.len(),
            in_flight: running.len(),
            listing: page.is_some(),
            max_in_flight,
            deadline_passed: monotonic_now() >= deadline,
            cancelled: cancel.is_cancelled(),
        });
        match step {
            Step::Done => break,
            Step::Start => {
                let account = queue.pop_front().expect("a queued account");
                running.push(scan_account(env.clone(), account));
            }
            Step::SkipQueued(reason) => {
                for account in queue.drain(..) {
                    progress.set(&account, AccountPhase::Skipped(reason));
                    let message = match reason {
                        SkipReason::Deadline => {
                            "not reached before the organization's deadline (--timeout)"
                        }
                        _ => "the scan was cancelled before this account started",
                    };
                    report.summary.skipped.push(SkippedAccount {
                        account,
                        reason,
                        code: None,
                        message: message.to_owned(),
                    });
                }
            }
            Step::Wait => {
                let queued = !queue.is_empty();
                let mut arrived = None;
                tokio::select! {
                    outcome = running.next(), if !running.is_empty() => match outcome {
                        Some(Outcome::Scanned(r)) => report.accounts.push(*r),
                        Some(Outcome::Skipped(s)) => report.summary.skipped.push(s),
                        None => {}
                    },
                    listed = async { page.as_mut().expect("a page is being fetched").await }, if page.is_some() => {
                        arrived = Some(listed);
                    },
                    _ = cancel.cancelled(), if !cancel_seen => {
                        cancel_seen = true;
                        // The hub's queued admission waiters (AssumeRole) go at once.
                        if let Err(e) = deps.admission.cancel_scope(scan_id.scope()).await {
                            tracing::warn!(%scan_id, error = %e, "organization scan cancelled; its queued hub waiters could not be removed");
                        }
                    },
                    _ = tokio::time::sleep_until(deadline), if queued && monotonic_now() < deadline => {},
                }
                if let Some((next, listed)) = arrived {
                    page = next.map(|pager| Box::pin(pager.next()) as PageFuture);
                    match listed {
                        Ok(accounts) => {
                            let plan = planner.page(&accounts);
                            take_plan(plan, &mut queue, &mut report, &progress);
                        }
                        Err(e) => {
                            report.summary.error = Some(listing_failure(&e, planner.listed()));
                            page = None;
                        }
                    }
                    if page.is_none() {
                        let late = planner.finish();
                        let skipped: Vec<_> =
                            late.iter().map(|s| (s.account.clone(), s.reason)).collect();
                        progress.add(&[], &skipped);
                        report.summary.skipped.extend(late);
                        report.summary.listed = planner.listed();
                        progress.listed(report.summary.listed);
                        tracing::info!(%scan_id, listed = report.summary.listed, "organization listed");
                    }
                }
            }
        }
    }
    report.finish(&deps)
}

/// One `ListAccounts` page's future (the pager for the next page comes back with it).
type PageFuture = Pin<
    Box<
        dyn Future<
            Output = (
                Option<listing::Pager>,
                Result<Vec<ListedAccount>, CallError>,
            ),
        >,
    >,
>;

/// One page's plan: its accounts queue behind the earlier pages', its skips are reported.
fn take_plan(
    plan: select::Plan,
    queue: &mut VecDeque<String>,
    report: &mut Assembly,
    progress: &ProgressBoard,
) {
    let skipped: Vec<(String, SkipReason)> = plan
        .skipped
        .iter()
        .map(|s| (s.account.clone(), s.reason))
        .collect();
    progress.add(&plan.scan, &skipped);
    report.summary.skipped.extend(plan.skipped);
    queue.extend(plan.scan);
}

/// The organization's error when a `ListAccounts` page failed after `listed` accounts:
/// the accounts of the pages before it are still scanned, the rest is not known.
fn listing_failure(e: &CallError, listed: u64) -> Reason {
    let kind = tollgate_collectors::report_builder::reason_kind(e.kind());
    let mut message = match e.kind() {
        CallErrorKind::Cancelled => "cancelled while listing the organization".to_owned(),
        CallErrorKind::DeadlineExceeded => "the organization's deadline (--timeout) passed while listing it".to_owned(),
        _ => format!("{e}; the caller must be the organization's management account or a delegated administrator, allowed organizations:ListAccounts"),
    };
    if listed > 0 {
        message.push_str(&format!(
            "; the listing stopped after {listed} accounts, which are scanned as usual; the organization's other accounts are not"
        ));
    }
    Reason {
        operation: "organizations:ListAccounts".to_owned(),
        field: None,
        kind,
        code: e.code().map(str::to_owned),
        message,
        count: 1,
    }
}

/// The skip of an account whose role could not be assumed.
fn role_skip(account: &str, role_arn: &str, caller: &str, e: &CallError) -> SkippedAccount {
    let (reason, message) = match e.kind() {
        CallErrorKind::Cancelled => (
            SkipReason::Cancelled,
            format!("the scan was cancelled while assuming {role_arn}"),
        ),
        CallErrorKind::DeadlineExceeded => (
            SkipReason::Deadline,
            format!("the organization's deadline passed while assuming {role_arn}"),
        ),
        _ => (
            SkipReason::RoleNotAssumable,
            format!(
                "could not assume {role_arn}: {e}; check that the role exists in account \
                 {account}, that its trust policy allows the caller's account {caller} (and \
                 the external id, if it requires one), and that the caller may call \
                 sts:AssumeRole"
            ),
        ),
    };
    SkippedAccount {
        account: account.to_owned(),
        reason,
        code: e.code().map(str::to_owned),
        message,
    }
}

/// One account: credentials, then its scan to the report.
async fn scan_account(env: Arc<Env>, account: String) -> Outcome {
    let skip = |reason: SkipReason, message: &str| {
        env.progress.set(&account, AccountPhase::Skipped(reason));
        Outcome::Skipped(SkippedAccount {
            account: account.clone(),
            reason,
            code: None,
            message: message.to_owned(),
        })
    };
    env.progress.set(&account, AccountPhase::Assuming);
    let sdk = if account == env.caller {
        // The caller's own account: its own credentials, no role.
        env.sdk.clone()
    } else {
        let role = env.request.role_for(env.partition.as_str(), &account);
        let credentials = RoleCredentials::new(
            env.gate.clone(),
            env.hub.clone(),
            env.sts.clone(),
            env.configured_region.clone(),
            role.clone(),
        );
        if let Err(e) = credentials.fetch().await {
            let skipped = role_skip(&account, &role.role_arn, &env.caller, &e);
            env.progress
                .set(&account, AccountPhase::Skipped(skipped.reason));
            return Outcome::Skipped(skipped);
        }
        env.sdk
            .clone()
            .into_builder()
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .build()
    };
    if env.cancel.is_cancelled() {
        return skip(
            SkipReason::Cancelled,
            "the scan was cancelled before this account started",
        );
    }
    let left = env.deadline.saturating_duration_since(monotonic_now());
    if left.is_zero() {
        return skip(
            SkipReason::Deadline,
            "not reached before the organization's deadline (--timeout)",
        );
    }
    let Ok(id) = AccountId::new(&account) else {
        return skip(
            SkipReason::NotInOrganization,
            "ListAccounts named an invalid account id",
        );
    };
    let mut request = env.request.scan.clone();
    request.timeout = left;
    let member = MemberScan {
        request,
        sdk,
        identity: CallerIdentity::resolved(env.partition.clone(), id, None),
        configured_region: env.configured_region.clone(),
    };
    let started = match env.supervisor.start.send(StartMemberScan(member)).await {
        Ok(Ok(started)) => started,
        Ok(Err(e)) => {
            return skip(
                SkipReason::Cancelled,
                &format!("the account's scan was refused: {e}"),
            )
        }
        Err(_) => return skip(SkipReason::Cancelled, "the discovery runtime stopped"),
    };
    env.progress.scanning(&account, started.progress.clone());
    let (reply, answer) = oneshot::channel();
    env.supervisor.await_report.do_send(AwaitReport {
        scan_id: started.scan_id,
        reply,
    });
    tokio::pin!(answer);
    let answer = tokio::select! {
        biased;
        answer = &mut answer => answer,
        _ = env.cancel.cancelled() => {
            env.supervisor.cancel.do_send(CancelScan(started.scan_id));
            answer.await
        }
    };
    // Its report is ours now: the supervisor need not keep it.
    env.supervisor.forget.do_send(ForgetScan(started.scan_id));
    match answer {
        Ok(Ok(report)) => {
            env.progress
                .set(&account, AccountPhase::Finished(report.overall_status()));
            Outcome::Scanned(Box::new(report))
        }
        _ => skip(
            SkipReason::Cancelled,
            "the discovery runtime stopped before the account's report",
        ),
    }
}
