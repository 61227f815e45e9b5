//! OAuth for the gateway: tower-mcp's `OAuthLayer` outside `TasksLayer`, so
//! that every request carries a valid bearer token for this resource and
//! each task belongs to the token's subject (or client).
//!
//! `keys.rs` checks a token's signature with the configured keys,
//! `claims.rs` what it says (dates, issuer, audience, owner, scopes) and
//! what a refused client is told. Here the options become the two, and
//! the RFC 9728 metadata:
//!
//! | Option              | Is                                                                | Default |
//! |---------------------|-------------------------------------------------------------------|---------|
//! | `--oauth-resource`  | the metadata's `resource`, the URL clients ask tokens for         | the one `--oauth-audience` when it is a URL (as before this option), else the gateway's URL |
//! | `--oauth-audience`  | the `aud` values accepted, repeatable: a URL, or a client id (Keycloak) | the resource |
//! | `--oauth-leeway`    | how far clocks may disagree, on `exp`, `nbf` and `iat`            | 5 s     |

mod claims;
mod keys;

use std::time::Duration;

use tower_mcp::oauth::{OAuthLayer, ProtectedResourceMetadata};

use crate::settings::{Args, Human};
use claims::{Rules, Validator};
use keys::Keys;

/// How far clocks may disagree without `--oauth-leeway`: machines kept by
/// NTP agree within well under a second, and a token just minted on a
/// slightly fast clock should still pass; jsonwebtoken's 60 s would honour
/// an expired (maybe stolen) token a minute longer.
const LEEWAY: Duration = Duration::from_secs(5);

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
/// `own_url` is the gateway's own URL, the resource when none is given;
/// `None` when that URL is not one clients can use (a wildcard listen
/// address), so the resource must be given.
pub async fn from_args(args: &Args, own_url: Option<&str>) -> Result<Option<OAuth>, String> {
    let Some(issuer) = args.oauth_issuer.clone() else {
        return without_issuer(args).map(|()| None);
    };
    let keys = Keys::from_args(args).await?;
    let resource = resource(args, own_url)?;
    let audiences = if args.oauth_audience.is_empty() {
        vec![resource.clone()]
    } else {
        args.oauth_audience.clone()
    };
    if audiences.iter().any(|audience| audience.trim().is_empty()) {
        return Err("--oauth-audience cannot be empty".into());
    }
    let leeway = match args.oauth_leeway {
        None => LEEWAY,
        Some(Human(Some(leeway))) => leeway,
        Some(Human(None)) => return Err("--oauth-leeway cannot be none".into()),
    };
    let mut metadata = ProtectedResourceMetadata::new(resource.clone()).authorization_server(
        args.oauth_authorization_server
            .clone()
            .unwrap_or_else(|| issuer.clone()),
    );
    for scope in &args.oauth_scopes {
        metadata = metadata.scope(scope.clone());
    }
    metadata
        .validate()
        .map_err(|e| format!("OAuth resource {resource:?}: {e}"))?;
    let path = ProtectedResourceMetadata::well_known_path_for_resource(&resource)
        .map_err(|e| format!("OAuth resource {resource:?}: {e}"))?;
    let rules = Rules {
        issuer,
        resource,
        audiences,
        leeway: leeway.as_secs(),
        scopes: args.oauth_scopes.clone(),
    };
    // The scopes are checked by the validator, with the rest.
    let layer = OAuthLayer::new(Validator::new(keys, rules), metadata.clone());
    Ok(Some(OAuth {
        layer,
        metadata,
        path,
    }))
}

/// Refuses OAuth options without `--oauth-issuer`: they would be ignored,
/// and the gateway open to anyone.
fn without_issuer(args: &Args) -> Result<(), String> {
    let given = args.oauth_jwks.is_some()
        || args.oauth_hs256_secret_file.is_some()
        || args.oauth_resource.is_some()
        || !args.oauth_audience.is_empty()
        || args.oauth_leeway.is_some()
        || !args.oauth_scopes.is_empty()
        || args.oauth_authorization_server.is_some();
    if given {
        return Err("the --oauth-* options need --oauth-issuer (without it OAuth is off)".into());
    }
    Ok(())
}

/// The RFC 9728 resource: `--oauth-resource`; else the one
/// `--oauth-audience` when it is a URL (what that option meant before
/// `--oauth-resource`); else the gateway's own URL.
fn resource(args: &Args, own_url: Option<&str>) -> Result<String, String> {
    if let Some(resource) = &args.oauth_resource {
        return Ok(resource.clone());
    }
    if let [only] = args.oauth_audience.as_slice()
        && (only.starts_with("https://") || only.starts_with("http://"))
    {
        return Ok(only.clone());
    }
    own_url.map(str::to_owned).ok_or_else(|| {
        "--oauth-resource URL is required when listening on a wildcard address: \
         it must be the URL clients use"
            .to_owned()
    })
}
