//! The operator's credential: a bearer token the gateway reads from a file
//! or the environment, never from its command line (where `ps` shows it).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use subtle::ConstantTimeEq;

/// The fewest bytes a credential may have: 128 bits as hex, or a long
/// passphrase. A shorter one is refused at start, not at the first guess.
pub const MIN_LEN: usize = 16;

/// The most bytes a credential may have (and that sign-in reads).
pub const MAX_LEN: usize = 4096;

/// Why a credential was refused.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// Fewer than [`MIN_LEN`] bytes.
    #[error("the console's credential is shorter than {MIN_LEN} bytes")]
    TooShort,
    /// More than [`MAX_LEN`] bytes.
    #[error("the console's credential is longer than {MAX_LEN} bytes")]
    TooLong,
    /// Not printable ASCII (it travels in an `Authorization` header).
    #[error("the console's credential holds a character that is not printable ASCII")]
    NotPrintable,
    /// The file could not be read.
    #[error("cannot read the console's credential from {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the system said.
        reason: String,
    },
}

/// The operator's bearer token; cheap to clone, never printed.
#[derive(Clone)]
pub struct Credential(Arc<[u8]>);

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(…)")
    }
}

impl Credential {
    /// The token `text`, its surrounding white space left out; at least
    /// [`MIN_LEN`] and at most [`MAX_LEN`] bytes of printable ASCII.
    pub fn new(text: impl AsRef<str>) -> Result<Self, CredentialError> {
        let text = text.as_ref().trim();
        if text.len() < MIN_LEN {
            return Err(CredentialError::TooShort);
        }
        if text.len() > MAX_LEN {
            return Err(CredentialError::TooLong);
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(CredentialError::NotPrintable);
        }
        Ok(Self(Arc::from(text.as_bytes())))
    }

    /// The token held in the file at `path` (a final newline is left out).
    pub fn from_file(path: &Path) -> Result<Self, CredentialError> {
        let text = std::fs::read_to_string(path).map_err(|e| CredentialError::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::new(text)
    }

    /// Whether `offered` is the token, in time that does not depend on
    /// where the two first differ.
    pub fn matches(&self, offered: &[u8]) -> bool {
        offered.len() == self.0.len() && bool::from(offered.ct_eq(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_long_printable_and_matched_whole() {
        assert!(matches!(
            Credential::new("short"),
            Err(CredentialError::TooShort)
        ));
        assert!(matches!(
            Credential::new("sixteen bytes and a space"),
            Err(CredentialError::NotPrintable)
        ));
        let credential = Credential::new("  0123456789abcdef0123\n").unwrap();
        assert!(credential.matches(b"0123456789abcdef0123"));
        assert!(!credential.matches(b"0123456789abcdef012"));
        assert!(!credential.matches(b"0123456789abcdef0124"));
        assert!(!credential.matches(b""));
        assert_eq!(format!("{credential:?}"), "Credential(…)");
    }
}
