//! The one error type of this crate.
//!
//! A store that cannot be written must not lose a scan (the report is still written), so
//! the person who reads an [`InventoryError`] must be able to act on it: every error
//! carries a [`InventoryErrorKind`] for programs, the store it concerns (a path, or a
//! PostgreSQL URL **with its password replaced by `***`**), and a message that ends in
//! what to do next. Messages never contain a password nor stored values; the driver's
//! error is kept as the source, and drivers' errors never echo a connection password.

use std::error::Error;
use std::fmt;

/// What went wrong, for callers that branch on it.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InventoryErrorKind {
    /// The store URL is not one this crate understands.
    InvalidUrl,
    /// The store could not be opened or reached (file, directory, server, login).
    Unreachable,
    /// The store's schema is newer than this binary knows.
    SchemaTooNew,
    /// The store's schema could not be read or migrated.
    Schema,
    /// The report handed to the store does not have the shape of docs/report.md.
    MalformedReport,
    /// A scan id that the store does not hold.
    UnknownScan,
    /// A read or write failed in the database.
    Database,
    /// A filter or cursor is invalid.
    InvalidQuery,
}

/// An inventory failure: a kind, the store involved, and an actionable message.
///
/// `Display` prints the message only; the cause, if any, is [`Error::source`].
#[derive(Debug)]
pub struct InventoryError {
    kind: InventoryErrorKind,
    message: String,
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
}

impl InventoryError {
    /// Creates an error without an underlying cause.
    pub fn new(kind: InventoryErrorKind, message: impl Into<String>) -> Self {
        InventoryError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the underlying cause.
    pub(crate) fn with_source(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// A database failure while doing `action` on `store` (a path or a redacted URL).
    pub(crate) fn database(
        action: &str,
        store: &str,
        err: impl Error + Send + Sync + 'static,
    ) -> Self {
        let message = format!(
            "cannot {action} in the inventory store {store}: {err}; \
             the scan's JSON report is unaffected: check that the store is reachable and writable, then retry"
        );
        InventoryError::new(InventoryErrorKind::Database, message).with_source(err)
    }

    /// What went wrong.
    pub fn kind(&self) -> InventoryErrorKind {
        self.kind
    }

    /// The actionable message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for InventoryError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn Error + 'static))
    }
}

/// This crate's result.
pub type Result<T, E = InventoryError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_the_source_is_kept() {
        let err = InventoryError::database(
            "write",
            "/x/inventory.sqlite",
            std::io::Error::other("boom"),
        );
        assert_eq!(err.kind(), InventoryErrorKind::Database);
        let text = err.to_string();
        assert!(
            text.starts_with("cannot write in the inventory store /x/inventory.sqlite: boom"),
            "{text}"
        );
        assert!(text.ends_with("then retry"), "{text}");
        assert!(err.source().is_some());
    }
}
