//! `ConfigError`: a refused configuration file, naming the file, the line and the key so
//! the user can go straight to it.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// The configuration file was refused; nothing starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {}{message}", .file.display(), .line.map(|l| format!(":{l}")).unwrap_or_default(), .key.as_ref().map(|k| format!("`{k}`: ")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The key (dotted, e.g. `target[1].regions`), when known.
    pub key: Option<String>,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// The 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Turns spans into errors for one file.
pub(crate) struct Locator<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl Locator<'_> {
    pub fn at(
        &self,
        span: Option<Range<usize>>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            file: self.file.to_path_buf(),
            line: span.map(|s| line_of(self.text, s.start)),
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// A stage-one (serde) error: its span's line, and the key written on that line.
    pub fn parse(&self, err: &toml::de::Error) -> ConfigError {
        let line = err.span().map(|s| line_of(self.text, s.start));
        let key = line.and_then(|l| written_key(self.text.lines().nth(l - 1)?));
        let mut message = err.message().trim().to_string();
        if message.is_empty() {
            // toml says nothing about some characters it refuses (a control character
            // in a comment): name the character and where it is.
            message = match err.span() {
                Some(span) => unreadable_at(self.text, span.start),
                None => "not valid TOML".to_string(),
            };
        }
        ConfigError {
            file: self.file.to_path_buf(),
            line,
            key,
            message,
        }
    }
}

/// The key a line assigns (`name = ...`), if it is a line that assigns one: not a
/// comment, and only the characters a key may be written with (bare or quoted).
fn written_key(line: &str) -> Option<String> {
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let plausible = !key.is_empty()
        && !key.starts_with('#')
        && !key.starts_with('[')
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || "-_.\"' ".contains(c));
    plausible.then(|| key.to_string())
}

/// "not valid TOML at column N (U+XXXX)", for an error toml gives no message for.
fn unreadable_at(text: &str, offset: usize) -> String {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    match text[offset..].chars().next() {
        Some(c) if c.is_control() => format!(
            "not valid TOML at column {column}: control character U+{:04X} (only tabs are allowed, also in comments)",
            c as u32
        ),
        Some(c) => format!("not valid TOML at column {column} ({c:?})"),
        None => format!("not valid TOML at column {column} (the file ends here)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_one_based() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
