//! The generation bridge over HTTP: a 2026-07-28 client served by an
//! upstream that speaks only 2025-11-25 or older, as a tower service in
//! front of the upstream (the gateway puts it between
//! [`TasksLayer`](mcp_tasks::TasksLayer) and [`Proxy`](crate::Proxy)).
//!
//! ```no_run
//! use mcp_tasks::{MemoryTaskStore, TasksLayer};
//! use mcp_tasks_gateway::generation::{GenerationBridge, UpstreamGeneration};
//! use mcp_tasks_gateway::Proxy;
//! use tower::ServiceBuilder;
//!
//! # fn build() -> Result<(), mcp_tasks_gateway::proxy::ProxyError> {
//! let upstream = Proxy::builder("http://127.0.0.1:8000/mcp")?.build();
//! let app = ServiceBuilder::new()
//!     .layer(TasksLayer::new(MemoryTaskStore::new()))
//!     .service(GenerationBridge::new(upstream, UpstreamGeneration::Auto));
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! | Request | Upstream of 2026-07-28 | Older upstream |
//! |---------|------------------------|----------------|
//! | without `MCP-Protocol-Version: 2026-07-28` (2025-11-25 and older clients, their sessions) | passed as it is | passed as it is |
//! | 2026-07-28 `server/discover` | passed | answered from the upstream's `initialize` (`declared.rs`) |
//! | any other 2026-07-28 request | passed | sent in the bridge's upstream session (`sessions.rs`), under its version and an id of the bridge's own; the answer made a 2026-07-28 one (`answer.rs`): the client's id, `resultType`, cache hints, no session header, no event ids; a call whose client goes away before its answer is cancelled upstream (`pending.rs`) |
//! | a 2026-07-28 notification or response | passed | `202`: an older upstream has nothing to do with it outside a session |
//! | a 2026-07-28 GET or DELETE | passed | `405`: 2026-07-28 has neither |
//! | 2025-11-25 `initialize`, and requests in its session, when the upstream opens no session | kept here (`kept.rs`) | kept here (`kept.rs`) |
//!
//! Which generation the upstream speaks is found by a probe (`probe.rs`)
//! on the first 2026-07-28 request, and logged (a probe that cannot tell,
//! the upstream down, is tried again after `PROBE_BACKOFF`; requests pass
//! as they are meanwhile); an operator can set it instead
//! ([`UpstreamGeneration`]). A request body, and an answer read
//! whole, are capped at the message limit (`413` and `502` past it).
//!
//! The upstream's questions during a call (elicitation, sampling, roots)
//! are asked of a client that declared what they need as `input_required`
//! rounds (`rounds.rs`), in a session that declared the same.
//!
//! `subscriptions/listen` hears the upstream session's own stream
//! (`heard.rs`).
//!
//! The other way round, a 2026-07-28 upstream's `input_required` results
//! are asked of a 2025-11-25 client in its kept session as requests on the
//! call's stream (`asked.rs`).

mod answer;
mod asked;
mod events;
mod exchange;
mod heard;
mod kept;
mod pending;
mod probe;
mod rounds;
mod sessions;

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::{ALLOW, AUTHORIZATION, CONTENT_LENGTH};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use serde_json::value::RawValue;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use self::answer::for_client;
use self::events::Call;
use self::exchange::{error_reply, read_request};
use self::kept::KeptSessions;
use self::pending::Pending;
use self::probe::{Found, PROBE_BACKOFF, Probed, probe};
use self::rounds::{Asking, Rounds};
use self::sessions::Pool;
use super::message::{Kind, Message, error_response, member, replaced};
use super::params::ParamHeaders;
use super::results::is_cacheable;
use super::{checked, input, listen};
use mcp_tasks::MODERN_VERSION;
use mcp_tasks::body::{BoxBody, BoxError};
use mcp_tasks::wire::raw::Members;

/// The message limit unless set: a request body, or an answer the bridge
/// reads whole (an SSE answer may carry four times as much in all).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The protocol generation of the upstream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpstreamGeneration {
    /// Found by a probe on the first 2026-07-28 request.
    #[default]
    Auto,
    /// 2026-07-28: every request passes as it is.
    Modern,
    /// 2025-11-25 or older: 2026-07-28 requests are bridged.
    Legacy,
}

impl FromStr for UpstreamGeneration {
    type Err = String;

    /// `auto`, `2026-07-28`, or `2025-11-25` (and the older versions,
    /// which the bridge serves alike).
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            MODERN_VERSION => Ok(Self::Modern),
            "2025-11-25" | "2025-06-18" | "2025-03-26" | "2024-11-05" => Ok(Self::Legacy),
            other => Err(format!(
                "{other:?} is no protocol generation: auto, {MODERN_VERSION} or 2025-11-25"
            )),
        }
    }
}

/// A body inside the bridge. Its error is a plain `io::Error`: with a boxed
/// `dyn Error` in the bodies its async code holds, rustc cannot prove the
/// futures `Send` (rust-lang/rust#102211).
pub(crate) type Plain = UnsyncBoxBody<Bytes, std::io::Error>;

/// The upstream service, its type erased (the bridge's own requests and
/// the clients' share it).
pub(crate) type Upstream = BoxCloneSyncService<Request<Plain>, Response<Plain>, Infallible>;

/// An upstream service with 2026-07-28 requests bridged when it speaks
/// an older generation (see the module docs).
#[derive(Clone)]
pub struct GenerationBridge {
    inner: Upstream,
    shared: Arc<Shared>,
    /// The message limit.
    max: usize,
}

/// What the clones of one bridge share.
struct Shared {
    setting: UpstreamGeneration,
    found: Mutex<Option<Found>>,
    probing: tokio::sync::Mutex<()>,
    /// No probe before then: the last one could not tell.
    quiet_until: Mutex<Option<Instant>>,
    /// The upstream sessions, by client capabilities and credentials.
    sessions: Pool,
    /// The calls whose client is asked for input (`rounds.rs`).
    rounds: Arc<Rounds>,
    /// The sessions of 2025-11-25 clients kept here (`kept.rs`).
    kept: KeptSessions,
    /// The tools' `Mcp-Param-*` headers, from the upstream's lists.
    params: Arc<ParamHeaders>,
    /// The next id of a bridged request.
    next: AtomicU64,
}

impl GenerationBridge {
    /// A bridge in front of `inner`, whose generation is `generation`, with
    /// the [`DEFAULT_MAX_MESSAGE_BYTES`] limit.
    pub fn new<S, B>(inner: S, generation: UpstreamGeneration) -> Self
    where
        S: Service<Request<BoxBody>, Response = Response<B>, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let found = match generation {
            UpstreamGeneration::Auto => None,
            UpstreamGeneration::Modern => Some(Found::Modern),
            UpstreamGeneration::Legacy => Some(Found::Legacy),
        };
        let shared = Shared {
            setting: generation,
            found: Mutex::new(found),
            probing: tokio::sync::Mutex::new(()),
            quiet_until: Mutex::new(None),
            sessions: Pool::default(),
            rounds: Arc::default(),
            kept: KeptSessions::default(),
            params: Arc::default(),
            next: AtomicU64::new(1),
        };
        Self {
            inner: BoxCloneSyncService::new(
                inner
                    .map_request(|request: Request<Plain>| request.map(to_box))
                    .map_response(|response| response.map(plain)),
            ),
            shared: Arc::new(shared),
            max: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// The same bridge with the message limit `max`: a request body, or an
    /// answer read whole, of at most `max` bytes.
    pub fn with_max_message_bytes(mut self, max: usize) -> Self {
        self.max = max;
        self
    }
}

impl GenerationBridge {
    /// Asks the upstream's generation now (unless known or set), as the
    /// first 2026-07-28 request would, and logs it: for a start that says
    /// what it found. `None` when the upstream could not tell.
    pub async fn detect(&self) -> Option<UpstreamGeneration> {
        let found = self.shared.generation(&self.inner, self.max, None).await?;
        Some(match found {
            Found::Modern => UpstreamGeneration::Modern,
            Found::Legacy => UpstreamGeneration::Legacy,
        })
    }
}

impl fmt::Debug for GenerationBridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenerationBridge")
            .field("setting", &self.shared.setting)
            .field("found", &self.shared.found())
            .field("max_message_bytes", &self.max)
            .finish()
    }
}

impl Shared {
    fn found(&self) -> Option<Found> {
        *lock(&self.found)
    }

    /// The upstream's generation, probed once (one probe at a time), with
    /// the `authorization` of the client it is asked for.
    async fn generation(
        &self,
        inner: &Upstream,
        max: usize,
        authorization: Option<&HeaderValue>,
    ) -> Option<Found> {
        if let Some(found) = self.found() {
            return Some(found);
        }
        let quiet = || (*lock(&self.quiet_until)).is_some_and(|until| Instant::now() < until);
        if quiet() {
            return None;
        }
        let _probing = self.probing.lock().await;
        if let Some(found) = self.found() {
            return Some(found);
        }
        if quiet() {
            return None;
        }
        let found = match probe(inner.clone(), max, authorization).await {
            Probed::Found(found) => Some(found),
            Probed::Unknown => {
                *lock(&self.quiet_until) = Some(Instant::now() + PROBE_BACKOFF);
                None
            }
            // Asked again by the first request that has credentials.
            Probed::Unauthorized if authorization.is_none() => None,
            Probed::Unauthorized => {
                *lock(&self.quiet_until) = Some(Instant::now() + PROBE_BACKOFF);
                None
            }
        };
        match found {
            Some(Found::Modern) => tracing::info!("the upstream speaks protocol 2026-07-28"),
            Some(Found::Legacy) => tracing::info!(
                "the upstream speaks protocol 2025-11-25 or older: 2026-07-28 clients are bridged"
            ),
            None => tracing::warn!("the upstream's protocol generation could not be told yet"),
        }
        *lock(&self.found) = found;
        found
    }
}

impl<B> Service<Request<B>> for GenerationBridge
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<BoxBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<BoxBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        let shared = self.shared.clone();
        let max = self.max;
        let modern = request
            .headers()
            .get("mcp-protocol-version")
            .is_some_and(|version| version == MODERN_VERSION);
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|session| session.to_str().ok())
            .map(str::to_owned);
        let unsessioned = session.is_none() && request.method() == Method::POST;
        let request = request.map(plain);
        let answer = async move {
            // A probe, if one runs, goes with the request's credentials.
            let authorization = request.headers().get(AUTHORIZATION);
            if modern {
                let found = shared.generation(&inner, max, authorization).await;
                if found == Some(Found::Legacy) {
                    return bridged(inner, &shared, max, request).await;
                }
            } else if let Some(session) = session.filter(|id| id.starts_with(kept::KEPT_PREFIX)) {
                let found = shared.generation(&inner, max, authorization).await;
                let modern = found == Some(Found::Modern);
                let kept = &shared.kept;
                return kept::in_session(inner, kept, &session, modern, max, request).await;
            } else if unsessioned {
                return kept::unsessioned(inner, &shared, max, request).await;
            }
            let Ok(response) = inner.oneshot(request).await;
            response
        };
        Box::pin(answer.map(|response| Ok(response.map(to_box))))
    }
}

/// A 2026-07-28 request served by an older upstream, its messages read up
/// to `max` bytes.
async fn bridged(
    inner: Upstream,
    shared: &Shared,
    max: usize,
    request: Request<Plain>,
) -> Response<Plain> {
    let (parts, body) = request.into_parts();
    if parts.method != Method::POST {
        let mut refused = error_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            error_response("null", -32600, "Protocol 2026-07-28 has only POST"),
        );
        refused
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return refused;
    }
    let body = match read_request(body, max).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let Some(message) = Message::read(&body) else {
        let reply = error_response("null", -32700, "Parse error");
        return error_reply(StatusCode::BAD_REQUEST, reply);
    };
    let id = message.id.map_or("null", RawValue::get).to_owned();
    match message.kind() {
        Kind::Request => {}
        Kind::Notification | Kind::Response => return accepted(),
        Kind::Invalid => {
            let reply = error_response(&id, -32600, "Invalid Request");
            return error_reply(StatusCode::BAD_REQUEST, reply);
        }
    }
    let meta = message.meta();
    let checks = checked::request(&parts.headers, &message, meta)
        .and_then(|()| shared.params.check(&parts.headers, &message));
    if let Err(refused) = checks {
        return error_reply(refused.status, refused.body);
    }
    let method = message.method.as_deref().unwrap_or_default().to_owned();
    let field = |name: &str| meta.and_then(|meta| member(meta, name));
    let log_level = field("io.modelcontextprotocol/logLevel").and_then(events::level);
    // The retry of a call that asked its client: it goes on where it was.
    let state = message
        .params
        .and_then(|params| member(params, "requestState"))
        .and_then(|state| serde_json::from_str::<String>(state.get()).ok());
    if let Some(token) = state {
        return rounds::resume(&shared.rounds, &inner, &token, &message, id, log_level).await;
    }
    // What the client can be asked; the session it goes in declared the same.
    let mask = field("io.modelcontextprotocol/clientCapabilities")
        .and_then(|capabilities| Members::parse(capabilities.get()).ok())
        .map_or(0, |members| {
            input::declared(members.0.iter().map(|(name, _)| &**name))
        });
    let sessions = shared
        .sessions
        .sessions(mask, parts.headers.get(AUTHORIZATION));
    // Under an id of the bridge's own: clients share the session, and two
    // of them may use the same id at once.
    let own = shared.next.fetch_add(1, Ordering::Relaxed);
    let forwarded = message
        .id
        .and_then(|client_id| replaced(&body, &[(client_id, &own.to_string())]));
    let Some(forwarded) = forwarded else {
        let reply = error_response(&id, -32600, "Invalid Request");
        return error_reply(StatusCode::BAD_REQUEST, reply);
    };
    let mut again = true;
    loop {
        let session = match sessions.get(&inner, max).await {
            Ok(session) => session,
            Err(why) => {
                tracing::warn!(%why, "no upstream session for a 2026-07-28 request");
                // A probe taken in by an error (a proxy's 404 before the
                // upstream was up) is not believed for good: asked again.
                if shared.setting == UpstreamGeneration::Auto {
                    *lock(&shared.found) = None;
                }
                let why = format!("The upstream could not be reached in a session: {why}");
                let mut failed =
                    error_reply(StatusCode::BAD_GATEWAY, error_response(&id, -32603, &why));
                // The request itself was never sent.
                failed.extensions_mut().insert(mcp_tasks::Unreached);
                return failed;
            }
        };
        if method == "server/discover" {
            return error_reply(StatusCode::OK, session.declared.discover(&id));
        }
        if method == "subscriptions/listen" {
            let agreed = listen::Agreed::read(message.params, &session.declared.capabilities);
            let in_session = session.id.is_some();
            let heard = heard::listen(&session.heard, session.headers(), in_session, &inner);
            return listen::stream(id, agreed, heard);
        }
        let mut parts = parts.clone();
        // The body changed length with its id.
        parts
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(forwarded.len()));
        if let Some(session) = &session.id {
            parts.headers.insert("mcp-session-id", session.clone());
        }
        parts
            .headers
            .insert("mcp-protocol-version", session.version.clone());
        // The answer is read and edited here: it must come as it is.
        parts.headers.remove(http::header::ACCEPT_ENCODING);
        let request = Request::from_parts(parts, full(forwarded.clone()));
        let mut pending = Pending::new(inner.clone(), session.clone(), own);
        let Ok(response) = inner.clone().oneshot(request).await;
        if response.status() == StatusCode::NOT_FOUND && again && session.id.is_some() {
            pending.answered();
            again = false;
            sessions.lost(&session);
            continue;
        }
        let call = Call {
            id,
            cacheable: is_cacheable(&method),
            log_level,
            pending,
            params: (method == "tools/list").then(|| shared.params.clone()),
        };
        let asking = (mask != 0).then(|| Asking {
            rounds: shared.rounds.clone(),
            inner: inner.clone(),
            session: session.clone(),
            mask,
        });
        return for_client(response, call, max, asking).await;
    }
}

/// `mutex`, locked (a poisoned lock holds a plain value still good).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `body` as a body inside the bridge.
fn plain<B>(body: B) -> Plain
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    body.map_err(|error| std::io::Error::other(error.into()))
        .boxed_unsync()
}

/// A body inside the bridge as the gateway's one body type.
fn to_box(body: Plain) -> BoxBody {
    body.map_err(|error| -> BoxError { Box::new(error) })
        .boxed_unsync()
}

/// `bytes` as a body inside the bridge.
pub(crate) fn full(bytes: Bytes) -> Plain {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `202 Accepted`, empty.
fn accepted() -> Response<Plain> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

#[cfg(test)]
mod tests;
