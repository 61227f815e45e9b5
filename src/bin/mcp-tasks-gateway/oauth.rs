//! OAuth for the gateway: tower-mcp's `OAuthLayer` outside `TasksLayer`, so
//! that every request carries a valid bearer token for this resource and
//! each task belongs to the token's subject.
//!
//! Keys come from one of:
//!
//! - `--oauth-jwks https://…` (or `http://`): fetched and cached by
//!   tower-mcp's `JwksValidator` (refetched when a token names an unknown
//!   key);
//! - `--oauth-jwks FILE`: a JWKS document read once at start;
//! - `--oauth-hs256-secret-file FILE`: a shared HS256 secret (tests, local
//!   setups).
//!
//! Whatever the keys, a token must carry `exp`, this issuer's `iss`, and a
//! `sub` or `client_id` (the task owner: without one, every such token would
//! share one owner's tasks); a `nbf` in the future is refused. The audience
//! is checked by `OAuthLayer` against the resource.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tower_mcp::oauth::{
    JwksValidator, JwtValidator, OAuthError, OAuthLayer, ProtectedResourceMetadata, ScopePolicy,
    TokenClaims, TokenValidator,
};

use crate::settings::Args;

/// How far clocks may disagree, as jsonwebtoken allows for `exp`.
const LEEWAY_SECONDS: u64 = 60;

/// The token checks: the signature by the configured keys, then the claims
/// every task owner needs.
#[derive(Clone)]
pub struct Validator {
    keys: Keys,
    issuer: Arc<str>,
}

impl TokenValidator for Validator {
    async fn validate_token(&self, token: &str) -> Result<TokenClaims, OAuthError> {
        let claims = match &self.keys {
            Keys::Secret(validator) => validator.validate_token(token).await?,
            Keys::Fetched(validator) => validator.validate_token(token).await?,
            Keys::File(keys) => keys.validate(token)?,
        };
        check_claims(&claims, &self.issuer)?;
        Ok(claims)
    }
}

/// The claims tower-mcp's validators leave optional.
fn check_claims(claims: &TokenClaims, issuer: &str) -> Result<(), OAuthError> {
    let invalid = |description: &str| OAuthError::InvalidToken {
        description: description.to_owned(),
    };
    if claims.exp.is_none() {
        return Err(invalid("the token has no exp"));
    }
    if claims.iss.as_deref() != Some(issuer) {
        return Err(invalid("the token is not from the expected issuer"));
    }
    if claims.sub.is_none() && claims.client_id.is_none() {
        return Err(invalid("the token has neither sub nor client_id"));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    if let Some(nbf) = claims.extra.get("nbf").and_then(serde_json::Value::as_u64)
        && nbf > now + LEEWAY_SECONDS
    {
        return Err(invalid("the token is not valid yet (nbf)"));
    }
    Ok(())
}

/// The keys tokens are checked against, chosen on the command line.
#[derive(Clone)]
pub enum Keys {
    /// HS256 with a shared secret.
    Secret(JwtValidator),
    /// Keys fetched from a JWKS URL.
    Fetched(JwksValidator),
    /// Keys read from a JWKS file.
    File(Arc<FileKeys>),
}

/// A JWKS document read from a file.
pub struct FileKeys {
    keys: JwkSet,
    issuer: String,
}

impl FileKeys {
    /// Checks `token`'s signature with the key its header names (or the
    /// only key), by that key's own algorithm only, and its issuer and
    /// expiry. The audience is checked by `OAuthLayer`.
    fn validate(&self, token: &str) -> Result<TokenClaims, OAuthError> {
        let invalid = |description: String| OAuthError::InvalidToken { description };
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(e.to_string()))?;
        let jwk = match (&header.kid, self.keys.keys.as_slice()) {
            (Some(kid), _) => self.keys.find(kid),
            (None, [only]) => Some(only),
            (None, _) => None,
        }
        .ok_or_else(|| invalid("no key in the JWKS file matches the token".to_owned()))?;
        let algorithm = key_algorithm(jwk)
            .ok_or_else(|| invalid("the JWKS key has no usable algorithm".to_owned()))?;
        if header.alg != algorithm {
            return Err(invalid(format!(
                "the token is signed with {:?}, its key is for {algorithm:?}",
                header.alg
            )));
        }
        let key = DecodingKey::from_jwk(jwk).map_err(|e| invalid(e.to_string()))?;
        let mut validation = Validation::new(algorithm);
        validation.validate_aud = false;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss"]);
        validation.set_issuer(&[&self.issuer]);
        jsonwebtoken::decode::<TokenClaims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => OAuthError::ExpiredToken,
                _ => invalid(e.to_string()),
            })
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

/// The OAuth settings, when OAuth is on.
pub struct OAuth {
    /// The layer, for the MCP path.
    pub layer: OAuthLayer<Validator>,
    /// The RFC 9728 metadata, served at `path`.
    pub metadata: ProtectedResourceMetadata,
    /// Where the metadata is served.
    pub path: String,
}

/// The OAuth layer the settings ask for, or `None` without `--oauth-issuer`.
/// `default_resource` is the gateway's own URL, used when no
/// `--oauth-audience` is given; `None` when that URL is not one clients can
/// use (a wildcard listen address), so the audience must be given.
pub async fn from_args(
    args: &Args,
    default_resource: Option<&str>,
) -> Result<Option<OAuth>, String> {
    let Some(issuer) = args.oauth_issuer.clone() else {
        if args.oauth_jwks.is_some() || args.oauth_hs256_secret_file.is_some() {
            return Err("--oauth-jwks and --oauth-hs256-secret-file need --oauth-issuer".into());
        }
        return Ok(None);
    };
    let keys = match (&args.oauth_jwks, &args.oauth_hs256_secret_file) {
        (Some(_), Some(_)) => {
            return Err("give --oauth-jwks or --oauth-hs256-secret-file, not both".into());
        }
        (None, None) => {
            return Err("--oauth-issuer needs --oauth-jwks or --oauth-hs256-secret-file".into());
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
            Keys::Secret(JwtValidator::from_secret(secret).expected_issuer(&issuer))
        }
        (Some(jwks), None) if jwks.starts_with("https://") || jwks.starts_with("http://") => {
            let validator = JwksValidator::builder(jwks.clone())
                .expected_issuer(&issuer)
                .build()
                .await
                .map_err(|e| format!("--oauth-jwks {jwks}: {e}"))?;
            Keys::Fetched(validator)
        }
        (Some(file), None) => {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
            let keys: JwkSet =
                serde_json::from_str(&text).map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
            if keys.keys.is_empty() {
                return Err(format!("--oauth-jwks {file}: no keys"));
            }
            Keys::File(Arc::new(FileKeys {
                keys,
                issuer: issuer.clone(),
            }))
        }
    };
    let validator = Validator {
        keys,
        issuer: issuer.as_str().into(),
    };
    let resource = match (&args.oauth_audience, default_resource) {
        (Some(audience), _) => audience.clone(),
        (None, Some(own)) => own.to_owned(),
        (None, None) => {
            return Err(
                "--oauth-audience URL is required when listening on a wildcard address: \
                 it must be the URL clients use"
                    .into(),
            );
        }
    };
    let mut metadata = ProtectedResourceMetadata::new(resource.clone()).authorization_server(
        args.oauth_authorization_server
            .clone()
            .unwrap_or_else(|| issuer.clone()),
    );
    let mut scopes = ScopePolicy::new();
    for scope in &args.oauth_scopes {
        metadata = metadata.scope(scope.clone());
        scopes = scopes.default_scope(scope.clone());
    }
    metadata
        .validate()
        .map_err(|e| format!("OAuth resource {resource:?}: {e}"))?;
    let path = ProtectedResourceMetadata::well_known_path_for_resource(&resource)
        .map_err(|e| format!("OAuth resource {resource:?}: {e}"))?;
    let layer = OAuthLayer::new(validator, metadata.clone()).scope_policy(scopes);
    Ok(Some(OAuth {
        layer,
        metadata,
        path,
    }))
}
