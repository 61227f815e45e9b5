//! The upstream session that carries 2026-07-28 requests to an older HTTP
//! upstream.
//!
//! | Rule | Why |
//! |------|-----|
//! | one session per set of client capabilities (elicitation, sampling, roots) and `Authorization` header, opened on the first request that needs it; at most [`MAX_SESSIONS`], the one used least recently forgotten past that | a 2026-07-28 request depends on no earlier one, so any session with its client's capabilities and credentials serves it; an older server takes concurrent requests in one session; one principal's session is never another's |
//! | the bridge's own requests in a session (`initialize`, answers, cancels) carry its `Authorization` | an upstream that wants credentials gets them |
//! | opened by one request at a time; the others wait for it | no burst of sessions when many requests arrive at once |
//! | opened with the capabilities the request's client declared, no more | the upstream asks only what that client can answer, as an input round (`rounds.rs`) |
//! | dropped when the upstream answers `404` to it, and opened again | the upstream restarted or expired it; the request is sent once more in the new one |
//! | its `initialize` answer kept | it is the upstream's `server/discover` answer |
//! | an upstream that opens no session (`Mcp-Session-Id` absent) gets requests without one | a stateless 2025-era server serves each request alone |
//! | opening may take [`OPEN_WAIT`]; after a failure, requests fail at once for [`OPEN_BACKOFF`] | an upstream that sends a head and then nothing holds no request for long, nor a queue of them |

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::HeaderValue;
use tower::ServiceExt;

use super::Upstream;
use super::exchange::{first_response, own_request};
use super::heard::Heard;
use crate::generation::declared::Declared;
use crate::generation::message::Message;

/// The version the bridge asks an older upstream for.
const ASKED_VERSION: &str = "2025-11-25";

/// How long opening a session may take.
pub(crate) const OPEN_WAIT: Duration = Duration::from_secs(10);

/// How long after a failed opening requests fail without trying again.
pub(crate) const OPEN_BACKOFF: Duration = Duration::from_secs(2);

/// The most upstream sessions a bridge holds.
pub(crate) const MAX_SESSIONS: usize = 1024;

/// One upstream session.
#[derive(Debug)]
pub(crate) struct Session {
    /// `Mcp-Session-Id`; `None` for an upstream that opens no session.
    pub id: Option<HeaderValue>,
    /// `MCP-Protocol-Version` of the session: the version the upstream agreed to.
    pub version: HeaderValue,
    /// What the upstream declared.
    pub declared: Declared,
    /// The credentials the session was opened with.
    pub authorization: Option<HeaderValue>,
    /// Its own stream's listeners (`heard.rs`).
    pub heard: Arc<Heard>,
}

impl Session {
    /// The headers of a request of the bridge's own in the session.
    pub(crate) fn headers(&self) -> Vec<(&'static str, HeaderValue)> {
        let mut headers = vec![("mcp-protocol-version", self.version.clone())];
        if let Some(id) = &self.id {
            headers.push(("mcp-session-id", id.clone()));
        }
        if let Some(authorization) = &self.authorization {
            headers.push(("authorization", authorization.clone()));
        }
        headers
    }
}

/// The sessions of clients with the same capabilities and credentials.
type Key = (usize, Option<HeaderValue>);

/// Every upstream session of a bridge, by the client capabilities (a mask
/// of [`crate::generation::input::ASKABLE`]) and credentials of the
/// requests it carries.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    open: Mutex<HashMap<Key, (Arc<Sessions>, Instant)>>,
}

impl Pool {
    /// The sessions for a request whose client declares `mask` and sends
    /// `authorization`; past [`MAX_SESSIONS`], the one used least recently
    /// is forgotten (the upstream expires it).
    pub(crate) fn sessions(
        &self,
        mask: usize,
        authorization: Option<&HeaderValue>,
    ) -> Arc<Sessions> {
        let mut open = super::lock(&self.open);
        let key = (mask, authorization.cloned());
        if let Some((sessions, used)) = open.get_mut(&key) {
            *used = Instant::now();
            return sessions.clone();
        }
        if open.len() >= MAX_SESSIONS {
            let oldest = open
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                open.remove(&oldest);
            }
        }
        let sessions = Arc::new(Sessions {
            mask,
            authorization: authorization.cloned(),
            ..Sessions::default()
        });
        open.insert(key, (sessions.clone(), Instant::now()));
        sessions
    }

    /// How many sessions' slots the pool holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        super::lock(&self.open).len()
    }
}

/// The session of one key, and the one request that may open it.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    /// The client capabilities it declares.
    mask: usize,
    /// The credentials it is opened with.
    authorization: Option<HeaderValue>,
    open: Mutex<Option<Arc<Session>>>,
    opening: tokio::sync::Mutex<()>,
    /// The last failure to open one, and when.
    failed: Mutex<Option<(Instant, String)>>,
}

impl Sessions {
    /// The open session, or a new one opened through `inner` (answers read
    /// up to `max` bytes).
    pub(crate) async fn get(&self, inner: &Upstream, max: usize) -> Result<Arc<Session>, String> {
        if let Some(open) = self.current() {
            return Ok(open);
        }
        self.backing_off()?;
        let _opening = self.opening.lock().await;
        if let Some(open) = self.current() {
            return Ok(open);
        }
        self.backing_off()?;
        let opening = open(inner.clone(), max, self.mask, self.authorization.clone());
        let opened = tokio::time::timeout(OPEN_WAIT, opening)
            .await
            .unwrap_or_else(|_| Err(format!("it did not answer initialize within {OPEN_WAIT:?}")));
        let session = match opened {
            Ok(session) => Arc::new(session),
            Err(why) => {
                *super::lock(&self.failed) = Some((Instant::now(), why.clone()));
                return Err(why);
            }
        };
        tracing::info!(
            session = ?session.id,
            version = ?session.version,
            capabilities = %crate::generation::input::capabilities(self.mask),
            "opened an upstream session for 2026-07-28 clients"
        );
        *self.lock() = Some(session.clone());
        Ok(session)
    }

    /// Forgets `session`, which the upstream no longer knows (unless
    /// another request replaced it already).
    pub(crate) fn lost(&self, session: &Arc<Session>) {
        let mut open = self.lock();
        if open.as_ref().is_some_and(|open| Arc::ptr_eq(open, session)) {
            tracing::info!(session = ?session.id, "the upstream lost its session: a new one is opened");
            *open = None;
        }
    }

    /// The last failure, while requests should not try again.
    fn backing_off(&self) -> Result<(), String> {
        match &*super::lock(&self.failed) {
            Some((at, why)) if at.elapsed() < OPEN_BACKOFF => Err(why.clone()),
            _ => Ok(()),
        }
    }

    fn current(&self) -> Option<Arc<Session>> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Session>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Opens a session: `initialize`, then `notifications/initialized`.
async fn open(
    inner: Upstream,
    max: usize,
    mask: usize,
    authorization: Option<HeaderValue>,
) -> Result<Session, String> {
    let version = env!("CARGO_PKG_VERSION");
    let capabilities = crate::generation::input::capabilities(mask);
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{ASKED_VERSION}","capabilities":{capabilities},"clientInfo":{{"name":"mcp-tasks-gateway","version":"{version}"}}}}}}"#
    );
    let mut headers = vec![("mcp-method", HeaderValue::from_static("initialize"))];
    if let Some(authorization) = &authorization {
        headers.push(("authorization", authorization.clone()));
    }
    let request = own_request(initialize, &headers);
    let Ok(response) = inner.clone().oneshot(request).await;
    if !response.status().is_success() {
        return Err(format!(
            "the upstream answered initialize with HTTP {}",
            response.status()
        ));
    }
    let id = response.headers().get("mcp-session-id").cloned();
    let answer = first_response(response, max).await?;
    let message = Message::read(&answer).ok_or("its initialize answer is not JSON-RPC")?;
    if let Some(error) = message.error {
        return Err(format!(
            "the upstream answered initialize with {}",
            error.get()
        ));
    }
    let declared = Declared::read(
        message
            .result
            .ok_or("its initialize answer has no result")?,
    )?;
    let version = HeaderValue::from_str(&declared.version)
        .map_err(|_| "its protocolVersion is no header value".to_owned())?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let session = Session {
        id,
        version,
        declared,
        authorization,
        heard: Arc::default(),
    };
    // Nothing to confirm outside a session.
    if session.id.is_some() {
        let request = own_request(initialized, &session.headers());
        let Ok(response) = inner.oneshot(request).await;
        if !response.status().is_success() {
            tracing::warn!(status = %response.status(), "the upstream refused notifications/initialized");
        }
    }
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_principal_and_capability_set_has_its_sessions_and_the_pool_is_capped() {
        let pool = Pool::default();
        let alice = HeaderValue::from_static("Bearer alice");
        let bob = HeaderValue::from_static("Bearer bob");
        let first = pool.sessions(0, Some(&alice));
        assert!(Arc::ptr_eq(&first, &pool.sessions(0, Some(&alice))));
        assert!(!Arc::ptr_eq(&first, &pool.sessions(0, Some(&bob))));
        assert!(!Arc::ptr_eq(&first, &pool.sessions(1, Some(&alice))));
        assert!(!Arc::ptr_eq(&first, &pool.sessions(0, None)));
        for at in 0..MAX_SESSIONS {
            let other = HeaderValue::from_str(&format!("Bearer {at}")).unwrap();
            pool.sessions(0, Some(&other));
        }
        assert_eq!(pool.len(), MAX_SESSIONS);
        // Alice's was used least recently: forgotten, a new one made.
        assert!(!Arc::ptr_eq(&first, &pool.sessions(0, Some(&alice))));
    }
}
