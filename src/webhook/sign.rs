//! The signature on every delivery: Standard Webhooks `v1`, which the
//! Events extension profiles.
//!
//! | Piece | Value |
//! |-------|-------|
//! | key | the bytes the subscriber's `whsec_<base64>` secret decodes to (24 to 64 of them), never the text itself |
//! | signed content | `webhook-id` `.` `webhook-timestamp` (Unix seconds) `.` the body's exact bytes |
//! | `webhook-signature` | `v1,` then the Base64 of HMAC-SHA256(key, content) |

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The text a secret starts with.
const PREFIX: &str = "whsec_";

/// A subscriber's signing secret, decoded. Its `Debug` shows no byte of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

/// Why a secret's text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// It does not start with `whsec_`.
    #[error("the secret must start with whsec_")]
    Prefix,
    /// What follows `whsec_` is not Base64.
    #[error("the secret is not base64 after whsec_")]
    Encoding,
    /// It decodes to fewer than 24 or more than 64 bytes.
    #[error("the secret must decode to 24 to 64 bytes")]
    Length,
}

impl Secret {
    /// Parses `whsec_<base64>` (24 to 64 bytes once decoded).
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text.strip_prefix(PREFIX).ok_or(SecretError::Prefix)?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::Encoding)?;
        if !(24..=64).contains(&bytes.len()) {
            return Err(SecretError::Length);
        }
        Ok(Self(bytes))
    }

    /// The secret as text again (`whsec_<base64>`), as a store keeps it.
    pub fn to_text(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The `webhook-signature` value of a delivery: `v1,<base64>`.
pub fn sign(secret: &Secret, id: &str, timestamp: u64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret.0)
        .expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification: a signature any
    /// other implementation of it computes for the same message.
    #[test]
    fn signs_the_standard_webhooks_example() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_need_the_prefix_base64_and_24_to_64_bytes() {
        assert_eq!(Secret::parse("MfKQ9r8G"), Err(SecretError::Prefix));
        assert_eq!(Secret::parse("whsec_!!!"), Err(SecretError::Encoding));
        let short = format!("whsec_{}", STANDARD.encode([7u8; 23]));
        assert_eq!(Secret::parse(&short), Err(SecretError::Length));
        let long = format!("whsec_{}", STANDARD.encode([7u8; 65]));
        assert_eq!(Secret::parse(&long), Err(SecretError::Length));
        let fine = format!("whsec_{}", STANDARD.encode([7u8; 32]));
        assert_eq!(Secret::parse(&fine).unwrap().to_text(), fine);
        assert_eq!(format!("{:?}", Secret::parse(&fine).unwrap()), "Secret(..)");
    }
}
