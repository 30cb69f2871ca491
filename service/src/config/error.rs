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
        let key = line.and_then(|l| {
            let text = self.text.lines().nth(l - 1)?;
            let (key, _) = text.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| key.to_string())
        });
        ConfigError {
            file: self.file.to_path_buf(),
            line,
            key,
            message: err.message().trim().to_string(),
        }
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
