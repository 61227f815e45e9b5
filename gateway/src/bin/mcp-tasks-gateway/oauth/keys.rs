//! The keys a token's signature is checked with, chosen on the command
//! line:
//!
//! | Option                              | Keys                                                        |
//! |-------------------------------------|-------------------------------------------------------------|
//! | `--oauth-jwks https://…` (`http://`) | fetched and cached by tower-mcp's `JwksValidator`, fetched again when a token names an unknown key |
//! | `--oauth-jwks FILE`                 | a JWKS document read once at start                          |
//! | `--oauth-hs256-secret-file FILE`    | a shared HS256 secret (tests, local setups)                 |
//!
//! A key source checks the signature and its algorithm only. Every claim,
//! `exp` included, is checked afterwards in `claims.rs`, so that one clock
//! leeway holds whatever the keys: tower-mcp's validators would check
//! `exp` with jsonwebtoken's fixed 60 s.

use std::str::FromStr;
use std::sync::Arc;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tower_mcp::oauth::{JwksValidator, JwtValidator, TokenClaims, TokenValidator};

use crate::settings::Args;

/// The keys tokens are checked against.
#[derive(Clone)]
pub enum Keys {
    /// HS256 with a shared secret.
    Secret(JwtValidator),
    /// Keys fetched from a JWKS URL.
    Fetched(JwksValidator),
    /// Keys read from a JWKS file.
    File(Arc<FileKeys>),
}

impl Keys {
    /// The keys `args` name (`--oauth-jwks` or `--oauth-hs256-secret-file`);
    /// a JWKS URL is fetched now.
    pub async fn from_args(args: &Args) -> Result<Self, String> {
        match (&args.oauth_jwks, &args.oauth_hs256_secret_file) {
            (Some(_), Some(_)) => {
                Err("give --oauth-jwks or --oauth-hs256-secret-file, not both".into())
            }
            (None, None) => {
                Err("--oauth-issuer needs --oauth-jwks or --oauth-hs256-secret-file".into())
            }
            (None, Some(file)) => {
                let secret = std::fs::read(file)
                    .map_err(|e| format!("--oauth-hs256-secret-file {}: {e}", file.display()))?;
                let secret = secret.trim_ascii();
                if secret.is_empty() {
                    return Err(format!(
                        "--oauth-hs256-secret-file {} is empty",
                        file.display()
                    ));
                }
                Ok(Self::Secret(
                    JwtValidator::from_secret(secret).disable_exp_validation(),
                ))
            }
            (Some(jwks), None) if jwks.starts_with("https://") || jwks.starts_with("http://") => {
                let validator = JwksValidator::builder(jwks.clone())
                    .disable_exp_validation()
                    .build()
                    .await
                    .map_err(|e| format!("--oauth-jwks {jwks}: {e}"))?;
                Ok(Self::Fetched(validator))
            }
            (Some(file), None) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
                let keys: JwkSet =
                    serde_json::from_str(&text).map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
                if keys.keys.is_empty() {
                    return Err(format!("--oauth-jwks {file}: no keys"));
                }
                Ok(Self::File(Arc::new(FileKeys { keys })))
            }
        }
    }

    /// The claims of `token` when one of the keys signed it, by that key's
    /// algorithm; otherwise what went wrong, for the log only (it may name
    /// keys and algorithms).
    pub async fn verify(&self, token: &str) -> Result<TokenClaims, String> {
        let verified = match self {
            Self::Secret(validator) => validator.validate_token(token).await,
            Self::Fetched(validator) => validator.validate_token(token).await,
            Self::File(keys) => return keys.verify(token),
        };
        verified.map_err(|error| error.to_string())
    }
}

/// A JWKS document read from a file.
pub struct FileKeys {
    keys: JwkSet,
}

impl FileKeys {
    /// Checks `token`'s signature with the key its header names (or the
    /// only key), by that key's own algorithm only.
    fn verify(&self, token: &str) -> Result<TokenClaims, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
        let jwk = match (&header.kid, self.keys.keys.as_slice()) {
            (Some(kid), _) => self.keys.find(kid),
            (None, [only]) => Some(only),
            (None, _) => None,
        }
        .ok_or_else(|| format!("no key in the JWKS file has the id {:?}", header.kid))?;
        let algorithm = key_algorithm(jwk).ok_or("the JWKS key has no usable algorithm")?;
        if header.alg != algorithm {
            return Err(format!(
                "the token is signed with {:?}, its key is for {algorithm:?}",
                header.alg
            ));
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
        let mut validation = Validation::new(algorithm);
        validation.validate_aud = false;
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        jsonwebtoken::decode::<TokenClaims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| e.to_string())
    }
}

/// The one algorithm a JWKS key verifies: its `alg`, or the usual one for
/// its key type; `None` for a symmetric or unknown key.
fn key_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    if let Some(declared) = jwk.common.key_algorithm {
        return Algorithm::from_str(&declared.to_string())
            .ok()
            .filter(|algorithm| {
                !matches!(
                    algorithm,
                    Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
                )
            });
    }
    match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Some(Algorithm::ES256),
            EllipticCurve::P384 => Some(Algorithm::ES384),
            _ => None,
        },
        AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
        AlgorithmParameters::OctetKeyPair(_) => Some(Algorithm::EdDSA),
        _ => None,
    }
}
