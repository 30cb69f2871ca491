//! `AccountReports`: an organization scan's account reports, each written to a spool
//! file as its account finishes, held in memory as a digest, read back one at a time.
//!
//! Why spool? An organization's items no longer fit in a report held in memory once
//! scans reach hundreds of types: 200 accounts × 17 regions × 1,000 items is 3.4
//! million items, gigabytes as Rust values. A finished account's report is therefore
//! serialised once, appended to an anonymous temporary file (unlinked at creation, so
//! nothing is left behind however the process ends; 0600 in `$TMPDIR`), and dropped;
//! what stays in memory is its [`AccountDigest`] (status, counts, regions, throttling
//! totals, a bounded coverage summary), enough for the summary, the exit code and the
//! service's views. The scanner's peak memory then follows the accounts in flight, not
//! the items found. The final report is streamed: [`AccountReports`] serialises as a
//! JSON array whose elements are copied from the spool verbatim, one account at a time.
//!
//! Losing nothing: an account whose report cannot be spooled (no temporary directory,
//! a full disk) is kept in memory instead, with a warning, and is reported as usual;
//! reading a spooled report back fails only if the temporary file itself was damaged,
//! and then the reader gets a [`SpoolError`] naming the account, never a panic.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::de::Deserializer;
use serde::ser::{Error as _, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use tollgate_collectors::coverage::CoverageSummary;
use tollgate_collectors::output::{DatasetStatus, DiscoveryReport, Reason, ThrottlingTotals};

/// What stays in memory of a spooled account: what the summary, the exit code and the
/// service's views read, without the items.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountDigest {
    /// The account (`None`: the identity was not resolved).
    pub account: Option<String>,
    /// Its worst dataset status ([`DiscoveryReport::overall_status`]).
    pub status: DatasetStatus,
    /// Items over every dataset.
    pub items: usize,
    /// Reasons over every dataset.
    pub reasons: usize,
    /// Regions scanned.
    pub regions: Vec<String>,
    /// Why the fallback regions were scanned, if they were.
    pub regions_reason: Option<Reason>,
    /// Its throttling totals (`None`: nothing eventful).
    pub throttling: Option<ThrottlingTotals>,
    /// Its coverage entries, counted, with the worst gaps.
    pub coverage: CoverageSummary,
}

impl AccountDigest {
    /// The digest of `report`.
    pub fn of(report: &DiscoveryReport) -> Self {
        AccountDigest {
            account: report.account.clone(),
            status: report.overall_status(),
            items: report.datasets.values().map(|d| d.items.len()).sum(),
            reasons: report.datasets.values().map(|d| d.reasons.len()).sum(),
            regions: report.regions.clone(),
            regions_reason: report.regions_reason.clone(),
            throttling: report.throttling.as_ref().map(|t| t.totals),
            coverage: CoverageSummary::of(report.datasets.values().flat_map(|d| &d.coverage)),
        }
    }
}

/// A spooled report could not be read back.
#[derive(Debug, thiserror::Error)]
#[error(
    "reading account {account}'s report back from the scan's temporary spool file failed: \
     {source}; the temporary directory ($TMPDIR) was changed or ran out of space while the \
     scan ran: free space there (or point TMPDIR elsewhere) and scan again"
)]
pub struct SpoolError {
    /// The account whose report it was.
    pub account: String,
    /// What failed.
    #[source]
    pub source: std::io::Error,
}

/// Where one account's report is.
#[derive(Debug, Clone)]
enum Place {
    /// `len` bytes of JSON at `offset` of the spool file.
    File { offset: u64, len: usize },
    /// Not spooled (no spool file could be written, or the report was decoded).
    Memory(Arc<DiscoveryReport>),
}

/// One account of [`AccountReports`].
#[derive(Debug, Clone)]
struct Entry {
    digest: AccountDigest,
    place: Place,
}

/// The anonymous spool file reports are appended to.
#[derive(Debug, Default)]
pub struct Spool {
    /// Where the file is made (`None`: the system's temporary directory, `$TMPDIR`).
    dir: Option<PathBuf>,
    file: Mutex<SpoolFile>,
}

#[derive(Debug, Default)]
struct SpoolFile {
    /// `None` before the first write, or after one failed to open it.
    file: Option<Arc<File>>,
    /// Bytes written so far (where the next report goes).
    end: u64,
    /// Whether opening it failed (reports stay in memory from then on).
    unusable: bool,
}

/// One account's report, as the spool holds it.
#[derive(Debug, Clone)]
pub struct SpooledAccount {
    entry: Entry,
    file: Option<Arc<File>>,
}

impl SpooledAccount {
    /// The account's digest.
    pub fn digest(&self) -> &AccountDigest {
        &self.entry.digest
    }
}

impl Spool {
    /// An empty spool in the system's temporary directory (its file is made on the
    /// first write).
    pub fn new() -> Arc<Spool> {
        Arc::new(Spool::default())
    }

    /// An empty spool whose file is made in `dir`.
    pub fn in_dir(dir: PathBuf) -> Arc<Spool> {
        Arc::new(Spool {
            dir: Some(dir),
            ..Spool::default()
        })
    }

    /// Write `report` out and keep its digest; in memory instead when the spool file
    /// cannot be written (with a warning). Blocking: call it off the actor thread.
    pub fn write(&self, report: DiscoveryReport) -> SpooledAccount {
        let digest = AccountDigest::of(&report);
        let bytes = match serde_json::to_vec(&report) {
            Ok(bytes) => bytes,
            Err(e) => return in_memory(digest, report, &e),
        };
        let mut spool = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let file = match spool.open(self.dir.as_deref()) {
            Ok(file) => file,
            Err(e) => return in_memory(digest, report, &e),
        };
        let offset = spool.end;
        if let Err(e) = file.write_all_at(&bytes, offset) {
            return in_memory(digest, report, &e);
        }
        spool.end += bytes.len() as u64;
        SpooledAccount {
            entry: Entry {
                digest,
                place: Place::File {
                    offset,
                    len: bytes.len(),
                },
            },
            file: Some(file),
        }
    }
}

impl SpoolFile {
    fn open(&mut self, dir: Option<&std::path::Path>) -> std::io::Result<Arc<File>> {
        if let Some(file) = &self.file {
            return Ok(file.clone());
        }
        if self.unusable {
            return Err(std::io::Error::other("the spool file could not be made"));
        }
        let made = match dir {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        };
        match made {
            Ok(file) => Ok(self.file.insert(Arc::new(file)).clone()),
            Err(e) => {
                self.unusable = true;
                Err(e)
            }
        }
    }
}

/// The account is kept in memory: spooling it failed.
fn in_memory(
    digest: AccountDigest,
    report: DiscoveryReport,
    why: &dyn std::fmt::Display,
) -> SpooledAccount {
    tracing::warn!(
        account = digest.account.as_deref().unwrap_or("unresolved"),
        error = %why,
        "could not write a finished account's report to the temporary spool file ($TMPDIR); it is kept in memory"
    );
    SpooledAccount {
        entry: Entry {
            digest,
            place: Place::Memory(Arc::new(report)),
        },
        file: None,
    }
}

/// The scanned accounts' reports of an organization scan, ordered by account: digests
/// in memory, reports in the spool (see the module docs). Serialises as the JSON array
/// of the reports; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct AccountReports {
    entries: Vec<SpooledAccount>,
}

impl AccountReports {
    /// The reports of `accounts`, ordered by account id.
    pub fn from_spooled(mut accounts: Vec<SpooledAccount>) -> Self {
        accounts.sort_by(|a, b| a.digest().account.cmp(&b.digest().account));
        AccountReports { entries: accounts }
    }

    /// Reports held in memory (decoded ones; tests), ordered as given.
    pub fn in_memory(reports: Vec<DiscoveryReport>) -> Self {
        let entries = reports
            .into_iter()
            .map(|r| SpooledAccount {
                entry: Entry {
                    digest: AccountDigest::of(&r),
                    place: Place::Memory(Arc::new(r)),
                },
                file: None,
            })
            .collect();
        AccountReports { entries }
    }

    /// Accounts scanned.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no account was scanned.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Accounts whose report is held in memory rather than in the spool file (0 after a
    /// scan whose spool worked: only digests stay in memory).
    pub fn held_in_memory(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.entry.place, Place::Memory(_)))
            .count()
    }

    /// Each account's digest, in order (no report is read).
    pub fn digests(&self) -> impl Iterator<Item = &AccountDigest> {
        self.entries.iter().map(SpooledAccount::digest)
    }

    /// Each account's report, read back one at a time, in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<DiscoveryReport, SpoolError>> + '_ {
        self.entries.iter().map(read)
    }

    /// One account's report (`Ok(None)`: not scanned).
    pub fn get(&self, account: &str) -> Result<Option<DiscoveryReport>, SpoolError> {
        self.entries
            .iter()
            .find(|e| e.digest().account.as_deref() == Some(account))
            .map(read)
            .transpose()
    }
}

/// `account`'s report as JSON text.
fn raw(account: &SpooledAccount) -> Result<Box<RawValue>, SpoolError> {
    let failed = |source| SpoolError {
        account: account
            .digest()
            .account
            .clone()
            .unwrap_or_else(|| "unresolved".into()),
        source,
    };
    match (&account.entry.place, &account.file) {
        (Place::File { offset, len }, Some(file)) => {
            let mut bytes = vec![0; *len];
            file.read_exact_at(&mut bytes, *offset).map_err(failed)?;
            let text = String::from_utf8(bytes).map_err(|e| failed(std::io::Error::other(e)))?;
            RawValue::from_string(text).map_err(|e| failed(e.into()))
        }
        (Place::Memory(report), _) => serde_json::value::to_raw_value(report.as_ref())
            .map_err(|e| failed(std::io::Error::other(e))),
        (Place::File { .. }, None) => Err(failed(std::io::Error::other("no spool file"))),
    }
}

/// `account`'s report, decoded.
fn read(account: &SpooledAccount) -> Result<DiscoveryReport, SpoolError> {
    if let Place::Memory(report) = &account.entry.place {
        return Ok(report.as_ref().clone());
    }
    let text = raw(account)?;
    serde_json::from_str(text.get()).map_err(|e| SpoolError {
        account: account.digest().account.clone().unwrap_or_default(),
        source: e.into(),
    })
}

impl Serialize for AccountReports {
    /// The reports' JSON array, each copied from the spool as it was written.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.entries.len()))?;
        for account in &self.entries {
            match &account.entry.place {
                Place::Memory(report) => seq.serialize_element(report.as_ref())?,
                Place::File { .. } => {
                    seq.serialize_element(&raw(account).map_err(S::Error::custom)?)?
                }
            }
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for AccountReports {
    /// A decoded report's accounts are held in memory.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<DiscoveryReport>::deserialize(deserializer).map(AccountReports::in_memory)
    }
}

impl PartialEq for AccountReports {
    /// Equal when every account's report is (each read back).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| matches!((a, b), (Ok(a), Ok(b)) if a == b))
    }
}

/// Overwrite the start of `account`'s spooled bytes (tests of a damaged file).
#[cfg(test)]
fn damage(account: &SpooledAccount) {
    if let (Place::File { offset, .. }, Some(file)) = (&account.entry.place, &account.file) {
        file.write_all_at(b"\x00\x00", *offset).unwrap();
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;
