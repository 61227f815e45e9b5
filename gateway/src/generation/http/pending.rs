//! A bridged call the upstream still runs: if its client goes away first
//! (the stream dropped, the task cancelled, the call's future dropped), the
//! upstream is told with `notifications/cancelled` in the session, as a
//! 2025-11-25 client would tell it; an older server does not stop a call
//! because a connection closed.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use tower::ServiceExt;

use super::Upstream;
use super::exchange::own_request;
use super::sessions::Session;

/// How long telling the upstream of a cancel may take: one such request
/// at most a dropped call, none outliving this.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The call, until its answer passed.
pub(crate) struct Pending {
    asked: Option<(Upstream, Arc<Session>)>,
    /// The id the upstream knows the call by.
    own: u64,
}

impl Pending {
    /// The call `own`, sent through `inner` in `session`.
    pub(crate) fn new(inner: Upstream, session: Arc<Session>, own: u64) -> Self {
        Self {
            asked: Some((inner, session)),
            own,
        }
    }

    /// A call with nothing to cancel, for tests of what carries one.
    #[cfg(test)]
    pub(crate) fn settled() -> Self {
        Self {
            asked: None,
            own: 0,
        }
    }

    /// Its answer passed (or it was never run): nothing to cancel.
    pub(crate) fn answered(&mut self) {
        self.asked = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some((inner, session)) = self.asked.take() else {
            return;
        };
        // Outside a session the upstream could not tell whose call it is.
        if session.id.is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let own = self.own;
        runtime.spawn(async move {
            let cancel = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{own},"reason":"The client is gone, or cancelled its task"}}}}"#
            );
            let mut headers = session.headers();
            headers.push(("mcp-method", HeaderValue::from_static("notifications/cancelled")));
            let told = inner.oneshot(own_request(cancel, &headers));
            match tokio::time::timeout(CANCEL_WAIT, told).await {
                Ok(Ok(response)) => tracing::debug!(own, status = %response.status(), "told the upstream a bridged call was cancelled"),
                Err(_) => tracing::debug!(own, "the upstream took the cancel of a bridged call too long"),
            }
        });
    }
}
