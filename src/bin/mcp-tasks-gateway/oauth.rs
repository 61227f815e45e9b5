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

use std::sync::Arc;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation};
use tower_mcp::oauth::{
    JwksValidator, JwtValidator, OAuthError, OAuthLayer, ProtectedResourceMetadata, ScopePolicy,
    TokenClaims, TokenValidator,
};

use crate::settings::Args;

/// The keys tokens are checked against, chosen on the command line.
#[derive(Clone)]
pub enum Validator {
    /// HS256 with a shared secret.
    Secret(JwtValidator),
    /// Keys fetched from a JWKS URL.
    Fetched(JwksValidator),
    /// Keys read from a JWKS file.
    File(Arc<FileKeys>),
}

impl TokenValidator for Validator {
    async fn validate_token(&self, token: &str) -> Result<TokenClaims, OAuthError> {
        match self {
            Self::Secret(validator) => validator.validate_token(token).await,
            Self::Fetched(validator) => validator.validate_token(token).await,
            Self::File(keys) => keys.validate(token),
        }
    }
}

/// A JWKS document read from a file.
pub struct FileKeys {
    keys: JwkSet,
    issuer: String,
}

impl FileKeys {
    /// Checks `token`'s signature with the key its header names (or the
    /// only key), its issuer, and its expiry when it has one. The audience
    /// is checked by `OAuthLayer`.
    fn validate(&self, token: &str) -> Result<TokenClaims, OAuthError> {
        let invalid = |description: String| OAuthError::InvalidToken { description };
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(e.to_string()))?;
        let jwk = match (&header.kid, self.keys.keys.as_slice()) {
            (Some(kid), _) => self.keys.find(kid),
            (None, [only]) => Some(only),
            (None, _) => None,
        }
        .ok_or_else(|| invalid("no key in the JWKS file matches the token".to_owned()))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| invalid(e.to_string()))?;
        let mut validation = Validation::new(header.alg);
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        validation.set_issuer(&[&self.issuer]);
        jsonwebtoken::decode::<TokenClaims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => OAuthError::ExpiredToken,
                _ => invalid(e.to_string()),
            })
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
/// `--oauth-audience` is given.
pub async fn from_args(args: &Args, default_resource: &str) -> Result<Option<OAuth>, String> {
    let Some(issuer) = args.oauth_issuer.clone() else {
        if args.oauth_jwks.is_some() || args.oauth_hs256_secret_file.is_some() {
            return Err("--oauth-jwks and --oauth-hs256-secret-file need --oauth-issuer".into());
        }
        return Ok(None);
    };
    let validator = match (&args.oauth_jwks, &args.oauth_hs256_secret_file) {
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
            Validator::Secret(JwtValidator::from_secret(secret).expected_issuer(&issuer))
        }
        (Some(jwks), None) if jwks.starts_with("https://") || jwks.starts_with("http://") => {
            let validator = JwksValidator::builder(jwks.clone())
                .expected_issuer(&issuer)
                .build()
                .await
                .map_err(|e| format!("--oauth-jwks {jwks}: {e}"))?;
            Validator::Fetched(validator)
        }
        (Some(file), None) => {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
            let keys: JwkSet =
                serde_json::from_str(&text).map_err(|e| format!("--oauth-jwks {file}: {e}"))?;
            if keys.keys.is_empty() {
                return Err(format!("--oauth-jwks {file}: no keys"));
            }
            Validator::File(Arc::new(FileKeys {
                keys,
                issuer: issuer.clone(),
            }))
        }
    };
    let resource = args
        .oauth_audience
        .clone()
        .unwrap_or_else(|| default_resource.to_owned());
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
