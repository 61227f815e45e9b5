//! Who a task belongs to.
//!
//! The layer binds every task to the principal of the request that created
//! it and checks that principal again on every task method. The principal is
//! read from the request (normally from an extension an authentication layer
//! inserted) by a [`ResolveOwner`]; the default, [`DefaultOwner`], reads this
//! crate's [`Principal`] and, with the `tower-mcp` feature, the `sub` claim of
//! tower-mcp's OAuth `TokenClaims`.
//!
//! | Task owner | Caller    | Allowed | Why                                                  |
//! |------------|-----------|---------|------------------------------------------------------|
//! | none       | none      | yes     | no authentication configured                         |
//! | `alice`    | `alice`   | yes     | same principal                                       |
//! | `alice`    | `bob`     | no      | another principal                                    |
//! | `alice`    | none      | no      | an anonymous caller is not the owner                 |
//! | none       | `alice`   | no      | a principal appearing later is another context       |
//!
//! A refusal answers exactly like an unknown task, so a task id learned by
//! someone else reveals nothing. The owner never appears on the wire.

use std::fmt;
use std::sync::Arc;

use http::request::Parts;

/// An authenticated principal, inserted into the request extensions by any
/// authentication middleware that runs before [`TasksLayer`](crate::TasksLayer).
///
/// ```
/// use mcp_tasks::Principal;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(Principal::new("alice"));
/// assert_eq!(request.extensions().get::<Principal>().unwrap().as_str(), "alice");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A principal with the given stable identifier (a subject, a client id).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The identifier.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Principal").field(&self.as_str()).finish()
    }
}

/// Finds the principal of a request.
///
/// Any `Fn(&Parts) -> Option<String>` is a resolver:
///
/// ```
/// use mcp_tasks::{MemoryTaskStore, TasksLayer};
///
/// // Trust a header set by a gateway in front of this service.
/// let layer = TasksLayer::new(MemoryTaskStore::new()).owner_resolver(|parts: &http::request::Parts| {
///     parts.headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned)
/// });
/// # let _ = layer;
/// ```
pub trait ResolveOwner: Send + Sync + 'static {
    /// The principal, or `None` for an anonymous request.
    fn resolve(&self, parts: &Parts) -> Option<String>;
}

impl<F> ResolveOwner for F
where
    F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
{
    fn resolve(&self, parts: &Parts) -> Option<String> {
        self(parts)
    }
}

/// The default resolver: this crate's [`Principal`] extension, then (with the
/// `tower-mcp` feature) the claims of `tower_mcp::oauth::TokenClaims`.
///
/// | Source                          | Owner key                              | Why                                               |
/// |---------------------------------|----------------------------------------|---------------------------------------------------|
/// | [`Principal`]                   | its identifier, verbatim               | the application's own namespace                   |
/// | token with `sub`                | `["sub",<iss or null>,<sub>]`          | a user, qualified by who vouched for them         |
/// | token with `client_id` only     | `["client",<iss or null>,<client_id>]` | a client (client credentials), never a user       |
/// | token with neither              | none (anonymous)                       | a blank `sub` or `client_id` counts as absent: it would be one owner for every such token |
///
/// The token keys are JSON arrays, so no subject, client id or issuer can
/// be written to look like another: a client whose `client_id` equals a
/// user's `sub` does not share that user's tasks, nor does the same `sub`
/// from another issuer.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultOwner;

impl ResolveOwner for DefaultOwner {
    fn resolve(&self, parts: &Parts) -> Option<String> {
        if let Some(principal) = parts.extensions.get::<Principal>() {
            return Some(principal.as_str().to_owned());
        }
        #[cfg(feature = "tower-mcp")]
        if let Some(claims) = parts.extensions.get::<tower_mcp::oauth::TokenClaims>() {
            return Self::of_token(claims);
        }
        None
    }
}

#[cfg(feature = "tower-mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower-mcp")))]
impl DefaultOwner {
    /// The owner key of a token's claims, as [`DefaultOwner`] reads them:
    /// its `sub`, else its `client_id`; `None` when neither is there. A
    /// blank one (empty, or only whitespace) counts as absent, so that no
    /// two such tokens share the owner `""`; an authentication layer should
    /// refuse a token this names no owner for, as `mcp-tasks-gateway` does.
    ///
    /// ```
    /// use mcp_tasks::DefaultOwner;
    ///
    /// let claims = serde_json::from_value(serde_json::json!({"sub": " ", "client_id": "batch"}));
    /// let owner = DefaultOwner::of_token(&claims.unwrap());
    /// assert_eq!(owner.as_deref(), Some(r#"["client",null,"batch"]"#));
    /// ```
    pub fn of_token(claims: &tower_mcp::oauth::TokenClaims) -> Option<String> {
        let issuer = claims.iss.as_deref();
        match (
            named(claims.sub.as_deref()),
            named(claims.client_id.as_deref()),
        ) {
            (Some(sub), _) => Some(token_key("sub", issuer, sub)),
            (None, Some(client)) => Some(token_key("client", issuer, client)),
            (None, None) => None,
        }
    }
}

/// `id` when it is not blank.
#[cfg_attr(not(feature = "tower-mcp"), allow(dead_code))]
fn named(id: Option<&str>) -> Option<&str> {
    id.filter(|id| !id.trim().is_empty())
}

/// The owner key of a token identity: a JSON array, unambiguous by
/// construction.
#[cfg_attr(not(feature = "tower-mcp"), allow(dead_code))]
fn token_key(kind: &str, issuer: Option<&str>, id: &str) -> String {
    serde_json::to_string(&(kind, issuer, id)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Parts {
        http::Request::new(()).into_parts().0
    }

    #[test]
    fn the_default_owner_is_the_principal_extension_or_nobody() {
        let mut with = parts();
        with.extensions.insert(Principal::new("alice"));
        assert_eq!(DefaultOwner.resolve(&with).as_deref(), Some("alice"));
        assert_eq!(DefaultOwner.resolve(&parts()), None);
    }

    #[cfg(feature = "tower-mcp")]
    #[test]
    fn tower_mcp_token_claims_name_the_owner_by_subject_then_client() {
        use tower_mcp::oauth::TokenClaims;
        let claims = |value: serde_json::Value| -> TokenClaims {
            serde_json::from_value(value).expect("claims")
        };
        let mut user = parts();
        user.extensions.insert(claims(
            serde_json::json!({"sub": "alice", "client_id": "app", "iss": "https://id.example"}),
        ));
        assert_eq!(
            DefaultOwner.resolve(&user).as_deref(),
            Some(r#"["sub","https://id.example","alice"]"#)
        );

        let mut service = parts();
        service
            .extensions
            .insert(claims(serde_json::json!({"client_id": "batch"})));
        assert_eq!(
            DefaultOwner.resolve(&service).as_deref(),
            Some(r#"["client",null,"batch"]"#)
        );

        // A client named like a user, or the same subject from another
        // issuer, is another owner.
        let mut lookalike = parts();
        lookalike.extensions.insert(claims(
            serde_json::json!({"client_id": "alice", "iss": "https://id.example"}),
        ));
        let mut elsewhere = parts();
        elsewhere.extensions.insert(claims(
            serde_json::json!({"sub": "alice", "iss": "https://other.example"}),
        ));
        let alice = DefaultOwner.resolve(&user);
        assert_ne!(DefaultOwner.resolve(&lookalike), alice);
        assert_ne!(DefaultOwner.resolve(&elsewhere), alice);
        let mut anonymous_token = parts();
        anonymous_token
            .extensions
            .insert(claims(serde_json::json!({"iss": "https://id.example"})));
        assert_eq!(DefaultOwner.resolve(&anonymous_token), None);

        // A blank subject or client id names nobody: no owner "" shared by
        // every token that carries one.
        for blank in [
            serde_json::json!({"sub": ""}),
            serde_json::json!({"sub": " \t", "client_id": ""}),
        ] {
            let mut request = parts();
            request.extensions.insert(claims(blank));
            assert_eq!(DefaultOwner.resolve(&request), None);
        }
        let mut blank_sub = parts();
        blank_sub
            .extensions
            .insert(claims(serde_json::json!({"sub": "", "client_id": "batch"})));
        assert_eq!(
            DefaultOwner.resolve(&blank_sub),
            DefaultOwner.resolve(&service)
        );

        // An explicit Principal wins over token claims.
        user.extensions.insert(Principal::new("override"));
        assert_eq!(DefaultOwner.resolve(&user).as_deref(), Some("override"));
    }
}
