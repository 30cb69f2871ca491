//! `tollgate discover`: run one scan on the engine's admission, show progress per dataset,
//! write the JSON report, print a summary table, and exit 0 complete / 2 partial /
//! 130 cancelled (Ctrl-C) / 1 error (including a failed dataset).
//!
//! Progress goes to stderr: live bars (indicatif) on a terminal, plain lines otherwise
//! (CI logs, pipes). The report goes to `--output FILE` or stdout, so
//! `tollgate discover | jq` works while the bars draw on the terminal.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tollgate_collectors::cloudcontrol::Details;
use tollgate_collectors::output::CoverageSummary;
use tollgate_collectors::output::{Reason, ReasonKind, RegionsSource};
use tollgate_collectors::DatasetProgress;
use tollgate_collectors::{Dataset, DatasetStatus, DiscoveryReport};
use tollgate_engine::aws::check_credentials;
use tollgate_engine::aws::telemetry::{FileTelemetry, TelemetrySink};
use tollgate_engine::{Engine, EngineConfig};
use tollgate_scan::request::{AssumeRole, RegionSource, RequestError, TagSweep, FALLBACK_REGION};
use tollgate_scan::{DiscoveryRequest, EngineDiscovery, ScanHandle};
use tollgate_service::parse_duration;

/// Exit code of a scan whose datasets are all complete.
const EXIT_COMPLETE: u8 = 0;
/// Exit code of an error, or of a scan with a failed dataset.
const EXIT_ERROR: u8 = 1;
/// Exit code of a scan with a partial dataset.
const EXIT_PARTIAL: u8 = 2;
/// Exit code after Ctrl-C (128 + SIGINT).
pub(super) const EXIT_CANCELLED: u8 = 130;

/// How often progress is redrawn.
pub(super) const TICK: Duration = Duration::from_millis(100);
/// How often plain (non-terminal) progress lines are printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// `tollgate discover` flags.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("role_source").args(["role_arn", "organization"])))]
pub struct DiscoverArgs {
    /// Regions to scan, comma-separated (default: the AWS configuration's region, else
    /// us-east-1); `all`: every region enabled for the account (Account Management
    /// ListRegions, per account), else --regions-fallback.
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions: Vec<String>,
    /// With `--regions all`: the regions scanned where ListRegions is denied or
    /// unavailable (default: the configured region); the report says why.
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions_fallback: Vec<String>,
    /// Resource types to collect, comma-separated: CloudFormation type names with `*`
    /// globs (`AWS::EC2::*`, `AWS::*`) or the dataset aliases s3-buckets,
    /// lambda-functions, dynamodb-tables, kms-keys (default: the default types; `tollgate
    /// types` lists them). `--datasets` is the same flag. With a selection, the tagging
    /// sweep's tags-only items are limited to the selected types.
    #[arg(long, alias = "datasets", value_delimiter = ',', value_name = "TYPE")]
    pub types: Vec<String>,
    /// Send every AWS request to this endpoint (an emulator such as moto); S3 uses
    /// path-style addressing.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// AWS profile (default: the default credential chain).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Scan another account: assume this IAM role (STS AssumeRole, signed by the
    /// profile's or the default chain's credentials).
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// The external id the role's trust policy requires (--role-arn's, or every member
    /// role's with --organization).
    #[arg(long, value_name = "ID", requires = "role_source")]
    pub external_id: Option<String>,
    /// The role session name (default: tollgate).
    #[arg(long, value_name = "NAME", requires = "role_source")]
    pub session_name: Option<String>,
    #[command(flatten)]
    pub organization: OrganizationFlags,
    /// Write the JSON report here instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also read each Lambda function's, DynamoDB table's and S3 bucket's CloudWatch
    /// activity over the last 14 complete UTC days into its item's `activity`
    /// (GetMetricData: a paid API, billed per metric requested; needs
    /// cloudwatch:GetMetricData).
    #[arg(long)]
    pub metrics: bool,
    /// Skip the tagging sweep (Resource Groups Tagging API GetResources per region, on
    /// by default; needs tag:GetResources): items keep `tags: {}` and nothing is
    /// reported `tags-only`.
    #[arg(long)]
    pub no_tags: bool,
    /// Cloud Control types: read every item whose listing returned only its primary
    /// identifier in full (GetResource per item, charged to cloudcontrol:GetResource and
    /// one token of each of the type's read operations: `tollgate types --json`
    /// read_charges; needs cloudformation:GetResource and those permissions). Off by
    /// default.
    #[arg(long)]
    pub details: bool,
    /// Price transit gateway attachments, and gateways as their sum, from AWS's public
    /// price list: one unauthenticated read per region (no account quota), 5 s timeout;
    /// a price it cannot read is null with a reason. Off by default.
    #[arg(long)]
    pub pricing: bool,
    /// The price list's base URL (implies --pricing; default
    /// https://pricing.us-east-1.amazonaws.com).
    #[arg(long, value_name = "URL")]
    pub pricing_url: Option<String>,
    /// Ask Resource Explorer first (Search through the default view, where an index
    /// exists) which types and regions hold resources, and load only those datasets;
    /// types it does not index are swept as usual; without an index, says so and scans
    /// normally (docs/discovery.md, "Catalog").
    #[arg(long, conflicts_with = "organization")]
    pub catalog: bool,
    #[command(flatten)]
    pub scan: ScanFlags,
}

/// `--pricing` / `--pricing-url`: the price list's base URL, or no pricing.
pub(super) fn pricing(on: bool, url: Option<String>) -> Option<String> {
    match (on, url) {
        (_, Some(url)) => Some(url),
        (true, None) => Some(tollgate_scan::request::DEFAULT_PRICING_URL.to_string()),
        (false, None) => None,
    }
}

/// The Cloud Control sweep's `--details` setting.
pub(super) fn details(flag: bool) -> Details {
    match flag {
        true => Details::Read,
        false => Details::Listed,
    }
}

/// The organization flags of `tollgate discover`.
#[derive(Debug, clap::Args)]
pub struct OrganizationFlags {
    /// Scan every ACTIVE member account of the caller's organization (the caller must be
    /// the management account or a delegated administrator): Organizations ListAccounts,
    /// then STS AssumeRole into each member's --role-name; the caller's own account with
    /// its own credentials.
    #[arg(long)]
    pub organization: bool,
    /// With --organization: only these accounts (comma-separated ids).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ID",
        requires = "organization"
    )]
    pub accounts: Vec<String>,
    /// With --organization: never these accounts (comma-separated ids; the caller's
    /// own included).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ID",
        requires = "organization"
    )]
    pub exclude_accounts: Vec<String>,
    /// With --organization: the role assumed in each member account.
    #[arg(long, value_name = "NAME", requires = "organization")]
    pub role_name: Option<String>,
    /// With --organization: accounts scanned at once (default 8).
    #[arg(long, value_name = "N", requires = "organization")]
    pub max_accounts_in_flight: Option<std::num::NonZeroUsize>,
}

/// The flags `discover` and `demo` share.
#[derive(Debug, clap::Args)]
pub struct ScanFlags {
    /// Deadline for the whole scan: 90s, 5m, 1h, 1500ms, 2d, or plain seconds (at most
    /// 168h).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Write one JSON line per admission or physical attempt here.
    #[arg(long, value_name = "FILE")]
    pub telemetry: Option<PathBuf>,
    /// Admission directory (default: TOLLGATE_ADMISSION_DIR, else the user cache).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Also store the scan in the inventory (docs/inventory.md): `sqlite:PATH`, a file
    /// path, or `postgres://USER@HOST/DB`; `--store` alone: the SQLite file
    /// $XDG_DATA_HOME/tollgate/inventory.sqlite. TOLLGATE_STORE does the same. A store
    /// that cannot be written exits 1, the report still written with its `store` field.
    #[arg(
        long,
        value_name = "URL",
        num_args = 0..=1,
        default_missing_value = "",
        env = "TOLLGATE_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
}

/// What `discover` and `demo` set up before a scan: the validated configuration (its
/// override warnings printed), the telemetry file, and the runtime the scan runs on.
pub(super) struct ScanEnv {
    pub config: EngineConfig,
    pub telemetry: Option<Arc<dyn TelemetrySink>>,
    pub rt: tokio::runtime::Runtime,
}

impl ScanEnv {
    pub(super) fn new(flags: &ScanFlags) -> anyhow::Result<ScanEnv> {
        // A scan coordinates (first, or by failover): it runs in fleet mode when
        // TOLLGATE_FLEET_TABLE is set.
        let config = EngineConfig::from_env()?
            .with_admission_dir(flags.dir.clone())
            .with_fleet(tollgate_fleet::spec_from_env()?);
        for warning in config.policies.warnings() {
            eprintln!("tollgate: warning: {warning}");
        }
        let telemetry: Option<Arc<dyn TelemetrySink>> = match flags.telemetry.as_deref() {
            Some(path) => Some(Arc::new(FileTelemetry::create(path).with_context(
                || format!("creating the telemetry file {}", path.display()),
            )?)),
            None => None,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(ScanEnv {
            config,
            telemetry,
            rt,
        })
    }
}

/// `--regions` and `--regions-fallback` as a request's regions and their source.
pub(super) fn region_flags(
    regions: Vec<String>,
    fallback: Vec<String>,
) -> anyhow::Result<(Vec<String>, RegionSource)> {
    if regions.iter().any(|r| r == "all") {
        if regions.len() > 1 {
            anyhow::bail!("--regions all cannot be combined with other regions");
        }
        return Ok((Vec::new(), RegionSource::Enabled { fallback }));
    }
    if !fallback.is_empty() {
        anyhow::bail!("--regions-fallback needs --regions all");
    }
    Ok((regions, RegionSource::Listed))
}

/// The coverage summary: entries by status, then each gap (at most
/// [`CoverageSummary::MAX_GAPS`]) with its reason.
pub(super) fn coverage_lines<'a>(
    err: &mut impl Write,
    entries: impl IntoIterator<Item = &'a tollgate_collectors::output::Coverage>,
) -> std::io::Result<()> {
    coverage_summary_lines(err, &CoverageSummary::of(entries))
}

/// The coverage line and its gaps, of a summary made already (an organization's, merged
/// from its accounts' digests).
pub(super) fn coverage_summary_lines(
    err: &mut impl Write,
    summary: &CoverageSummary,
) -> std::io::Result<()> {
    writeln!(
        err,
        "coverage (type × account × region): {}",
        summary.counts_line()
    )?;
    for gap in &summary.gaps {
        writeln!(
            err,
            "  {} {} in {} {}: {}",
            gap.status.as_str(),
            gap.resource_type,
            gap.account.as_deref().unwrap_or("unresolved"),
            gap.region,
            gap.reason.as_deref().unwrap_or("-")
        )?;
    }
    if summary.gaps_left_out > 0 {
        writeln!(
            err,
            "  ... and {} more (see the report's coverage)",
            summary.gaps_left_out
        )?;
    }
    Ok(())
}

/// The datasets `--types` selects (empty: the defaults).
pub(super) fn select_types(types: &[String]) -> anyhow::Result<Vec<Dataset>> {
    if types.is_empty() {
        return Ok(Vec::new());
    }
    Ok(tollgate_collectors::dataset::select(types)?)
}

/// The tagging sweep a scan runs: none with `--no-tags`; with `--types`, tags-only
/// items of the selected types alone.
pub(super) fn tag_sweep(no_tags: bool, types: &[String]) -> TagSweep {
    match (no_tags, types.is_empty()) {
        (true, _) => TagSweep::Skip,
        (false, false) => TagSweep::SelectedTypes,
        (false, true) => TagSweep::Sweep,
    }
}

/// `tollgate discover` without `--organization` (mod.rs sends that to `discover_org`).
pub fn run(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    let ScanEnv {
        config,
        telemetry,
        rt,
    } = ScanEnv::new(&args.scan)?;
    let (regions, region_source) = region_flags(args.regions, args.regions_fallback)?;
    let request = DiscoveryRequest {
        region_source,
        regions,
        datasets: select_types(&args.types)?,
        endpoint_url: args.endpoint_url,
        profile: args.profile,
        timeout: args.scan.timeout,
        credentials: None,
        role: args.role_arn.map(|role_arn| AssumeRole {
            role_arn,
            external_id: args.external_id,
            session_name: args.session_name,
        }),
        metrics: args.metrics,
        tags: tag_sweep(args.no_tags, &args.types),
        cloudcontrol: tollgate_collectors::cloudcontrol::Charges::from_env(),
        details: details(args.details),
        pricing: pricing(args.pricing, args.pricing_url),
    }
    .validate()
    .map_err(|e| match e {
        RequestError::BadRole(role) => {
            anyhow::anyhow!("--{}: {role}", role.field().replace('_', "-"))
        }
        other => other.into(),
    })?;
    let breakers = tollgate_engine::breakers_from_env()?;
    rt.block_on(async move {
        preflight(&request).await?;
        let engine = Engine::open(config)?.with_breakers(breakers);
        let report_to = match &args.output {
            Some(path) => ReportTo::File(path),
            None => ReportTo::Stdout,
        };
        let store = args.scan.store.as_deref();
        let request = match args.catalog {
            true => super::discover_catalog::narrow(&engine, request, telemetry.clone()).await?,
            false => Some(request),
        };
        let Some(request) = request else {
            engine.close().await?;
            return Ok(ExitCode::from(EXIT_COMPLETE));
        };
        let outcome = run_scan(&engine, request, report_to, telemetry, store).await;
        engine.close().await?;
        outcome
    })
}

/// Before any scan output: credentials (a scan without them only fails every call; the
/// error says what was tried and how to fix it, and the command exits 1), and the one
/// notice of a region fallback.
pub(super) async fn preflight(request: &DiscoveryRequest) -> anyhow::Result<()> {
    let check = check_credentials(request.credentials_source()).await?;
    if request.regions.is_empty()
        && request.region_source == RegionSource::Listed
        && check.region.is_none()
    {
        eprintln!(
            "tollgate: no region configured (--regions, AWS_REGION or the profile's region); \
             scanning {FALLBACK_REGION}"
        );
    }
    Ok(())
}

/// Where the JSON report goes.
pub(crate) enum ReportTo<'a> {
    Stdout,
    File(&'a std::path::Path),
    /// Not written (`tollgate demo` without `--output`: the summary is the point).
    Nowhere,
}

/// One scan with progress display, report, summary and exit code: `tollgate discover`'s
/// path, shared with `tollgate demo`.
pub(crate) async fn run_scan(
    engine: &Engine,
    request: DiscoveryRequest,
    report_to: ReportTo<'_>,
    telemetry: Option<Arc<dyn TelemetrySink>>,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    // One SIGINT listener for the whole scan, made before the scan starts: a fresh
    // `ctrl_c()` per loop turn only listens while it is being polled, and a Ctrl-C that
    // arrived between two turns (a progress tick) was lost.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("installing the SIGINT handler")?;
    let discovery = engine.discovery(telemetry);
    let handle = discovery.start_scan(request).await?;
    let display = ProgressDisplay::new(&handle);
    let mut user_cancelled = false;
    let report = {
        let report = handle.report();
        tokio::pin!(report);
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                report = &mut report => break report?,
                _ = interrupt.recv() => {
                    if user_cancelled {
                        // The second Ctrl-C: quit at once.
                        std::process::exit(i32::from(EXIT_CANCELLED));
                    }
                    user_cancelled = true;
                    display.note("cancelling: stopping queued and in-flight requests (Ctrl-C again to quit at once)");
                    handle.cancel().await?;
                }
                _ = tick.tick() => display.update(&handle.progress()),
            }
        }
    };
    display.update(&handle.progress());
    display.finish();
    discovery.shutdown();

    let target = match store {
        Some(url) => StoreTarget::Whole(url),
        None => StoreTarget::Nowhere,
    };
    let stored = finish_report(&report, report_to, target).await?;
    print_summary(&report)?;
    let code = exit_code(&report, user_cancelled);
    Ok(ExitCode::from(exit_code_with_store(code, stored.as_ref())))
}

/// 130 after Ctrl-C or with a cancelled dataset; else 1 for a failed dataset, 2 for a
/// partial one, 0 when all are complete.
fn exit_code(report: &DiscoveryReport, user_cancelled: bool) -> u8 {
    status_exit_code(report.overall_status(), user_cancelled)
}

/// [`exit_code`] for a scan's worst status.
pub(super) fn status_exit_code(status: DatasetStatus, user_cancelled: bool) -> u8 {
    if user_cancelled {
        return EXIT_CANCELLED;
    }
    match status {
        DatasetStatus::Complete => EXIT_COMPLETE,
        DatasetStatus::Partial => EXIT_PARTIAL,
        DatasetStatus::Failed => EXIT_ERROR,
        DatasetStatus::Cancelled => EXIT_CANCELLED,
    }
}

/// The exit code of a scan that ended with `code` and whose store failed: 1, except
/// after a cancellation (130 stays).
pub(crate) fn exit_code_with_store(code: u8, stored: Option<&super::store::Stored>) -> u8 {
    match stored {
        Some(s) if s.failed && code != EXIT_CANCELLED => EXIT_ERROR,
        _ => code,
    }
}

/// Where a finished report is stored.
pub(super) enum StoreTarget<'a> {
    Nowhere,
    /// The whole report at the end (one account's scan: one transaction).
    Whole(&'a str),
    /// An organization's accounts, most of them already written as they finished (the
    /// report's header and any account not written yet are read from this report).
    Accounts(
        super::store::AccountWriter,
        &'a tollgate_scan::OrganizationReport,
    ),
}

/// The report with its `store` field, when it was stored or tried to be; serialised as
/// it goes (an organization's accounts are read back from the spool one at a time).
#[derive(serde::Serialize)]
struct WithStore<'a, T: serde::Serialize> {
    #[serde(flatten)]
    report: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<&'a serde_json::Value>,
}

/// Store the report (with `--store`), then write it where it goes, with its `store`
/// field when it was stored or tried to be.
pub(super) async fn finish_report<T: serde::Serialize>(
    report: &T,
    report_to: ReportTo<'_>,
    store: StoreTarget<'_>,
) -> anyhow::Result<Option<super::store::Stored>> {
    let stored = match store {
        StoreTarget::Nowhere => None,
        StoreTarget::Whole(url) => {
            let value = serde_json::to_value(report).context("encoding the report")?;
            Some(super::store::store_report(url, value).await)
        }
        StoreTarget::Accounts(writer, organization) => Some(writer.finish(organization).await),
    };
    let doc = WithStore {
        report,
        store: stored.as_ref().map(|s| &s.field),
    };
    match report_to {
        ReportTo::Stdout => write_json(&doc, None)?,
        ReportTo::File(path) => write_json(&doc, Some(path))?,
        ReportTo::Nowhere => {}
    }
    Ok(stored)
}

/// Write `report` as pretty JSON to `output` (stdout when `None`), streamed through a
/// buffer: an organization's report is never held whole as text.
pub(super) fn write_json<T: serde::Serialize>(
    report: &T,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    fn write<W: Write>(mut out: W, report: &impl serde::Serialize) -> anyhow::Result<()> {
        serde_json::to_writer_pretty(&mut out, report).context("encoding the report")?;
        writeln!(out)?;
        out.flush()?;
        Ok(())
    }
    match output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("writing the report to {}", path.display()))?;
            write(std::io::BufWriter::new(file), report)
                .with_context(|| format!("writing the report to {}", path.display()))
        }
        None => write(std::io::BufWriter::new(std::io::stdout().lock()), report),
    }
}

/// A dataset's reasons on one line of the summary: `operation kind code → field ×count`.
fn reasons_line(reasons: &[Reason]) -> String {
    reasons
        .iter()
        .map(|r| {
            let field = r
                .field
                .as_deref()
                .map(|f| format!(" → {f}"))
                .unwrap_or_default();
            let code = r
                .code
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            format!("{} {}{code}{field} ×{}", r.operation, r.kind, r.count)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `--regions all`: why the fallback regions were scanned, or that `DescribeRegions`
/// named them where `ListRegions` gave no answer.
fn print_regions_note(err: &mut impl Write, report: &DiscoveryReport) -> std::io::Result<()> {
    if let Some(reason) = &report.regions_reason {
        writeln!(err, "regions: {}", reason.message)?;
    }
    if report.regions_source == Some(RegionsSource::DescribeRegions) {
        writeln!(
            err,
            "regions: account:ListRegions gave no answer; the enabled regions came from ec2:DescribeRegions"
        )?;
    }
    Ok(())
}

/// The table on stderr after the scan.
pub(super) fn print_summary(report: &DiscoveryReport) -> anyhow::Result<()> {
    let mut err = std::io::stderr().lock();
    let account = report.account.as_deref().unwrap_or("unresolved");
    writeln!(
        err,
        "\nscan {} · account {} · {} · {}",
        report.scan_id,
        account,
        report.partition,
        report.regions.join(", ")
    )?;
    if let Some(note) = &report.identity_note {
        writeln!(err, "note: {note}")?;
    }
    print_regions_note(&mut err, report)?;
    let width = report
        .datasets
        .keys()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max("dataset".len());
    writeln!(
        err,
        "{:<width$} {:<10} {:>7}  reasons",
        "dataset", "status", "items"
    )?;
    for (name, dataset) in &report.datasets {
        let reasons = reasons_line(&dataset.reasons);
        writeln!(
            err,
            "{:<width$} {:<10} {:>7}  {}",
            name,
            dataset.status.as_str(),
            dataset.items.len(),
            if reasons.is_empty() { "-" } else { &reasons }
        )?;
    }
    coverage_lines(&mut err, report.datasets.values().flat_map(|d| &d.coverage))?;
    // Said once, however many calls and datasets it cost.
    if let Some(reason) = report
        .datasets
        .values()
        .flat_map(|d| &d.reasons)
        .find(|r| r.kind == ReasonKind::Credentials)
    {
        writeln!(
            err,
            "credentials: AWS credentials failed during the scan ({}); the datasets above \
             lack what those calls would have read. Renew them (`aws sso login --profile P` \
             for an SSO profile) and scan again.",
            reason.message
        )?;
    }
    if let Some(throttling) = &report.throttling {
        let t = &throttling.totals;
        writeln!(
            err,
            "throttling: {} calls, {} throttled, {} transient errors, {} retries, {} gave up, \
             {} refused by open breakers, {} breaker trips, {:.1} s queued",
            t.calls,
            t.throttled,
            t.transient_errors,
            t.retries,
            t.gave_up,
            t.rejected,
            t.breaker_trips,
            t.wait_seconds
        )?;
        for message in &throttling.messages {
            writeln!(err, "  {message}")?;
        }
    }
    if !report.fleet_degraded.is_empty() {
        writeln!(
            err,
            "warning: fleet admission was degraded during this scan (the fleet table \
             failed; `fleet_degraded` in the report):"
        )?;
        for d in &report.fleet_degraded {
            let rejoined = d
                .rejoined_at
                .as_deref()
                .map(|at| format!(", rejoined {at}"))
                .unwrap_or_else(|| ", still degraded".to_string());
            writeln!(
                err,
                "  {} {} since {}{rejoined}: {}",
                d.key, d.mode, d.since, d.error
            )?;
        }
    }
    Ok(())
}

/// Live bars on a terminal, plain lines otherwise.
enum ProgressDisplay {
    Bars {
        multi: MultiProgress,
        bars: Vec<(Dataset, ProgressBar)>,
    },
    Plain {
        last: std::sync::Mutex<(tokio::time::Instant, Vec<Option<DatasetStatus>>)>,
    },
}

impl ProgressDisplay {
    fn new(handle: &ScanHandle) -> Self {
        let progress = handle.progress();
        if !std::io::stderr().is_terminal() {
            for p in &progress {
                eprintln!("tollgate: {}: started (scan {})", p.dataset, handle.id());
            }
            return ProgressDisplay::Plain {
                last: std::sync::Mutex::new((
                    tollgate_actors::clock::monotonic_now(),
                    vec![None; progress.len()],
                )),
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{prefix:<18} {bar:30.cyan/blue} {pos:>5}/{len:<5} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bars = progress
            .iter()
            .map(|p| {
                let bar = multi.add(ProgressBar::new(0));
                bar.set_style(style.clone());
                bar.set_prefix(p.dataset.name());
                bar.set_message("listing…");
                (p.dataset, bar)
            })
            .collect();
        ProgressDisplay::Bars { multi, bars }
    }

    fn update(&self, progress: &[DatasetProgress]) {
        match self {
            ProgressDisplay::Bars { bars, .. } => {
                for (p, (_, bar)) in progress.iter().zip(bars) {
                    bar.set_length(p.planned.max(p.done));
                    bar.set_position(p.done);
                    match p.finished {
                        Some(status) if !bar.is_finished() => {
                            bar.finish_with_message(format!(
                                "{} · {} items",
                                status.as_str(),
                                p.items
                            ));
                        }
                        Some(_) => {}
                        None => bar.set_message(format!("{} listed · {} items", p.listed, p.items)),
                    }
                }
            }
            ProgressDisplay::Plain { last } => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                let now = tollgate_actors::clock::monotonic_now();
                let periodic = now.duration_since(last.0) >= PLAIN_EVERY;
                for (i, p) in progress.iter().enumerate() {
                    let was = last.1.get(i).copied().flatten();
                    if p.finished.is_some() && was.is_none() {
                        eprintln!(
                            "tollgate: {}: {} ({} items)",
                            p.dataset,
                            p.finished.map(DatasetStatus::as_str).unwrap_or("?"),
                            p.items
                        );
                        if let Some(slot) = last.1.get_mut(i) {
                            *slot = p.finished;
                        }
                    } else if periodic && p.finished.is_none() {
                        eprintln!(
                            "tollgate: {}: {} listed, {}/{} calls, {} items",
                            p.dataset, p.listed, p.done, p.planned, p.items
                        );
                    }
                }
                if periodic {
                    last.0 = now;
                }
            }
        }
    }

    fn note(&self, text: &str) {
        match self {
            ProgressDisplay::Bars { multi, .. } => {
                let _ = multi.println(format!("tollgate: {text}"));
            }
            ProgressDisplay::Plain { .. } => eprintln!("tollgate: {text}"),
        }
    }

    fn finish(&self) {
        if let ProgressDisplay::Bars { bars, .. } = self {
            for (_, bar) in bars {
                if !bar.is_finished() {
                    bar.abandon();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_scan::request::MAX_TIMEOUT;

    #[test]
    fn a_store_that_cannot_be_written_fails_the_exit_code_but_not_a_cancellation() {
        let failed = super::super::store::Stored {
            field: serde_json::json!({}),
            failed: true,
        };
        assert_eq!(exit_code_with_store(0, Some(&failed)), 1);
        assert_eq!(exit_code_with_store(2, Some(&failed)), 1);
        assert_eq!(exit_code_with_store(130, Some(&failed)), 130);
        assert_eq!(exit_code_with_store(2, None), 2);
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("12"), Ok(Duration::from_secs(12)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn a_huge_timeout_is_a_usage_error_not_a_panic() {
        assert!(parse_duration("1e30s").is_err());
        for huge in ["100000000000000000000000000000h", "169h", "604801s"] {
            let err = parse_duration(huge).unwrap_err().to_string();
            assert!(err.contains("at most 168h"), "{huge}: {err}");
        }
        assert_eq!(parse_duration("168h"), Ok(MAX_TIMEOUT));
    }
}
