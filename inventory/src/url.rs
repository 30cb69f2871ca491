//! Where a store lives: the URL a user gives (`--store`, `TOLLGATE_STORE`, the service's
//! `store =`), parsed once into a [`StoreUrl`], and the default SQLite file.
//!
//! Why a type and not a string? A PostgreSQL URL carries a password, and a string that
//! travels into an error, a log line or a report leaks it. A [`StoreUrl`] prints
//! ([`Display`](std::fmt::Display), [`Debug`]) only its [`StoreUrl::redacted`] form, so
//! the password stays in the one place that needs it: the connection.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{InventoryError, InventoryErrorKind, Result};

/// A parsed store location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite file: `sqlite:PATH`, `sqlite://PATH` or a bare path.
    Sqlite(PathBuf),
    /// A PostgreSQL server: `postgres://...` or `postgresql://...` (libpq's URL form).
    Postgres(PostgresUrl),
}

/// A PostgreSQL connection URL, kept whole for the driver and printed redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    full: String,
    redacted: String,
}

impl PostgresUrl {
    /// The URL as given, password included: for the driver only.
    pub(crate) fn connection_string(&self) -> &str {
        &self.full
    }

    /// The URL with its password replaced by `***`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl StoreUrl {
    /// Parses `sqlite:PATH`, `sqlite://PATH`, a bare path, `postgres://...` or
    /// `postgresql://...`.
    pub fn parse(url: &str) -> Result<StoreUrl> {
        let url = url.trim();
        if url.is_empty() {
            return Err(InventoryError::new(
                InventoryErrorKind::InvalidUrl,
                "the store URL is empty: give sqlite:PATH, a file path, or postgres://USER@HOST/DB",
            ));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(PostgresUrl {
                full: url.to_string(),
                redacted: redact(url),
            }));
        }
        let path = if let Some(rest) = url.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = url.strip_prefix("sqlite:") {
            rest
        } else if url.contains("://") {
            let scheme = url.split("://").next().unwrap_or_default();
            return Err(InventoryError::new(
                InventoryErrorKind::InvalidUrl,
                format!(
                    "the store URL scheme {scheme:?} is not supported: use sqlite:PATH, a file path, or postgres://USER@HOST/DB"
                ),
            ));
        } else {
            url
        };
        if path.is_empty() {
            return Err(InventoryError::new(
                InventoryErrorKind::InvalidUrl,
                "sqlite: needs a file path after it, for example sqlite:/var/lib/tollgate/inventory.sqlite",
            ));
        }
        Ok(StoreUrl::Sqlite(PathBuf::from(path)))
    }

    /// The location with any password replaced by `***`: safe for logs, reports, errors.
    pub fn redacted(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
            StoreUrl::Postgres(url) => url.redacted().to_string(),
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({})", self.redacted())
    }
}

/// Replaces the password of `scheme://user:password@host...` and of a `password=`
/// query parameter by `***`. Anything that is not a URL of that shape is returned as is.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The authority ends at the first '/', '?' or '#'; the user info at its last '@'.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The default store: `$XDG_DATA_HOME/tollgate/inventory.sqlite`, falling back to
/// `$HOME/.local/share/tollgate/inventory.sqlite` (XDG's own default).
///
/// `None` when neither `XDG_DATA_HOME` nor `HOME` is set (absolute paths only, as the
/// XDG specification asks: a relative `XDG_DATA_HOME` is ignored).
pub fn default_sqlite_path() -> Option<PathBuf> {
    default_sqlite_path_from(
        std::env::var_os("XDG_DATA_HOME").as_deref().map(Path::new),
        std::env::var_os("HOME").as_deref().map(Path::new),
    )
}

/// [`default_sqlite_path`] over given variables (testable without touching the
/// process environment).
pub fn default_sqlite_path_from(
    xdg_data_home: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let data = match xdg_data_home.filter(|dir| dir.is_absolute()) {
        Some(dir) => dir.to_path_buf(),
        None => home.filter(|dir| dir.is_absolute())?.join(".local/share"),
    };
    Some(data.join("tollgate").join("inventory.sqlite"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_url_form_names_its_engine() {
        let cases = [
            ("sqlite:/tmp/a.sqlite", "sqlite:/tmp/a.sqlite"),
            ("sqlite:///tmp/a.sqlite", "sqlite:/tmp/a.sqlite"),
            ("/tmp/a.sqlite", "sqlite:/tmp/a.sqlite"),
            ("inventory.sqlite", "sqlite:inventory.sqlite"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgresql://h:5432/db", "postgresql://h:5432/db"),
        ];
        for (given, shown) in cases {
            assert_eq!(StoreUrl::parse(given).unwrap().redacted(), shown, "{given}");
        }
        assert!(matches!(
            StoreUrl::parse("postgres://h/db").unwrap(),
            StoreUrl::Postgres(_)
        ));
    }

    #[test]
    fn unknown_schemes_and_empty_urls_are_refused() {
        for bad in ["", "mysql://h/db", "sqlite:"] {
            let err = StoreUrl::parse(bad).unwrap_err();
            assert_eq!(err.kind(), InventoryErrorKind::InvalidUrl, "{bad}");
        }
    }

    #[test]
    fn a_password_never_prints() {
        let cases = [
            (
                "postgres://u:secret@127.0.0.1:1/db",
                "postgres://u:***@127.0.0.1:1/db",
            ),
            (
                "postgresql://u:p%40ss@h/db?sslmode=disable",
                "postgresql://u:***@h/db?sslmode=disable",
            ),
            (
                "postgres://h/db?user=u&password=secret",
                "postgres://h/db?user=u&password=***",
            ),
            ("postgres://u:se@cret@h/db", "postgres://u:***@h/db"),
        ];
        for (given, shown) in cases {
            let url = StoreUrl::parse(given).unwrap();
            assert_eq!(url.redacted(), shown);
            assert_eq!(url.to_string(), shown);
            assert!(!format!("{url:?}").contains("secret"));
        }
    }

    #[test]
    fn the_default_file_follows_xdg_then_home() {
        let xdg = default_sqlite_path_from(Some(Path::new("/x")), Some(Path::new("/h")));
        assert_eq!(xdg, Some(PathBuf::from("/x/tollgate/inventory.sqlite")));
        let home = default_sqlite_path_from(Some(Path::new("rel")), Some(Path::new("/h")));
        assert_eq!(
            home,
            Some(PathBuf::from("/h/.local/share/tollgate/inventory.sqlite"))
        );
        assert_eq!(default_sqlite_path_from(None, None), None);
    }
}
