//! `tollgate discover --organization`: every member account of the caller's organization
//! through one gate (the engine's [`tollgate_scan::organization`]); progress per
//! account, the one JSON report, a summary line per account plus totals, and the exit
//! code aggregated as for one account (0 complete, 2 partial, 1 failed, 130 Ctrl-C).

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tollgate_engine::aws::telemetry::TelemetrySink;
use tollgate_engine::Engine;
use tollgate_scan::organization::{
    AccountFilter, AccountPhase, OrganizationProgress, OrganizationRequest,
    OrganizationRequestError, DEFAULT_ROLE_NAME,
};
use tollgate_scan::request::RequestError;
use tollgate_scan::{DiscoveryRequest, EngineDiscovery, OrganizationHandle, OrganizationReport};

use super::discover::{DiscoverArgs, ReportTo, ScanEnv};

/// The organization request from the flags.
fn request(args: DiscoverArgs) -> anyhow::Result<OrganizationRequest> {
    let (regions, region_source) =
        super::discover::region_flags(args.regions, args.regions_fallback)?;
    let scan = DiscoveryRequest {
        regions,
        region_source,
        datasets: super::discover::select_types(&args.types)?,
        endpoint_url: args.endpoint_url,
        profile: args.profile,
        timeout: args.scan.timeout,
        tags: super::discover::tag_sweep(args.no_tags, &args.types),
        cloudcontrol: tollgate_collectors::cloudcontrol::Charges::from_env(),
        details: super::discover::details(args.details),
        pricing: super::discover::pricing(args.pricing, args.pricing_url),
        ..Default::default()
    };
    let flags = args.organization;
    let mut request = OrganizationRequest::new(scan);
    request.role_name = flags
        .role_name
        .unwrap_or_else(|| DEFAULT_ROLE_NAME.to_owned());
    request.external_id = args.external_id;
    request.session_name = args.session_name;
    request.accounts = AccountFilter {
        only: flags.accounts.into_iter().collect::<BTreeSet<_>>(),
        exclude: flags.exclude_accounts.into_iter().collect(),
    };
    if let Some(n) = flags.max_accounts_in_flight {
        request.max_accounts_in_flight = n;
    }
    request.validate().map_err(|e| match e {
        OrganizationRequestError::Role(role) => {
            anyhow::anyhow!("--{}: {role}", role.field().replace('_', "-"))
        }
        OrganizationRequestError::Request(RequestError::BadRole(role)) => {
            anyhow::anyhow!("--{}: {role}", role.field().replace('_', "-"))
        }
        other => other.into(),
    })
}

pub fn run(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    let ScanEnv {
        config,
        telemetry,
        rt,
    } = ScanEnv::new(&args.scan)?;
    let output = args.output.clone();
    let store = args.scan.store.clone();
    let request = request(args)?;
    let breakers = tollgate_engine::breakers_from_env()?;
    rt.block_on(async move {
        super::discover::preflight(&request.scan).await?;
        let engine = Engine::open(config)?.with_breakers(breakers);
        let report_to = match &output {
            Some(path) => ReportTo::File(path),
            None => ReportTo::Stdout,
        };
        let outcome =
            run_organization(&engine, request, report_to, telemetry, store.as_deref()).await;
        engine.close().await?;
        outcome
    })
}

/// One organization scan with progress, report, summary and exit code (`discover
/// --organization`, and `demo` on an organization scenario).
pub(crate) async fn run_organization(
    engine: &Engine,
    request: OrganizationRequest,
    report_to: ReportTo<'_>,
    telemetry: Option<Arc<dyn TelemetrySink>>,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("installing the SIGINT handler")?;
    let discovery = engine.discovery(telemetry);
    let handle = discovery.start_organization_scan(request).await?;
    // Each account is stored as soon as its scan finishes (a kill loses at most the
    // accounts in flight).
    let writer = store.map(|url| {
        let _ = handle.take_finished_accounts();
        super::store::AccountWriter::start(url, handle.id().to_string())
    });
    let mut display = AccountDisplay::new(&handle);
    let mut user_cancelled = false;
    let report = {
        let report = handle.report();
        tokio::pin!(report);
        let mut tick = tokio::time::interval(super::discover::TICK);
        loop {
            tokio::select! {
                report = &mut report => break report?,
                _ = interrupt.recv() => {
                    if user_cancelled {
                        std::process::exit(i32::from(super::discover::EXIT_CANCELLED));
                    }
                    user_cancelled = true;
                    display.note("cancelling: skipping queued accounts, stopping the running ones (Ctrl-C again to quit at once)");
                    handle.cancel();
                }
                _ = tick.tick() => {
                    display.update(&handle.progress());
                    if let Some(writer) = &writer {
                        for account in handle.take_finished_accounts() {
                            writer.account(&account);
                        }
                    }
                }
            }
        }
    };
    if let Some(writer) = &writer {
        for account in handle.take_finished_accounts() {
            writer.account(&account);
        }
    }
    display.update(&handle.progress());
    display.finish();
    discovery.shutdown();
    let target = match writer {
        Some(writer) => super::discover::StoreTarget::Accounts(writer, &report),
        None => super::discover::StoreTarget::Nowhere,
    };
    let stored = super::discover::finish_report(&report, report_to, target).await?;
    print_summary(&report)?;
    let code = super::discover::status_exit_code(report.overall_status(), user_cancelled);
    Ok(ExitCode::from(super::discover::exit_code_with_store(
        code,
        stored.as_ref(),
    )))
}

/// One line per account, the skipped accounts, and the totals.
fn print_summary(report: &OrganizationReport) -> anyhow::Result<()> {
    let mut err = std::io::stderr().lock();
    let org = &report.organization;
    writeln!(
        err,
        "\norganization scan {} · management account {} · caller {} · {} listed, {} scanned, {} skipped",
        report.scan_id,
        org.management_account.as_deref().unwrap_or("unknown"),
        org.caller_account.as_deref().unwrap_or("unresolved"),
        org.listed,
        org.scanned,
        org.skipped.len()
    )?;
    if let Some(error) = &org.error {
        writeln!(
            err,
            "error: {} {}: {}",
            error.operation, error.kind, error.message
        )?;
    }
    writeln!(
        err,
        "{:<14} {:<10} {:>7} {:>8}  regions",
        "account", "status", "items", "reasons"
    )?;
    let (mut items, mut calls, mut throttled) = (0usize, 0u64, 0u64);
    let mut coverage = tollgate_collectors::coverage::CoverageSummary::default();
    for account in report.accounts.digests() {
        items += account.items;
        if let Some(t) = &account.throttling {
            calls += t.calls;
            throttled += t.throttled;
        }
        coverage.merge(&account.coverage);
        writeln!(
            err,
            "{:<14} {:<10} {:>7} {:>8}  {}",
            account.account.as_deref().unwrap_or("?"),
            account.status.as_str(),
            account.items,
            account.reasons,
            account.regions.join(", ")
        )?;
        if let Some(reason) = &account.regions_reason {
            writeln!(err, "{:<14} regions: {}", "", reason.message)?;
        }
    }
    for skip in &org.skipped {
        writeln!(
            err,
            "{:<14} skipped    {}: {}",
            skip.account, skip.reason, skip.message
        )?;
    }
    writeln!(
        err,
        "total: {} accounts scanned, {} items, status {}{}",
        org.scanned,
        items,
        report.overall_status().as_str(),
        if throttled > 0 {
            format!(", {throttled} throttled responses in {calls} eventful calls")
        } else {
            String::new()
        }
    )?;
    super::discover::coverage_summary_lines(&mut err, &coverage)?;
    if let Some(hub) = &org.hub_throttling {
        for message in &hub.messages {
            writeln!(err, "  hub: {message}")?;
        }
    }
    Ok(())
}

/// A bar per account on a terminal; plain lines on phase changes otherwise.
enum AccountDisplay {
    Bars {
        multi: MultiProgress,
        style: ProgressStyle,
        bars: Vec<(String, ProgressBar)>,
    },
    Plain {
        seen: Vec<(String, AccountPhase)>,
        listed: bool,
    },
}

fn phase_text(phase: AccountPhase) -> String {
    match phase {
        AccountPhase::Queued => "queued".into(),
        AccountPhase::Assuming => "assuming role…".into(),
        AccountPhase::Scanning => "scanning".into(),
        AccountPhase::Finished(status) => status.as_str().into(),
        AccountPhase::Skipped(reason) => format!("skipped ({reason})"),
    }
}

impl AccountDisplay {
    fn new(handle: &OrganizationHandle) -> Self {
        if !std::io::stderr().is_terminal() {
            eprintln!("tollgate: organization scan {} started", handle.id());
            return AccountDisplay::Plain {
                seen: Vec::new(),
                listed: false,
            };
        }
        let style =
            ProgressStyle::with_template("{prefix:<14} {bar:30.cyan/blue} {pos:>5}/{len:<5} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        AccountDisplay::Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            style,
            bars: Vec::new(),
        }
    }

    fn update(&mut self, progress: &OrganizationProgress) {
        match self {
            AccountDisplay::Bars { multi, style, bars } => {
                for account in &progress.accounts {
                    let bar = match bars.iter().find(|(a, _)| *a == account.account) {
                        Some((_, bar)) => bar.clone(),
                        None => {
                            let bar = multi.add(ProgressBar::new(0));
                            bar.set_style(style.clone());
                            bar.set_prefix(account.account.clone());
                            bars.push((account.account.clone(), bar.clone()));
                            bar
                        }
                    };
                    let planned: u64 = account.datasets.iter().map(|d| d.planned.max(d.done)).sum();
                    let done: u64 = account.datasets.iter().map(|d| d.done).sum();
                    let items: u64 = account.datasets.iter().map(|d| d.items).sum();
                    bar.set_length(planned);
                    bar.set_position(done);
                    let text = format!("{} · {items} items", phase_text(account.phase));
                    if account.phase.is_over() {
                        if !bar.is_finished() {
                            bar.finish_with_message(text);
                        }
                    } else {
                        bar.set_message(text);
                    }
                }
            }
            AccountDisplay::Plain { seen, listed } => {
                if let (Some(n), false) = (progress.listed, *listed) {
                    *listed = true;
                    eprintln!("tollgate: organization: {n} accounts listed");
                }
                for account in &progress.accounts {
                    let known = seen.iter_mut().find(|(a, _)| *a == account.account);
                    let changed = match known {
                        Some((_, phase)) if *phase == account.phase => false,
                        Some((_, phase)) => {
                            *phase = account.phase;
                            true
                        }
                        None => {
                            seen.push((account.account.clone(), account.phase));
                            true
                        }
                    };
                    if changed && account.phase != AccountPhase::Queued {
                        let items: u64 = account.datasets.iter().map(|d| d.items).sum();
                        eprintln!(
                            "tollgate: account {}: {} ({items} items)",
                            account.account,
                            phase_text(account.phase)
                        );
                    }
                }
            }
        }
    }

    fn note(&self, text: &str) {
        match self {
            AccountDisplay::Bars { multi, .. } => {
                let _ = multi.println(format!("tollgate: {text}"));
            }
            AccountDisplay::Plain { .. } => eprintln!("tollgate: {text}"),
        }
    }

    fn finish(&self) {
        if let AccountDisplay::Bars { bars, .. } = self {
            for (_, bar) in bars {
                if !bar.is_finished() {
                    bar.abandon();
                }
            }
        }
    }
}
