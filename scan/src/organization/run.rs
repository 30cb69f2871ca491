//! One organization scan, from the caller's identity to the report. Runs as a future of
//! the supervisor's context (it opens each account's scan with a message to it), so it
//! never blocks the actor thread.
//!
//! 1. The scan context ([`establish`], as every scan's): SDK configuration, STS, the
//!    caller (`GetCallerIdentity`, the bootstrap budget) and the hub's gate; the caller's
//!    account keys the hub's quotas, so an unresolved caller fails the scan.
//! 2. The listing ([`listing`]), page by page, each page planned ([`select::Planner`])
//!    as it arrives: the first page's accounts start while the next pages are fetched
//!    (the hub's `ListAccounts` quota is low, 1 page a second by default, so waiting for
//!    every page would delay every AssumeRole by the whole listing). A page that fails
//!    is the organization's error; the accounts of the pages before it are still
//!    scanned.
//! 3. Accounts start as the loop's state machine says ([`machine`](super::machine), which
//!    applies [`schedule::next_step`](super::schedule::next_step)); each gets its credentials (the
//!    caller's own, or one gated `AssumeRole` whose answer [`RoleCredentials`] keeps and
//!    refreshes) and then an ordinary supervisor scan with the remaining deadline.
//! 4. Cancellation skips the queued accounts and cancels the running accounts' scans,
//!    whose reports still arrive; the report holds what was collected.
//! 5. Each finished account's report is written to the scan's spool
//!    ([`spool`](super::spool)) on a blocking thread and dropped, so memory follows the
//!    accounts in flight; the report reads them back when it is written.

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
use tollgate_quota::key::AccountId;
use tollgate_quota::{AccountScope, Timestamp};

use crate::organization::credentials::RoleCredentials;
use crate::organization::listing;
use crate::organization::machine::{
    Accounts, Action, Event, Machine, Now, Outcome, WaitFor, CANCEL_SKIP, DEADLINE_SKIP,
};
use crate::organization::progress::{AccountPhase, ProgressBoard};
use crate::organization::report::{
    OrganizationReport, OrganizationSummary, SkipReason, SkippedAccount,
};
use crate::organization::request::OrganizationRequest;
use crate::organization::select::ListedAccount;
use crate::organization::spool::{AccountReports, Spool};
use crate::scan_setup::{establish, MemberScan, ScanContext, SetupError, SupervisorDeps};
use crate::supervisor::messages::{AwaitReport, CancelScan, ForgetScan, StartMemberScan};
use tollgate_collectors::output::{rfc3339, Reason, ReasonKind};
use tollgate_collectors::{AccountClients, SharedClients};
use tollgate_engine::aws::{
    AwsGate, CallContext, CallError, CallErrorKind, CallerIdentity, ScanId,
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
    /// Where finished accounts' reports go.
    spool: Arc<Spool>,
    /// One SDK client per service and region for every member signing with its role's
    /// credentials (`tollgate_collectors::clients`).
    shared_clients: Arc<SharedClients>,
}

/// The report's header as it is learnt; the accounts come from the loop.
struct Assembly {
    scan_id: ScanId,
    partition: String,
    started_at: Timestamp,
    summary: OrganizationSummary,
}

impl Assembly {
    fn new(scan_id: ScanId, request: &OrganizationRequest, started_at: Timestamp) -> Self {
        Assembly {
            scan_id,
            partition: "aws".to_owned(),
            started_at,
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
        }
    }

    fn failed(mut self, kind: ReasonKind, message: String) -> Self {
        self.summary.error = Some(Reason {
            operation: "sts:GetCallerIdentity".to_owned(),
            field: None,
            kind,
            code: None,
            message,
            count: 1,
        });
        self
    }

    fn finish(mut self, accounts: Accounts, deps: &SupervisorDeps) -> OrganizationReport {
        let scanned = AccountReports::from_spooled(accounts.scanned);
        self.summary.skipped = accounts.skipped;
        self.summary
            .skipped
            .sort_by(|a, b| a.account.cmp(&b.account));
        self.summary.listed = accounts.listed;
        self.summary.error = self.summary.error.or(accounts.error);
        self.summary.scanned = scanned.len() as u64;
        self.summary.hub_throttling = deps.telemetry.take(&self.scan_id.to_string());
        OrganizationReport {
            scan_id: self.scan_id.to_string(),
            partition: self.partition,
            started_at: rfc3339(self.started_at),
            finished_at: rfc3339(deps.admission.now()),
            organization: self.summary,
            accounts: scanned,
        }
    }
}

/// The hub's scan context with a resolved caller, or why the scan cannot go on.
async fn open_hub(
    request: &OrganizationRequest,
    deps: &SupervisorDeps,
    scan_id: ScanId,
    cancel: &CancellationToken,
    deadline: Instant,
) -> Result<(ScanContext, String), (ReasonKind, String)> {
    let context = match establish(&request.scan, deps, scan_id, cancel, deadline).await {
        Ok(context) => context,
        Err(SetupError::Cancelled) => {
            let why = "cancelled while resolving the caller's identity";
            return Err((ReasonKind::Cancelled, why.into()));
        }
        Err(e) => return Err((ReasonKind::Failed, e.to_string())),
    };
    let AccountScope::Account(caller) = &context.identity.account else {
        let why = context
            .identity
            .unresolved_reason
            .clone()
            .unwrap_or_default();
        return Err((
            ReasonKind::Failed,
            format!("{why}; an organization scan needs the caller's account (it keys the listing's and every AssumeRole's quotas): check the caller's credentials"),
        ));
    };
    let caller = caller.as_str().to_owned();
    Ok((context, caller))
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
    let mut report = Assembly::new(scan_id, &request, deps.admission.now());
    let (context, caller) = match open_hub(&request, &deps, scan_id, &cancel, deadline).await {
        Ok(hub) => hub,
        Err((kind, message)) => {
            return report
                .failed(kind, message)
                .finish(Accounts::default(), &deps)
        }
    };
    report.partition = context.identity.partition.as_str().to_owned();
    report.summary.caller_account = Some(caller.clone());
    let hub = CallContext {
        scan_id,
        collector: "organization",
        datasets: Vec::new(),
        deadline,
        cancel: cancel.clone(),
    };
    let organizations = listing::client(&context.sdk, &context.configured_region);
    report.summary.management_account =
        listing::management_account(&context.gate, &hub, &organizations).await;
    let first_page: PageFuture =
        Box::pin(listing::Pager::new(context.gate.clone(), hub.clone(), organizations).next());
    let machine = Machine::new(
        request.accounts.clone(),
        request.max_accounts_in_flight,
        progress.clone(),
    );
    let env = Arc::new(Env {
        supervisor,
        request,
        shared_clients: SharedClients::new(&context.sdk),
        sdk: context.sdk,
        sts: context.sts,
        gate: context.gate,
        hub,
        configured_region: context.configured_region,
        partition: context.identity.partition.clone(),
        caller,
        progress,
        cancel,
        deadline,
        spool: Spool::new(),
    });
    let accounts = drive(machine, env, first_page, &deps, scan_id).await;
    report.finish(accounts, &deps)
}

/// The loop's driver: asks the machine, does what it says (start an account's task,
/// wait for what it names), and tells it what happened.
async fn drive(
    mut machine: Machine,
    env: Arc<Env>,
    first_page: PageFuture,
    deps: &SupervisorDeps,
    scan_id: ScanId,
) -> Accounts {
    let (cancel, deadline) = (&env.cancel, env.deadline);
    let mut page = Some(first_page);
    let mut running = FuturesUnordered::new();
    loop {
        let now = Now {
            deadline_passed: monotonic_now() >= deadline,
            cancelled: cancel.is_cancelled(),
        };
        let wait: WaitFor = match machine.next(now) {
            Action::Done => return machine.into_accounts(),
            Action::Start(account) => {
                running.push(scan_account(env.clone(), account));
                continue;
            }
            Action::Wait(wait) => wait,
        };
        if !wait.page {
            page = None;
        }
        let event = tokio::select! {
            Some(outcome) = running.next(), if wait.account => Event::AccountEnded(outcome),
            (next, listed) = async { page.as_mut().expect("a page is being fetched").await }, if wait.page => {
                page = next.map(|pager| Box::pin(pager.next()) as PageFuture);
                Event::Page { listed, more: page.is_some() }
            },
            _ = cancel.cancelled(), if wait.cancel => {
                // The hub's queued admission waiters (AssumeRole) go at once.
                if let Err(e) = deps.admission.cancel_scope(scan_id.scope()).await {
                    tracing::warn!(%scan_id, error = %e, "organization scan cancelled; its queued hub waiters could not be removed");
                }
                Event::Cancelled
            },
            _ = tokio::time::sleep_until(deadline), if wait.deadline => Event::Woke,
        };
        let listing = machine.listed().is_none();
        machine.on(event);
        if let (true, Some(listed)) = (listing, machine.listed()) {
            tracing::info!(%scan_id, listed, "organization listed");
        }
    }
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

/// An account skipped for `reason`, its progress set.
fn skip(env: &Env, account: &str, reason: SkipReason, message: &str) -> Outcome {
    env.progress.set(account, AccountPhase::Skipped(reason));
    Outcome::Skipped(SkippedAccount {
        account: account.to_owned(),
        reason,
        code: None,
        message: message.to_owned(),
    })
}

/// One account: credentials, then its scan to the report.
async fn scan_account(env: Arc<Env>, account: String) -> Outcome {
    env.progress.set(&account, AccountPhase::Assuming);
    let (sdk, role) = match member_sdk(&env, &account).await {
        Ok(member) => member,
        Err(skipped) => return skipped,
    };
    if env.cancel.is_cancelled() {
        return skip(&env, &account, SkipReason::Cancelled, CANCEL_SKIP);
    }
    let left = env.deadline.saturating_duration_since(monotonic_now());
    if left.is_zero() {
        return skip(&env, &account, SkipReason::Deadline, DEADLINE_SKIP);
    }
    let Ok(id) = AccountId::new(&account) else {
        let why = "ListAccounts named an invalid account id";
        return skip(&env, &account, SkipReason::NotInOrganization, why);
    };
    let mut request = env.request.scan.clone();
    request.timeout = left;
    let member = MemberScan {
        request,
        sdk,
        identity: CallerIdentity::resolved(env.partition.clone(), id, None),
        configured_region: env.configured_region.clone(),
        account_clients: role.map(|credentials| AccountClients {
            shared: env.shared_clients.clone(),
            credentials,
        }),
    };
    run_member(&env, &account, member).await
}

/// The member's SDK configuration: the caller's own in its own account, else the member
/// role's credentials (one gated `AssumeRole`, kept and refreshed), which are also
/// returned for the organization's shared clients.
async fn member_sdk(
    env: &Env,
    account: &str,
) -> Result<(aws_config::SdkConfig, Option<SharedCredentialsProvider>), Outcome> {
    if account == env.caller {
        // The caller's own account: its own credentials, no role.
        return Ok((env.sdk.clone(), None));
    }
    let role = env.request.role_for(env.partition.as_str(), account);
    let credentials = RoleCredentials::new(
        env.gate.clone(),
        env.hub.clone(),
        env.sts.clone(),
        env.configured_region.clone(),
        role.clone(),
    );
    if let Err(e) = credentials.fetch().await {
        let skipped = role_skip(account, &role.role_arn, &env.caller, &e);
        env.progress
            .set(account, AccountPhase::Skipped(skipped.reason));
        return Err(Outcome::Skipped(skipped));
    }
    let credentials = SharedCredentialsProvider::new(credentials);
    let sdk = env
        .sdk
        .clone()
        .into_builder()
        .credentials_provider(credentials.clone())
        .build();
    Ok((sdk, Some(credentials)))
}

/// The member's supervisor scan, from its start to its report (cancelled with the
/// organization's scan).
async fn run_member(env: &Env, account: &str, member: MemberScan) -> Outcome {
    let started = match env.supervisor.start.send(StartMemberScan(member)).await {
        Ok(Ok(started)) => started,
        Ok(Err(e)) => {
            let why = format!("the account's scan was refused: {e}");
            return skip(env, account, SkipReason::Cancelled, &why);
        }
        Err(_) => {
            let why = "the discovery runtime stopped";
            return skip(env, account, SkipReason::Cancelled, why);
        }
    };
    env.progress.scanning(account, started.progress.clone());
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
                .set(account, AccountPhase::Finished(report.overall_status()));
            env.progress.finished(&report);
            let spool = env.spool.clone();
            match tokio::task::spawn_blocking(move || spool.write(report)).await {
                Ok(spooled) => Outcome::Scanned(Box::new(spooled)),
                Err(e) => {
                    let why = format!("writing the account's report to the spool stopped: {e}");
                    skip(env, account, SkipReason::Cancelled, &why)
                }
            }
        }
        _ => {
            let why = "the discovery runtime stopped before the account's report";
            skip(env, account, SkipReason::Cancelled, why)
        }
    }
}
