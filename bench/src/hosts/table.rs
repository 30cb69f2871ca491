//! The table `bench hosts` shares between its hosts: an endpoint (a dynalite started here,
//! or `--endpoint-url`), the counting proxy in front of it, and a fresh table created by
//! `tollgate fleet init`, as a user would create theirs. The hosts' environment points
//! them at the proxy, never at the endpoint itself, so that every request they make is
//! counted.
#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::Context;
use tollgate_actors::clock::unix_now;

use crate::hosts::dynalite::Dynalite;
use crate::hosts::dynamo_proxy::CountingProxy;

/// The region the bench's table lives in (an emulator ignores it; the SDK needs one).
const REGION: &str = "us-east-1";

/// Variables of the fleet mode; cleared for `--no-fleet` hosts so the user's own
/// environment cannot turn it on.
const FLEET_VARS: [&str; 3] = [
    "TOLLGATE_FLEET_TABLE",
    "TOLLGATE_FLEET_ENDPOINT_URL",
    "TOLLGATE_FLEET_REGION",
];

/// A child's environment: set (`Some`) or removed (`None`).
pub type Env = Vec<(String, Option<String>)>;

/// One run's table; its dynalite (if started here) and proxy stop on drop.
pub struct FleetTable {
    pub name: String,
    proxy: CountingProxy,
    /// Static credentials for an emulator when the environment has none.
    credentials: Env,
    _dynalite: Option<Dynalite>,
}

impl FleetTable {
    /// Start dynalite unless `endpoint` is given, put the proxy in front, and create a
    /// table with a name unique to this run through `tollgate fleet init`.
    pub fn create(endpoint: Option<&str>) -> anyhow::Result<FleetTable> {
        let dynalite = match endpoint {
            Some(_) => None,
            None => Some(Dynalite::start()?),
        };
        let direct = endpoint
            .map(str::to_owned)
            .unwrap_or_else(|| dynalite.as_ref().expect("started").url.clone());
        let proxy = CountingProxy::start(&direct)?;
        // An emulator accepts any signature; a user's own credentials are kept.
        let credentials = if dynalite.is_some() || std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            vec![
                ("AWS_ACCESS_KEY_ID".into(), Some("testing".into())),
                ("AWS_SECRET_ACCESS_KEY".into(), Some("testing".into())),
                ("AWS_SESSION_TOKEN".into(), Some("testing".into())),
                ("AWS_EC2_METADATA_DISABLED".into(), Some("true".into())),
                ("AWS_PROFILE".into(), None),
            ]
        } else {
            Vec::new()
        };
        let name = format!(
            "tollgate-bench-{}-{}",
            std::process::id(),
            unix_now().as_micros() % 1_000_000_000
        );
        let table = FleetTable {
            name,
            proxy,
            credentials,
            _dynalite: dynalite,
        };
        table.init(&direct)?;
        Ok(table)
    }

    /// `tollgate fleet init --table NAME` against the endpoint itself (its requests are
    /// setup, not the hosts' traffic, so they bypass the proxy's count).
    fn init(&self, direct: &str) -> anyhow::Result<()> {
        let mut cmd = Command::new(crate::harness::exe::tollgate()?);
        apply(&mut cmd, &self.credentials);
        let out = cmd
            .args(["fleet", "init", "--table", &self.name])
            .env("TOLLGATE_FLEET_ENDPOINT_URL", direct)
            .env("TOLLGATE_FLEET_REGION", REGION)
            .output()
            .context("running `tollgate fleet init`")?;
        anyhow::ensure!(
            out.status.success(),
            "`tollgate fleet init --table {}` against {direct} failed ({}): {}{}",
            self.name,
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        Ok(())
    }

    /// The environment of every host's coordinator and workers: the table, through the
    /// proxy.
    pub fn host_env(&self) -> Env {
        let mut env: Env = vec![
            ("TOLLGATE_FLEET_TABLE".into(), Some(self.name.clone())),
            (
                "TOLLGATE_FLEET_ENDPOINT_URL".into(),
                Some(self.proxy.url.clone()),
            ),
            ("TOLLGATE_FLEET_REGION".into(), Some(REGION.into())),
        ];
        env.extend(self.credentials.iter().cloned());
        env
    }

    /// `--no-fleet`: the fleet variables removed.
    pub fn no_fleet_env() -> Env {
        FLEET_VARS.iter().map(|v| ((*v).to_owned(), None)).collect()
    }

    /// From `from_s` after `start_at_us` (epoch µs), make the table unreachable for
    /// `for_s` seconds; the thread ends when it is reachable again.
    pub fn outage(&self, start_at_us: u64, from_s: f64, for_s: f64) -> std::thread::JoinHandle<()> {
        let switch = self.proxy.switch();
        std::thread::spawn(move || {
            let begin = start_at_us + (from_s * 1e6) as u64;
            let now = unix_now().as_micros();
            if begin > now {
                std::thread::sleep(std::time::Duration::from_micros(begin - now));
            }
            switch.store(false, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_secs_f64(for_s));
            switch.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    }

    /// The hosts' DynamoDB requests so far, by `X-Amz-Target`.
    pub fn requests(&self) -> BTreeMap<String, u64> {
        self.proxy.counts()
    }

    /// The proxy's timeline and lost conditional writes (`request_phases`).
    pub fn seen(&self) -> crate::hosts::dynamo_proxy::Seen {
        self.proxy.seen()
    }
}

/// Set or remove each variable on `cmd`.
pub fn apply(cmd: &mut Command, env: &Env) {
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
}
