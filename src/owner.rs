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
/// `tower-mcp` feature) the `sub` claim of `tower_mcp::oauth::TokenClaims`,
/// falling back to its `client_id` for client-credential tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultOwner;

impl ResolveOwner for DefaultOwner {
    fn resolve(&self, parts: &Parts) -> Option<String> {
        if let Some(principal) = parts.extensions.get::<Principal>() {
            return Some(principal.as_str().to_owned());
        }
        #[cfg(feature = "tower-mcp")]
        if let Some(claims) = parts.extensions.get::<tower_mcp::oauth::TokenClaims>() {
            return claims.sub.clone().or_else(|| claims.client_id.clone());
        }
        None
    }
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
            serde_json::json!({"sub": "alice", "client_id": "app"}),
        ));
        assert_eq!(DefaultOwner.resolve(&user).as_deref(), Some("alice"));

        let mut service = parts();
        service
            .extensions
            .insert(claims(serde_json::json!({"client_id": "batch"})));
        assert_eq!(DefaultOwner.resolve(&service).as_deref(), Some("batch"));

        // An explicit Principal wins over token claims.
        user.extensions.insert(Principal::new("override"));
        assert_eq!(DefaultOwner.resolve(&user).as_deref(), Some("override"));
    }
}
