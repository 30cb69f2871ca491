//! `Supervisor`: one per discovery runtime. It opens scans, starts one collector actor per
//! dataset, tracks their progress, assembles the report, and owns cancellation.
//!
//! A scan's life:
//! 1. `StartScan` validates the request, draws a scan id (random, so scans of different
//!    processes sharing one coordinator never share an admission cancellation scope) and
//!    answers at once with the id and progress counters.
//! 2. Setup (SDK configuration, caller identity, the scan's gate) runs as a task of this
//!    actor; then a [`CollectorActor`] starts per dataset with a [`CallContext`] carrying
//!    the scan id, collector, dataset, deadline and cancellation token — so every attempt
//!    is attributed and bounded. A Cloud Control type that needs a parent starts once its
//!    parent type's dataset finished, with that dataset's items ([`parents`]).
//!    Beside them (unless the request says `TagSweep::Skip`) the tagging sweep
//!    ([`tollgate_collectors::tagging`]) lists every region's tagged resources.
//! 3. Each collector sends `DatasetFinished`; when all have (and the sweep has), the
//!    sweep's tags are merged into the items and its `tags-only` entry built; when the
//!    scan asked for
//!    `--metrics`, the activity phase ([`tollgate_collectors::activity`]) reads the items'
//!    CloudWatch series into the reports first; then the report is assembled and
//!    handed to every `AwaitReport` waiter. In fleet mode the coordinator is asked first
//!    which of the scan's keys degraded while it ran ([`tollgate_engine::fleet_degraded`]); when the
//!    scan was eventful, its keys' rates and breakers are observed once more for the
//!    report's `throttling` block.
//!
//! While scans run, every [`SAMPLE_EVERY`] the supervisor looks at the admission
//! runtime's status for the scans that met a throttle, a transient failure or an open
//! breaker since the last look ([`tollgate_engine::throttling`]): how far their keys' rates were cut
//! and whether their breakers opened is not in any attempt event.
//!
//! Memory: a scan's entry lives until `ForgetScan` (the service sends it once the report
//! is stored; [`Discovery::discover`](crate::discovery::Discovery::discover) once it has
//! the report), but what grows with the accounts and regions it touched does not: the
//! collectors (and the SDK clients they built per region) stop with their datasets, and
//! the scan's setup (SDK configuration and credentials, gate) is dropped as the report is
//! assembled. What stays until forgotten is the request, the progress counters (one per
//! dataset) and the report.
//!
//! Cancellation (`CancelScan`) fires the scan's token (in-flight requests abort, queued
//! attempts never dispatch), removes the scan's queued admission waiters with
//! `AdmissionHandle::cancel_scope`, and still delivers what was collected, unfinished
//! datasets marked `cancelled`. A collector that does not stop within [`STOP_GRACE`] of a
//! cancellation or of the deadline is not waited for: its dataset is reported without
//! items, `cancelled` or `failed`, with a reason.

pub mod messages;
pub mod parents;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::fut::wrap_future;
use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::monotonic_now;
use tollgate_quota::Timestamp;

pub use messages::{
    AwaitReport, CancelScan, CountScans, DatasetFinished, ForgetScan, GetProgress, ScanCount,
    ScanStarted, StartMemberScan, StartOrganizationScan, StartScan, UnknownScan,
};

use crate::organization::progress::ProgressBoard;
use crate::organization::{OrganizationHandle, OrganizationRequestError};
use crate::request::{DiscoveryRequest, RequestError};
use crate::scan_setup::{self, ScanSetup, SetupError};
pub use crate::scan_setup::{MemberScan, SupervisorDeps};
use tollgate_collectors::activity::{self, ActivityRun};
use tollgate_collectors::dataset::Dataset;
use tollgate_collectors::output::{
    rfc3339, DatasetReport, DatasetStatus, DiscoveryReport, FleetDegraded, Reason, ReasonKind,
    TAGS_ONLY_DATASET,
};
use tollgate_collectors::pricing::{self, PriceBook, Pricing};
use tollgate_collectors::tagging::{self, RegionSweep, TagSweep, TaggingRun};
use tollgate_collectors::{CollectorActor, CollectorRun, Progress};
use tollgate_engine::aws::{CallContext, ScanId};
use tollgate_engine::fleet_degraded::DegradedNotes;

/// How long collectors get to stop after a cancellation or the deadline.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How often the admission runtime is sampled for scans with throttling news.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// How long one sample (or the final observation) may wait for the runtime's status.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(2);

/// The supervisor actor.
pub struct Supervisor {
    deps: SupervisorDeps,
    scans: HashMap<ScanId, Scan>,
    /// Ids of organization scans still running (scan ids are drawn apart from them).
    organizations: std::collections::HashSet<ScanId>,
    /// A sample of the admission runtime is in flight.
    sampling: bool,
    /// The public price list's reads (`--pricing`), kept for every scan of this
    /// supervisor: an organization's accounts share each region's.
    prices: Arc<PriceBook>,
}

struct Scan {
    request: DiscoveryRequest,
    cancel: CancellationToken,
    deadline: Instant,
    started_at: Timestamp,
    progress: BTreeMap<Dataset, Progress>,
    reports: BTreeMap<Dataset, DatasetReport>,
    /// Datasets whose collector has not started: child types waiting for their parent
    /// type's dataset ([`parents::ready`]).
    waiting: BTreeSet<Dataset>,
    setup: Option<Arc<ScanSetup>>,
    cancelled: bool,
    waiters: Vec<oneshot::Sender<Result<DiscoveryReport, UnknownScan>>>,
    /// Every dataset is in; the report is being assembled (no dataset report changes).
    finishing: bool,
    /// Where the `--metrics` phase is.
    activity: ActivityPhase,
    /// Where the tagging sweep is.
    tagging: TaggingPhase,
    /// The sweep's `tags-only` entry, once merged (or given up).
    tags_only: Option<DatasetReport>,
    finished: Option<DiscoveryReport>,
}

/// The tagging sweep of a scan, beside its datasets.
#[derive(Debug)]
enum TaggingPhase {
    /// Not started: not asked for, or setup failed. Nothing to wait for.
    Off,
    /// Listing; the report waits for it.
    Running,
    /// Listed; merged into the reports once every dataset is in.
    Swept(Vec<RegionSweep>),
    /// Merged (or given up): `tags_only` holds its entry.
    Merged,
}

/// The `--metrics` phase of a scan, between its datasets and its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ActivityPhase {
    /// Not started (or not asked for: then it never starts).
    Pending,
    /// Reading series; the report waits for it.
    Running,
    /// Done, or skipped (cancelled, no setup).
    Done,
}

impl Scan {
    /// Nothing may change the scan's datasets any more.
    fn closed(&self) -> bool {
        self.finishing || self.finished.is_some()
    }
}

impl Supervisor {
    /// A supervisor over `deps`.
    pub fn new(deps: SupervisorDeps) -> Self {
        Supervisor {
            deps,
            scans: HashMap::new(),
            organizations: std::collections::HashSet::new(),
            sampling: false,
            prices: Arc::default(),
        }
    }

    fn new_scan_id(&self) -> ScanId {
        loop {
            let id = ScanId(fastrand::u64(1..));
            if !self.scans.contains_key(&id) && !self.organizations.contains(&id) {
                return id;
            }
        }
    }

    /// Setup finished: start the collectors, or fail every dataset.
    fn begin(
        &mut self,
        scan_id: ScanId,
        setup: Result<ScanSetup, SetupError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return;
        };
        if scan.closed() {
            return;
        }
        let setup = match setup {
            Ok(setup) => Arc::new(setup),
            Err(e) => {
                let status = if scan.cancelled {
                    DatasetStatus::Cancelled
                } else {
                    DatasetStatus::Failed
                };
                for dataset in scan.progress.keys() {
                    scan.reports
                        .insert(*dataset, unfinished(status, &e.to_string()));
                }
                self.finish_if_done(scan_id, ctx);
                return;
            }
        };
        scan.setup = Some(setup.clone());
        if scan.cancelled {
            for dataset in scan.progress.keys() {
                scan.reports.insert(
                    *dataset,
                    unfinished(
                        DatasetStatus::Cancelled,
                        "cancelled before collection started",
                    ),
                );
            }
            self.finish_if_done(scan_id, ctx);
            return;
        }
        scan.waiting = scan.progress.keys().copied().collect();
        self.start_ready(scan_id, ctx);
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return;
        };
        if scan.request.tags != TagSweep::Skip {
            scan.tagging = TaggingPhase::Running;
            let run = TaggingRun {
                gate: setup.gate.clone(),
                sdk: setup.sdk.clone(),
                scan_id,
                deadline: scan.deadline,
                cancel: scan.cancel.clone(),
                regions: setup.regions.clone(),
                account_clients: setup.account_clients.clone(),
            };
            let swept = async move { tagging::sweep(&run).await };
            ctx.spawn(wrap_future::<_, Self>(swept).map(move |sweeps, act, ctx| {
                if let Some(scan) = act.scans.get_mut(&scan_id) {
                    if matches!(scan.tagging, TaggingPhase::Running) {
                        scan.tagging = TaggingPhase::Swept(sweeps);
                    }
                }
                act.finish_if_done(scan_id, ctx);
            }));
        }
    }

    /// Start the collector of every waiting dataset that can start now: all but the
    /// child types whose parent type has not finished ([`parents::ready`]).
    fn start_ready(&mut self, scan_id: ScanId, ctx: &mut Context<Self>) {
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return;
        };
        let Some(setup) = scan.setup.clone() else {
            return;
        };
        let in_scan: BTreeSet<Dataset> = scan.progress.keys().copied().collect();
        for (dataset, parent_items) in parents::ready(&mut scan.waiting, &in_scan, &scan.reports) {
            let call_ctx = CallContext {
                scan_id,
                collector: dataset.collector(),
                datasets: vec![dataset.name().to_string()],
                deadline: scan.deadline,
                cancel: scan.cancel.clone(),
            };
            let mut run = CollectorRun::new(
                setup.gate.clone(),
                call_ctx,
                setup.regions.clone(),
                setup.sdk.clone(),
                setup.force_path_style,
                scan.progress[&dataset].clone(),
            )
            .with_cloudcontrol_charges(scan.request.cloudcontrol)
            .with_cloudcontrol_details(scan.request.details)
            .with_pricing(
                (scan.request.pricing.as_deref()).map(|url| Pricing::new(url, self.prices.clone())),
            )
            .with_account_clients(setup.account_clients.clone());
            if let Some(items) = parent_items {
                run = run.with_parents(items);
            }
            CollectorActor::new(scan_id, dataset, run, ctx.address().recipient()).start();
        }
    }

    /// After a cancellation or the deadline: give collectors [`STOP_GRACE`], then report
    /// whatever has not arrived.
    fn stop_later(&mut self, scan_id: ScanId, ctx: &mut Context<Self>, why: DatasetStatus) {
        ctx.run_later(STOP_GRACE, move |act, ctx| {
            let Some(scan) = act.scans.get_mut(&scan_id) else {
                return;
            };
            if scan.closed() {
                return;
            }
            let message = match why {
                DatasetStatus::Cancelled => {
                    "the collector did not stop within 5 s of the cancellation"
                }
                _ => "the collector did not finish by the scan's deadline",
            };
            for dataset in scan.progress.keys() {
                scan.reports
                    .entry(*dataset)
                    .or_insert_with(|| unfinished(why, message));
            }
            if matches!(scan.tagging, TaggingPhase::Running) {
                scan.tagging = TaggingPhase::Merged;
                let message = message.replace("the collector", "the tagging sweep");
                scan.tags_only = Some(unfinished(why, &message));
            }
            act.finish_if_done(scan_id, ctx);
        });
    }

    /// Every dataset is in: close the scan, ask (in fleet mode) which of its keys
    /// degraded, then assemble the report.
    fn finish_if_done(&mut self, scan_id: ScanId, ctx: &mut Context<Self>) {
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return;
        };
        if scan.closed() || scan.reports.len() < scan.progress.len() {
            return;
        }
        match std::mem::replace(&mut scan.tagging, TaggingPhase::Merged) {
            TaggingPhase::Running => {
                scan.tagging = TaggingPhase::Running;
                return;
            }
            TaggingPhase::Swept(sweeps) => {
                let account = scan.setup.as_ref().and_then(|s| s.account.clone());
                let only = (scan.request.tags == TagSweep::SelectedTypes)
                    .then_some(&scan.request.datasets[..]);
                let entry = tagging::apply(sweeps, &mut scan.reports, account.as_deref(), only);
                scan.tags_only = Some(entry);
            }
            TaggingPhase::Off | TaggingPhase::Merged => {}
        }
        match scan.activity {
            ActivityPhase::Running => return,
            ActivityPhase::Pending
                if scan.request.metrics && !scan.cancelled && monotonic_now() < scan.deadline =>
            {
                if let Some(setup) = scan.setup.clone() {
                    scan.activity = ActivityPhase::Running;
                    let run = ActivityRun {
                        gate: setup.gate.clone(),
                        sdk: setup.sdk.clone(),
                        scan_id,
                        deadline: scan.deadline,
                        cancel: scan.cancel.clone(),
                        now: scan.started_at,
                    };
                    let reports = scan.reports.clone();
                    let read = async move { activity::annotate(&run, reports).await };
                    ctx.spawn(wrap_future::<_, Self>(read).map(move |reports, act, ctx| {
                        if let Some(scan) = act.scans.get_mut(&scan_id) {
                            scan.activity = ActivityPhase::Done;
                            if !scan.closed() {
                                scan.reports = reports;
                            }
                        }
                        act.finish_if_done(scan_id, ctx);
                    }));
                    return;
                }
                scan.activity = ActivityPhase::Done;
            }
            _ => {}
        }
        scan.finishing = true;
        // Nothing of this scan may wait for admission any longer.
        scan.cancel.cancel();
        let finished_at = self.deps.admission.now();
        let id = scan_id.to_string();
        let used = self.deps.telemetry.keys(&id);
        let fleet = self.deps.fleet_notes != DegradedNotes::Skip && !used.is_empty();
        let eventful = self.deps.telemetry.is_eventful(&id);
        if !fleet && !eventful {
            self.complete(scan_id, finished_at, Vec::new());
            return;
        }
        let admission = self.deps.admission.clone();
        let telemetry = self.deps.telemetry.clone();
        let started_at = scan.started_at;
        let ask = async move {
            if eventful {
                observe(&admission, &telemetry, &[id]).await;
            }
            match fleet {
                true => {
                    tollgate_engine::fleet_degraded::ask(admission, used, started_at, finished_at)
                        .await
                }
                false => Vec::new(),
            }
        };
        ctx.spawn(wrap_future::<_, Self>(ask).map(move |degraded, act, _| {
            act.complete(scan_id, finished_at, degraded);
        }));
    }

    /// Assemble the report and hand it to every waiter.
    fn complete(&mut self, scan_id: ScanId, finished_at: Timestamp, degraded: Vec<FleetDegraded>) {
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return;
        };
        if scan.finished.is_some() {
            return;
        }
        if scan.request.pricing.is_some() {
            let account = scan.setup.as_ref().and_then(|s| s.account.clone());
            pricing::apply::gateways(&mut scan.reports, account.as_deref());
        }
        let setup = scan.setup.as_deref();
        let report = DiscoveryReport {
            scan_id: scan_id.to_string(),
            partition: setup
                .map(|s| s.partition.clone())
                .unwrap_or_else(|| "aws".to_string()),
            account: setup.and_then(|s| s.account.clone()),
            identity_note: setup.and_then(|s| s.identity_note.clone()),
            regions_reason: setup.and_then(|s| s.regions_reason.clone()),
            regions_source: setup.and_then(|s| s.regions_source),
            regions: setup
                .map(|s| s.regions.clone())
                .unwrap_or_else(|| scan.request.regions.clone()),
            started_at: rfc3339(scan.started_at),
            finished_at: rfc3339(finished_at),
            datasets: scan
                .reports
                .iter()
                .map(|(d, r)| (d.name().to_string(), r.clone()))
                .chain(
                    scan.tags_only
                        .iter()
                        .map(|r| (TAGS_ONLY_DATASET.to_string(), r.clone())),
                )
                .collect(),
            throttling: self.deps.telemetry.take(&scan_id.to_string()),
            fleet_degraded: degraded,
        };
        for waiter in scan.waiters.drain(..) {
            let _ = waiter.send(Ok(report.clone()));
        }
        scan.finished = Some(report);
        // The report holds what it needs of the setup: the SDK configuration (credential
        // cache included), the gate and an unresolved scan's isolated admission go now,
        // not when the scan is forgotten (which an embedder may never ask for).
        scan.setup = None;
    }
}

/// A dataset that never reported: no items, one reason.
fn unfinished(status: DatasetStatus, message: &str) -> DatasetReport {
    DatasetReport {
        status,
        reasons: vec![Reason {
            operation: "scan".to_string(),
            field: None,
            kind: ReasonKind::of_unfinished(status),
            code: None,
            message: message.to_string(),
            count: 1,
        }],
        items: Vec::new(),
        coverage: Vec::new(),
    }
}

/// Observe the admission runtime for `scans` (their keys' rates, their breakers); a
/// runtime that does not answer in [`SAMPLE_TIMEOUT`] leaves the tallies as they are.
async fn observe(
    admission: &tollgate_actors::AdmissionHandle,
    telemetry: &tollgate_engine::throttling::ScanTelemetry,
    scans: &[String],
) {
    match tokio::time::timeout(SAMPLE_TIMEOUT, admission.coordination()).await {
        Ok(Ok(status)) => {
            for scan in scans {
                telemetry.observe(scan, &status.keys, &status.breakers);
            }
        }
        Ok(Err(e)) => tracing::debug!(error = %e, "no admission status for the throttling report"),
        Err(_) => tracing::debug!("no admission status for the throttling report in time"),
    }
}

impl Supervisor {
    /// One sampling tick: look at the runtime for the scans with throttling news.
    fn sample(&mut self, ctx: &mut Context<Self>) {
        if self.sampling {
            return;
        }
        let mut hot = self.deps.telemetry.hot_scans();
        // Events of a scan already reported (a leaked attempt) ask for nothing.
        hot.retain(|id| {
            self.scans
                .iter()
                .any(|(scan_id, scan)| scan.finished.is_none() && scan_id.to_string() == *id)
        });
        if hot.is_empty() {
            return;
        }
        self.sampling = true;
        let admission = self.deps.admission.clone();
        let telemetry = self.deps.telemetry.clone();
        let look = async move { observe(&admission, &telemetry, &hot).await };
        ctx.spawn(wrap_future::<_, Self>(look).map(|(), act, _| act.sampling = false));
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SAMPLE_EVERY, |act, ctx| act.sample(ctx));
    }
}

impl Supervisor {
    /// Open a validated scan: a plain one (`member: None`), or one member account of an
    /// organization scan.
    fn open(
        &mut self,
        request: DiscoveryRequest,
        member: Option<MemberScan>,
        ctx: &mut Context<Self>,
    ) -> ScanStarted {
        let scan_id = self.new_scan_id();
        let progress: BTreeMap<Dataset, Progress> = request
            .datasets
            .iter()
            .map(|d| (*d, Progress::new(*d)))
            .collect();
        let cancel = CancellationToken::new();
        let deadline = monotonic_now() + request.timeout;
        self.scans.insert(
            scan_id,
            Scan {
                request: request.clone(),
                cancel: cancel.clone(),
                deadline,
                started_at: self.deps.admission.now(),
                progress: progress.clone(),
                reports: BTreeMap::new(),
                waiting: BTreeSet::new(),
                setup: None,
                cancelled: false,
                waiters: Vec::new(),
                finishing: false,
                activity: ActivityPhase::Pending,
                tagging: TaggingPhase::Off,
                tags_only: None,
                finished: None,
            },
        );
        let deps = self.deps.clone();
        let setup = {
            let request = request.clone();
            async move {
                match member {
                    None => scan_setup::prepare(request, deps, scan_id, cancel).await,
                    Some(member) => scan_setup::prepare_member(member, deps, scan_id, cancel).await,
                }
            }
        };
        ctx.spawn(wrap_future::<_, Self>(setup).map(move |setup, act, ctx| {
            act.begin(scan_id, setup, ctx);
        }));
        ctx.run_later(request.timeout, move |act, ctx| {
            if act
                .scans
                .get(&scan_id)
                .is_some_and(|s| s.finished.is_none())
            {
                act.stop_later(scan_id, ctx, DatasetStatus::Failed);
            }
        });
        tracing::info!(%scan_id, datasets = ?request.datasets, regions = ?request.regions, "scan opened");
        ScanStarted {
            scan_id,
            progress: progress.into_values().collect(),
        }
    }
}

impl Handler<StartScan> for Supervisor {
    type Result = Result<ScanStarted, RequestError>;

    fn handle(&mut self, msg: StartScan, ctx: &mut Context<Self>) -> Self::Result {
        let request = msg.0.validate()?;
        Ok(self.open(request, None, ctx))
    }
}

impl Handler<StartMemberScan> for Supervisor {
    type Result = Result<ScanStarted, RequestError>;

    fn handle(&mut self, msg: StartMemberScan, ctx: &mut Context<Self>) -> Self::Result {
        let mut member = msg.0;
        member.request = member.request.validate()?;
        Ok(self.open(member.request.clone(), Some(member), ctx))
    }
}

impl Handler<StartOrganizationScan> for Supervisor {
    type Result = Result<OrganizationHandle, OrganizationRequestError>;

    fn handle(&mut self, msg: StartOrganizationScan, ctx: &mut Context<Self>) -> Self::Result {
        let request = msg.0.validate()?;
        let scan_id = self.new_scan_id();
        self.organizations.insert(scan_id);
        let progress = ProgressBoard::default();
        let cancel = CancellationToken::new();
        let (report_tx, report) = tokio::sync::watch::channel(None);
        let me = ctx.address();
        let link = crate::organization::run::SupervisorLink {
            start: me.clone().recipient(),
            await_report: me.clone().recipient(),
            cancel: me.clone().recipient(),
            forget: me.recipient(),
        };
        let run = crate::organization::run::run(
            link,
            self.deps.clone(),
            request,
            scan_id,
            progress.clone(),
            cancel.clone(),
        );
        ctx.spawn(wrap_future::<_, Self>(run).map(move |report, act, _| {
            act.organizations.remove(&scan_id);
            let _ = report_tx.send(Some(Arc::new(report)));
        }));
        tracing::info!(%scan_id, "organization scan opened");
        Ok(OrganizationHandle {
            scan_id,
            progress,
            cancel,
            report,
        })
    }
}

impl Handler<CancelScan> for Supervisor {
    type Result = bool;

    fn handle(&mut self, msg: CancelScan, ctx: &mut Context<Self>) -> bool {
        let scan_id = msg.0;
        let Some(scan) = self.scans.get_mut(&scan_id) else {
            return false;
        };
        if scan.closed() || scan.cancelled {
            return false;
        }
        scan.cancelled = true;
        scan.cancel.cancel();
        let admission = self.deps.admission.clone();
        ctx.spawn(wrap_future::<_, Self>(async move {
            match admission.cancel_scope(scan_id.scope()).await {
                Ok(removed) => {
                    tracing::info!(%scan_id, removed, "scan cancelled; queued admission waiters removed")
                }
                // Its waiters still end: each races the scan's cancellation token.
                Err(e) => {
                    tracing::warn!(%scan_id, error = %e, "scan cancelled; its queued admission waiters could not be removed")
                }
            }
        }));
        self.stop_later(scan_id, ctx, DatasetStatus::Cancelled);
        true
    }
}

impl Handler<GetProgress> for Supervisor {
    type Result = Option<Vec<tollgate_collectors::DatasetProgress>>;

    fn handle(&mut self, msg: GetProgress, _: &mut Context<Self>) -> Self::Result {
        self.scans
            .get(&msg.0)
            .map(|s| s.progress.values().map(Progress::snapshot).collect())
    }
}

impl Handler<AwaitReport> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: AwaitReport, _: &mut Context<Self>) {
        match self.scans.get_mut(&msg.scan_id) {
            None => {
                let _ = msg.reply.send(Err(UnknownScan(msg.scan_id)));
            }
            Some(scan) => match &scan.finished {
                Some(report) => {
                    let _ = msg.reply.send(Ok(report.clone()));
                }
                None => scan.waiters.push(msg.reply),
            },
        }
    }
}

impl Handler<ForgetScan> for Supervisor {
    type Result = MessageResult<ForgetScan>;

    fn handle(&mut self, msg: ForgetScan, _: &mut Context<Self>) -> Self::Result {
        let finished = self.scans.get(&msg.0).is_some_and(|s| s.finished.is_some());
        if finished {
            self.scans.remove(&msg.0);
        }
        MessageResult(finished)
    }
}

impl Handler<CountScans> for Supervisor {
    type Result = MessageResult<CountScans>;

    fn handle(&mut self, _: CountScans, _: &mut Context<Self>) -> Self::Result {
        MessageResult(ScanCount {
            scans: self.scans.len(),
            holding_setup: self.scans.values().filter(|s| s.setup.is_some()).count(),
        })
    }
}

impl Handler<DatasetFinished> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: DatasetFinished, ctx: &mut Context<Self>) {
        let Some(scan) = self.scans.get_mut(&msg.scan_id) else {
            return;
        };
        if scan.closed() {
            return;
        }
        let mut report = msg.report;
        // A dataset that finished complete before the cancellation took effect stays
        // complete; any other is what the cancellation left of it.
        if scan.cancelled && report.status != DatasetStatus::Complete {
            report.status = DatasetStatus::Cancelled;
        }
        scan.reports.insert(msg.dataset, report);
        self.start_ready(msg.scan_id, ctx);
        self.finish_if_done(msg.scan_id, ctx);
    }
}
