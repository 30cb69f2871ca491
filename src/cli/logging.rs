//! Logs: where they go, what is shown at which `-v`, and the one redaction they get.
//!
//! Quiet by default: at the default level only tollgate's own warnings are shown. The AWS
//! libraries warn about things a first run hits by design (no instance metadata service,
//! no profile file) in screen-wide dumps that say nothing a user can act on; the
//! credentials check before a scan says what matters instead. `-v` shows everything at
//! debug (the libraries' warnings included), `-vv` at trace; `RUST_LOG` wins when set.
//!
//! Redaction: aws-config logs a failing `credential_process` with its stderr
//! (`... exited with code 3. Stderr: ...`), which may hold secrets. Every log line goes
//! through [`redact`], which cuts a line at `Stderr:`, so no level shows that output.

use std::io::Write;

use tracing_subscriber::fmt::MakeWriter;

/// Tollgate's crates: shown at `warn` by default; everything else at `error`.
const OWN_CRATES: &[&str] = &[
    "tollgate",
    "tollgate_engine",
    "tollgate_actors",
    "tollgate_storage",
    "tollgate_quota",
    "tollgate_sim",
];

/// The filter for `verbose` (`-v` count) when `RUST_LOG` is not set.
pub(crate) fn default_filter(verbose: u8) -> String {
    match verbose {
        0 => std::iter::once("error".to_owned())
            .chain(OWN_CRATES.iter().map(|c| format!("{c}=warn")))
            .collect::<Vec<_>>()
            .join(","),
        1 => "debug".to_owned(),
        _ => "trace".to_owned(),
    }
}

/// Logs go to stderr, redacted; `-v` raises the level, `RUST_LOG` wins when set.
pub fn init_tracing(verbose: u8) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter(verbose)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactedStderr)
        .try_init();
}

/// Process output in a log line is dropped from `Stderr:` to the end of the line.
pub(crate) fn redact(text: &str) -> String {
    const MARK: &str = "Stderr:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i]);
        out.push_str("Stderr: (not shown: it may contain secrets)");
        // An event is one write; its output may span lines: drop it all.
        rest = match rest.rfind('\n') {
            Some(nl) if nl > i => &rest[nl..],
            _ => "",
        };
    }
    out.push_str(rest);
    out
}

/// Stderr, one event at a time, through [`redact`].
struct RedactedStderr;

impl<'a> MakeWriter<'a> for RedactedStderr {
    type Writer = EventBuffer;

    fn make_writer(&'a self) -> EventBuffer {
        EventBuffer(Vec::new())
    }
}

/// One event's formatted text, written redacted when dropped.
struct EventBuffer(Vec<u8>);

impl Write for EventBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for EventBuffer {
    fn drop(&mut self) {
        let text = redact(&String::from_utf8_lossy(&self.0));
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_output_is_cut_from_every_log_line() {
        let line = "WARN provider failed error=external process exited with code 3. Stderr: sk=SECRET\nmore SECRET\n";
        let out = redact(line);
        assert!(!out.contains("SECRET"), "{out}");
        assert!(out.contains("exited with code 3"), "{out}");
        assert!(out.ends_with('\n'), "{out:?}");
        assert_eq!(redact("plain line\n"), "plain line\n");
    }

    #[test]
    fn the_default_level_hides_library_warnings_and_v_shows_them() {
        let quiet = default_filter(0);
        assert!(quiet.starts_with("error,"), "{quiet}");
        assert!(quiet.contains("tollgate_engine=warn"), "{quiet}");
        assert_eq!(default_filter(1), "debug");
    }
}
