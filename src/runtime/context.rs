//! [`RequestContext`]: one request as a wing's handler gets it.
//!
//! Every handler of a wing takes a context and the call its wing parsed,
//! so that what a request is known by is made in one place, once. A handler
//! runs inside the request's span, which dispatch enters around it:
//!
//! | Part      | What it is                                    | Why here                                              |
//! |-----------|-----------------------------------------------|-------------------------------------------------------|
//! | `runtime` | the engine                                     | every handler reads the settings or the store         |
//! | `parts`   | the request's head                             | a parked call is re-issued with its credentials       |
//! | `body`    | the request as sent, one buffer                | calls are ranges into it, cut only when needed        |
//! | `owner`   | the owner, resolved once, in the request's span | one shape everywhere: the principal and the store key |

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;

use super::{Owner, Runtime};

/// One request as a wing's handler gets it, with its owner resolved once.
pub(crate) struct RequestContext {
    pub runtime: Arc<Runtime>,
    pub parts: Parts,
    pub body: Bytes,
    pub owner: Owner,
}

impl RequestContext {
    /// The context of a request: its owner is resolved now, in `span`
    /// (entered only when a subscriber takes it).
    pub(crate) fn new(
        runtime: Arc<Runtime>,
        parts: Parts,
        body: Bytes,
        span: &tracing::Span,
    ) -> Self {
        let owner = {
            let _entered = (!span.is_disabled()).then(|| span.enter());
            runtime.owner(&parts)
        };
        Self {
            runtime,
            parts,
            body,
            owner,
        }
    }
}
