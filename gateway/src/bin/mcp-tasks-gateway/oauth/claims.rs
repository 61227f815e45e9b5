//! What a token must say once its signature holds, and what a client is
//! told when it does not.
//!
//! | Claim              | Refused when                                         | Why                                                        |
//! |--------------------|------------------------------------------------------|------------------------------------------------------------|
//! | the signature      | not a JWT, or not signed by a configured key with that key's algorithm | only the issuer's keys vouch for a token |
//! | `exp`              | missing, or past by more than the leeway             | a token without an end is valid forever                    |
//! | `nbf`, `iat`       | later than now by more than the leeway               | a token from the future is forged or minted on a wrong clock |
//! | `iss`              | not `--oauth-issuer`                                 | another issuer's subjects are other people                 |
//! | `aud`              | none of the accepted audiences                       | a token for another resource must not be replayed here     |
//! | `sub`, `client_id` | neither is a non-blank value                         | the owner of the token's tasks: a blank one would be one owner shared by every such token |
//! | `scope`            | lacks one of `--oauth-scopes` (403)                  | the operator's requirement                                 |
//!
//! The leeway (`--oauth-leeway`, 5 s) is the same for every date. The
//! client gets one of a few fixed descriptions (the consts below and
//! tower-mcp's own for an expired token, another audience and a missing
//! scope); what exactly went wrong (jsonwebtoken's error, a key id, an
//! algorithm, the claim's value) goes to the log, one INFO line per
//! refused token, for the operator.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_tasks::DefaultOwner;
use tower_mcp::oauth::{OAuthError, TokenAudience, TokenClaims, TokenValidator};

use super::keys::Keys;

/// Not a JWT, or not signed by a trusted key.
const UNVERIFIED: &str = "the token is malformed or not signed by a trusted key";
/// `exp` missing.
const INCOMPLETE: &str = "the token lacks a claim this resource requires";
/// `nbf` or `iat` in the future.
const NOT_YET: &str = "the token is not valid yet";
/// Another issuer.
const OTHER_ISSUER: &str = "the token is not from the trusted issuer";
/// No `sub` nor `client_id` that can own tasks.
const NO_OWNER: &str = "the token names no subject or client";

/// What the gateway accepts of a token whose signature holds.
pub struct Rules {
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The RFC 9728 resource, which `OAuthLayer` looks for in `aud`.
    pub resource: String,
    /// The `aud` values accepted: a token must carry one of them.
    pub audiences: Vec<String>,
    /// How far clocks may disagree, in seconds, on `exp`, `nbf` and `iat`.
    pub leeway: u64,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
}

/// The token checks `OAuthLayer` runs: the signature by the configured
/// keys, then the [`Rules`].
#[derive(Clone)]
pub struct Validator {
    keys: Keys,
    rules: Arc<Rules>,
}

impl Validator {
    /// Checks tokens signed by `keys` against `rules`.
    pub fn new(keys: Keys, rules: Rules) -> Self {
        Self {
            keys,
            rules: Arc::new(rules),
        }
    }
}

impl TokenValidator for Validator {
    async fn validate_token(&self, token: &str) -> Result<TokenClaims, OAuthError> {
        let checked = match self.keys.verify(token).await {
            Ok(claims) => self.rules.check(claims, now()),
            Err(detail) => Err(Refused::invalid(UNVERIFIED, detail)),
        };
        checked.map_err(|refused| {
            // Both quoted and escaped: they may hold what the token says.
            let told = refused.error.to_string();
            tracing::info!(told = ?told, detail = ?refused.detail, "bearer token refused");
            refused.error
        })
    }
}

/// A refused token: what the client is told, and what the log is told.
struct Refused {
    error: OAuthError,
    detail: String,
}

impl Refused {
    /// `invalid_token` with one of the fixed descriptions.
    fn invalid(description: &'static str, detail: String) -> Self {
        let error = OAuthError::InvalidToken {
            description: description.to_owned(),
        };
        Self { error, detail }
    }
}

/// Seconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

impl Rules {
    /// `claims` when they hold at `now`; the claims passed on name the
    /// resource as their audience when they named another accepted one.
    fn check(&self, mut claims: TokenClaims, now: u64) -> Result<TokenClaims, Refused> {
        if claims.iss.as_deref() != Some(self.issuer.as_str()) {
            let detail = format!("iss {:?}", claims.iss);
            return Err(Refused::invalid(OTHER_ISSUER, detail));
        }
        self.check_dates(&claims, now)?;
        self.check_audience(&mut claims)?;
        if DefaultOwner::of_token(&claims).is_none() {
            let detail = format!("sub {:?}, client_id {:?}", claims.sub, claims.client_id);
            return Err(Refused::invalid(NO_OWNER, detail));
        }
        self.check_scopes(&claims)?;
        Ok(claims)
    }

    /// `exp` present and not past, `nbf` and `iat` not ahead, each by more
    /// than the leeway.
    fn check_dates(&self, claims: &TokenClaims, now: u64) -> Result<(), Refused> {
        let Some(exp) = claims.exp else {
            return Err(Refused::invalid(INCOMPLETE, "no exp".to_owned()));
        };
        if now > exp.saturating_add(self.leeway) {
            let detail = format!("exp {} s ago, leeway {} s", now - exp, self.leeway);
            return Err(Refused {
                error: OAuthError::ExpiredToken,
                detail,
            });
        }
        for name in ["nbf", "iat"] {
            let Some(value) = claims.extra.get(name) else {
                continue;
            };
            let Some(at) = numeric_date(value) else {
                let detail = format!("{name} {value} is not a date");
                return Err(Refused::invalid(UNVERIFIED, detail));
            };
            if at > now.saturating_add(self.leeway) {
                let detail = format!("{name} in {} s, leeway {} s", at - now, self.leeway);
                return Err(Refused::invalid(NOT_YET, detail));
            }
        }
        Ok(())
    }

    /// One accepted audience in `aud`. `OAuthLayer` then looks for the
    /// resource there: an accepted audience stands for it.
    fn check_audience(&self, claims: &mut TokenClaims) -> Result<(), Refused> {
        if !self
            .audiences
            .iter()
            .any(|audience| claims.audience_matches(audience))
        {
            return Err(Refused {
                error: OAuthError::InvalidAudience,
                detail: format!("aud {:?}, accepted {:?}", claims.aud, self.audiences),
            });
        }
        if !claims.audience_matches(&self.resource) {
            claims.aud = Some(TokenAudience::Single(self.resource.clone()));
        }
        Ok(())
    }

    /// Every required scope granted. The scopes are listed in a fixed
    /// order, so the answer is the same for the same token.
    fn check_scopes(&self, claims: &TokenClaims) -> Result<(), Refused> {
        let granted = claims.scopes();
        if self.scopes.iter().all(|scope| granted.contains(scope)) {
            return Ok(());
        }
        let mut provided: Vec<String> = granted.into_iter().collect();
        provided.sort();
        let error = OAuthError::InsufficientScope {
            required: self.scopes.clone(),
            provided,
        };
        Err(Refused {
            detail: error.to_string(),
            error,
        })
    }
}

/// A JWT NumericDate: seconds since the epoch, maybe with a fraction.
fn numeric_date(value: &serde_json::Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
            .map(|seconds| seconds as u64)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn rules() -> Rules {
        Rules {
            issuer: "https://id.test".into(),
            resource: "https://mcp.test/mcp".into(),
            audiences: vec!["mcp-gateway".into()],
            leeway: 5,
            scopes: vec![],
        }
    }

    fn claims(extra: serde_json::Value) -> TokenClaims {
        let mut claims = json!({
            "iss": "https://id.test", "sub": "alice", "aud": "mcp-gateway", "exp": NOW + 60,
        });
        for (key, value) in extra.as_object().into_iter().flatten() {
            claims[key] = value.clone();
        }
        serde_json::from_value(claims).expect("claims")
    }

    fn told(extra: serde_json::Value) -> Option<String> {
        rules()
            .check(claims(extra), NOW)
            .err()
            .map(|refused| refused.error.to_string())
    }

    #[test]
    fn dates_hold_within_the_leeway_and_not_beyond() {
        assert_eq!(
            told(json!({"exp": NOW - 5, "nbf": NOW + 5, "iat": NOW + 5})),
            None
        );
        assert_eq!(told(json!({"iat": NOW as f64 + 0.5})), None);
        assert_eq!(
            told(json!({"exp": NOW - 6})).as_deref(),
            Some("token has expired")
        );
        for ahead in [json!({"nbf": NOW + 6}), json!({"iat": NOW + 6})] {
            let said = told(ahead).unwrap_or_default();
            assert!(said.ends_with(NOT_YET), "{said}");
        }
        let said = told(json!({"iat": "yesterday"})).unwrap_or_default();
        assert!(said.ends_with(UNVERIFIED), "{said}");
    }

    #[test]
    fn an_accepted_audience_stands_for_the_resource() {
        let rules = rules();
        let checked = rules.check(claims(json!({})), NOW).ok();
        let checked = checked.expect("accepted");
        assert!(checked.audience_matches(&rules.resource));
        let said = told(json!({"aud": "https://mcp.test/mcp"}));
        assert_eq!(said.as_deref(), Some("token audience does not match"));
    }

    #[test]
    fn a_missing_scope_is_told_in_a_fixed_order() {
        let mut rules = rules();
        rules.scopes = vec!["b".into(), "a".into()];
        let token = claims(json!({"scope": "z b y"}));
        let said = rules.check(token, NOW).err().map(|r| r.error.to_string());
        assert_eq!(
            said.as_deref(),
            Some("insufficient scope: required [b, a], provided [b, y, z]")
        );
    }
}
