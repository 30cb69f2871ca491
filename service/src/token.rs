//! `ApiToken`: the bearer token every API request (but `/healthz` and `/metrics`) must
//! carry. Generated on first start from the OS random source and kept in
//! `STATE_DIR/api-token`, mode 0600, so the CLI client and the user can read it and
//! nobody else can.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Random bytes in a token (hex-encoded on disk: 64 characters).
const TOKEN_BYTES: usize = 32;

/// The API token (its `Debug` does not show it).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken(String);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(..)")
    }
}

/// The token file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("API token {}: {message}", .path.display())]
pub struct TokenError {
    path: PathBuf,
    message: String,
}

fn token_error(path: &Path, message: impl Into<String>) -> TokenError {
    TokenError {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

impl ApiToken {
    /// Read the token at `path`, or create it (0600) if there is none.
    pub fn load_or_create(path: &Path) -> Result<ApiToken, TokenError> {
        match ApiToken::read(path) {
            Ok(token) => return Ok(token),
            Err(e) if !path.exists() => drop(e),
            Err(e) => return Err(e),
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| token_error(path, format!("no OS randomness for a new token: {e}")))?;
        let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        match created {
            Ok(mut file) => {
                file.write_all(format!("{text}\n").as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| token_error(path, format!("cannot write it: {e}")))?;
                Ok(ApiToken(text))
            }
            // Another process created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => ApiToken::read(path),
            Err(e) => Err(token_error(path, format!("cannot create it: {e}"))),
        }
    }

    /// Read an existing token: a regular file owned by this user; a mode looser than
    /// 0600 is tightened (only its owner could have loosened it).
    pub fn read(path: &Path) -> Result<ApiToken, TokenError> {
        let meta = std::fs::symlink_metadata(path)
            .map_err(|e| token_error(path, format!("cannot read it: {e}; is `tollgate serve` running with the same TOLLGATE_STATE_DIR?")))?;
        if !meta.is_file() {
            return Err(token_error(
                path,
                "not a regular file; move it aside and restart the service",
            ));
        }
        if meta.uid() != tollgate_storage::current_uid() {
            return Err(token_error(
                path,
                format!(
                    "owned by uid {}, not by this user; remove it and restart the service",
                    meta.uid()
                ),
            ));
        }
        if meta.mode() & 0o777 != 0o600 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| token_error(path, format!("cannot restrict it to mode 0600: {e}")))?;
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| token_error(path, format!("cannot read it: {e}")))?;
        let text = text.trim();
        if text.len() < 32 || !text.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(token_error(
                path,
                "not a token; delete it and restart the service to make a new one",
            ));
        }
        Ok(ApiToken(text.to_string()))
    }

    /// A fixed token for unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> ApiToken {
        ApiToken("0".repeat(64))
    }

    /// The token text (to send as `Authorization: Bearer ...`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compare with a presented token in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), presented.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_is_private_and_stable_across_loads() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("api-token");
        let first = ApiToken::load_or_create(&path).unwrap();
        assert_eq!(first.as_str().len(), 64);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(ApiToken::load_or_create(&path).unwrap(), first);
        assert!(first.matches(first.as_str()));
        assert!(!first.matches("nope"));
        assert!(!format!("{first:?}").contains(first.as_str()));
    }

    #[test]
    fn a_loose_mode_is_tightened_and_garbage_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("api-token");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        ApiToken::read(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&path, "short\n").unwrap();
        assert!(ApiToken::read(&path)
            .unwrap_err()
            .to_string()
            .contains("not a token"));
    }
}
