//! Which of a `tools/call`'s request extensions the layer keeps, in case
//! it has to send the call again on its own.
//!
//! A 2026-07-28 call that is parked and then shed by the inner server
//! (`input_required` with only a `requestState`) is sent again in the
//! background, with no request of the client at hand: it carries the
//! original call's kept headers and the extensions listed here. Keeping
//! them is paid by every raced call, most of which answer in time, so only
//! named types are kept, each looked up by its type (nothing is allocated
//! for a type the request does not have), not the whole map (a clone of
//! every entry, and of its table, on every call).
//!
//! | Extension                                   | Kept                              |
//! |---------------------------------------------|-----------------------------------|
//! | [`Principal`](crate::Principal)             | always                            |
//! | tower-mcp's `TokenClaims`                   | always, with the `tower-mcp` feature |
//! | any other type                              | when named with [`TasksLayer::reissue_extension`](crate::TasksLayer::reissue_extension) |
//! | all of them                                 | with [`TasksLayer::reissue_all_extensions`](crate::TasksLayer::reissue_all_extensions) |
//!
//! A call re-issued in answer to a client's `tasks/update` carries that
//! request's extensions, all of them: it is sent while that request is at
//! hand.

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use http::Extensions;

/// Copies the value of one type, if present, from one map to another.
type Copy = fn(&Extensions, &mut Extensions);

fn copy<T: Clone + Send + Sync + 'static>(from: &Extensions, to: &mut Extensions) {
    if let Some(value) = from.get::<T>() {
        to.insert(value.clone());
    }
}

/// The extensions a parked call keeps for re-issuing.
#[derive(Clone)]
pub(crate) struct Carried {
    /// Every extension, whatever its type (a clone of the whole map).
    all: bool,
    /// The types kept otherwise, each once.
    types: Arc<[(TypeId, Copy)]>,
}

impl Default for Carried {
    fn default() -> Self {
        let mut carried = Self {
            all: false,
            types: Arc::new([]),
        };
        carried.add::<crate::owner::Principal>();
        #[cfg(feature = "tower-mcp")]
        carried.add::<tower_mcp::oauth::TokenClaims>();
        carried
    }
}

impl fmt::Debug for Carried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Carried")
            .field("all", &self.all)
            .field("types", &self.types.len())
            .finish()
    }
}

impl Carried {
    /// Keeps values of type `T` too.
    pub(crate) fn add<T: Clone + Send + Sync + 'static>(&mut self) {
        let id = TypeId::of::<T>();
        if self.types.iter().any(|(kept, _)| *kept == id) {
            return;
        }
        let mut types = self.types.to_vec();
        types.push((id, copy::<T> as Copy));
        self.types = types.into();
    }

    /// Keeps every extension.
    pub(crate) fn all(&mut self) {
        self.all = true;
    }

    /// What of `extensions` is kept.
    pub(crate) fn take(&self, extensions: &Extensions) -> Extensions {
        if self.all {
            return extensions.clone();
        }
        let mut kept = Extensions::new();
        for (_, copy) in self.types.iter() {
            copy(extensions, &mut kept);
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::Principal;

    #[derive(Clone, Debug, PartialEq)]
    struct Tenant(&'static str);

    #[derive(Clone, Debug, PartialEq)]
    struct Peer(u16);

    fn request_extensions() -> Extensions {
        let mut extensions = Extensions::new();
        extensions.insert(Principal::new("alice"));
        extensions.insert(Tenant("acme"));
        extensions.insert(Peer(4242));
        extensions
    }

    #[test]
    fn by_default_only_the_principal_is_kept() {
        let kept = Carried::default().take(&request_extensions());
        assert_eq!(
            kept.get::<Principal>().map(Principal::as_str),
            Some("alice")
        );
        assert_eq!(kept.get::<Tenant>(), None);
        assert_eq!(kept.get::<Peer>(), None);
    }

    #[test]
    fn a_named_type_is_kept_once_however_often_it_is_named() {
        let mut carried = Carried::default();
        carried.add::<Tenant>();
        carried.add::<Tenant>();
        assert_eq!(carried.types.len(), Carried::default().types.len() + 1);
        let kept = carried.take(&request_extensions());
        assert_eq!(kept.get::<Tenant>(), Some(&Tenant("acme")));
        assert_eq!(kept.get::<Peer>(), None);
    }

    #[test]
    fn all_keeps_every_extension() {
        let mut carried = Carried::default();
        carried.all();
        let kept = carried.take(&request_extensions());
        assert_eq!(kept.get::<Peer>(), Some(&Peer(4242)));
        assert_eq!(kept.get::<Tenant>(), Some(&Tenant("acme")));
    }

    #[test]
    fn a_request_without_the_kept_types_keeps_nothing() {
        let kept = Carried::default().take(&Extensions::new());
        assert!(kept.is_empty());
    }
}
