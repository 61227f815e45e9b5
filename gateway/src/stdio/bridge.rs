//! The bridge: one child, initialized once by the bridge, shared by every
//! HTTP request; the reader that routes what the child writes.
//!
//! | What the child writes | Where it goes |
//! |-----------------------|---------------|
//! | the answer to a call | that call's client, with the client's id back (and `resultType` for a 2026-07-28 client) |
//! | `notifications/progress` | the call whose token it names, with the client's token back |
//! | `notifications/message` | the gateway's log |
//! | `notifications/*/list_changed` | the `subscriptions/listen` streams of 2026-07-28 clients |
//! | `ping` | answered here |
//! | `elicitation/create`, `sampling/createMessage`, `roots/list` during a call | asked of that call's client: as an MRTR round in 2026-07-28 (`input.rs`), on the call's stream in a 2025-11-25 session (`relayed.rs`) |
//! | `roots/list` outside a call | answered here: no roots |
//! | any other request | refused (`-32601`) |
//! | a line that is not a JSON-RPC message, not UTF-8, or over the limit | skipped, with a warning |
//! | end of output (the child exited) | every waiting call gets an error naming the exit; later calls are refused |

use crate::generation::params::ParamHeaders;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, broadcast, mpsc};

use super::calls::{Calls, Waiter};
use super::child::Spec;
use super::input::{Answered, Asked, GATHER, ROUND_WAIT, Round, Rounds, capability};
use super::life::{Life, exit_status, launch};
use super::lines::{Line, Lines, ids_in};
use super::relayed::Relayed;
use super::{Settings, StdioError};
use crate::generation::declared::Declared;
use crate::generation::listen;
use crate::generation::message::{
    Kind, Message, error_response, member, missing_capability, one_line, replaced, result_response,
};
use crate::generation::results::modernize;
use crate::metrics;

/// The one child and what talks to it.
pub(super) struct Bridge {
    pub spec: Spec,
    /// The child now (`life.rs`).
    pub life: Life,
    pub calls: Arc<Calls>,
    /// Calls waiting for their client's input.
    pub rounds: Rounds,
    /// Requests asked of sessions' clients on their calls' streams.
    pub relayed: Relayed,
    /// Places for calls in flight.
    pub slots: Arc<Semaphore>,
    /// What the first child declared.
    pub declared: Declared,
    /// The secret start of every progress token the bridge gives the child.
    pub token_prefix: String,
    /// The child's list changes, for `subscriptions/listen` (`listen.rs`).
    pub heard: broadcast::Sender<Bytes>,
    /// The child's tools' `Mcp-Param-*` headers, learnt from its lists
    /// (shared by every child of the command).
    pub params: Arc<ParamHeaders>,
    pub settings: Settings,
}

impl Bridge {
    /// Starts the child, initializes it, and starts reading it.
    pub(super) async fn start(
        spec: Spec,
        settings: Settings,
        params: Arc<ParamHeaders>,
    ) -> Result<Arc<Self>, StdioError> {
        let launched = launch(&spec, &settings).await.map_err(StdioError::Start)?;
        let bridge = Arc::new(Self {
            spec,
            life: Life::new(&launched),
            calls: Arc::new(Calls::new()),
            rounds: Rounds::default(),
            relayed: Relayed::default(),
            slots: Arc::new(Semaphore::new(settings.max_in_flight)),
            declared: launched.declared.clone(),
            token_prefix: mcp_tasks::TaskId::generate()
                .map_err(|error| StdioError::Start(format!("no random bytes: {error}")))?
                .to_string(),
            heard: broadcast::channel(listen::BACKLOG).0,
            params,
            settings,
        });
        tokio::spawn(Self::read(
            Arc::downgrade(&bridge),
            launched.lines,
            launched.process,
        ));
        bridge.warm_up().await;
        Ok(bridge)
    }

    /// Routes what the child writes until it stops, then ends every call.
    /// Holds the bridge only while it routes a line: once every
    /// [`StdioUpstream`](super::StdioUpstream) is gone, the child's stdin
    /// closes, and the child, killed when `process` drops, goes with it.
    pub(super) async fn read(
        bridge: Weak<Self>,
        mut lines: Lines,
        mut process: tokio::process::Child,
    ) {
        let why = loop {
            let line = lines.next().await;
            let Some(live) = bridge.upgrade() else { return };
            match line {
                Line::Text(line) => live.route(line.as_bytes()),
                Line::TooLong { head, tail } => live.too_long(&head, &tail),
                Line::NotText => tracing::warn!("the stdio server wrote a line that is not UTF-8"),
                Line::End(error) => break error,
            }
        };
        if let Some(live) = bridge.upgrade() {
            live.stopped(why, &mut process).await;
        }
    }

    /// The child stopped (`why`, if reading it failed): every waiting call
    /// ends with the reason, and the child is started again unless the
    /// bridge is stopping.
    async fn stopped(self: Arc<Self>, why: Option<String>, process: &mut tokio::process::Child) {
        let status = exit_status(process).await;
        let message = format!(
            "The stdio server `{}` stopped{}{}",
            self.spec.shown(),
            why.map(|why| format!(" ({why})")).unwrap_or_default(),
            status
        );
        // A stop the gateway asked for is no error.
        if self.life.stopping() {
            tracing::info!("{message}");
        } else {
            tracing::error!("{message}");
        }
        // Down first: a call arriving from now on waits for the restart
        // instead of finding the table closed.
        let again = self.life.went_down(message.clone());
        for waiter in self.calls.drain() {
            let _ = waiter
                .answer
                .send(error_response(&waiter.client_id, -32603, &message));
        }
        // The calls that waited for their client's input died with it.
        self.rounds.clear();
        self.relayed.clear();
        // After the drain, which closed the table to new calls.
        if again {
            tokio::spawn(restart(Arc::downgrade(&self)));
        }
    }

    /// A line of the child over the limit, skipped: the call it answers,
    /// if its ends name exactly one waiting call, ends with an error
    /// instead of waiting for an answer that will not come.
    fn too_long(&self, head: &[u8], tail: &[u8]) {
        let limit = self.settings.max_line_bytes;
        let mut ids = ids_in(head);
        ids.extend(ids_in(tail));
        ids.sort_unstable();
        ids.dedup();
        ids.retain(|id| self.calls.with(*id, |_| ()).is_some());
        let waiter = match ids.as_slice() {
            [id] => self.calls.take(*id),
            _ => None,
        };
        tracing::warn!(
            limit,
            failed = waiter.is_some(),
            "the stdio server wrote a line over the limit; it was skipped"
        );
        if let Some(waiter) = waiter {
            let why =
                format!("The stdio server's answer is larger than the limit of {limit} bytes");
            let _ = waiter
                .answer
                .send(error_response(&waiter.client_id, -32603, &why));
        }
    }

    /// One line from the child.
    fn route(self: &Arc<Self>, line: &[u8]) {
        let Some(message) = Message::read(line) else {
            tracing::warn!(line = %shorten(line), "the stdio server wrote a line that is not JSON; it was skipped");
            return;
        };
        match message.kind() {
            Kind::Response => self.answered(line, &message),
            Kind::Notification => self.notified(line, &message),
            Kind::Request => self.asked(&message),
            Kind::Invalid => tracing::warn!(
                line = %shorten(line),
                "the stdio server wrote a line that is not a JSON-RPC message; it was skipped"
            ),
        }
    }

    fn answered(&self, line: &[u8], message: &Message<'_>) {
        let Some(id) = message.id else { return };
        let Ok(call) = id.get().parse::<u64>() else {
            return;
        };
        self.relayed.ended(call);
        let waiter = match self.rounds.answered(call, line, &self.calls) {
            Answered::Waiter(waiter, moot) => {
                // Asked of nobody now: the call is over.
                for request in moot {
                    let refused = error_response(&request, -32603, "The call ended");
                    let _ = self.sender().try_send(refused);
                }
                waiter
            }
            Answered::Kept => return,
            Answered::Nobody => {
                tracing::debug!(id = id.get(), "an answer for no waiting call (cancelled?)");
                return;
            }
        };
        let Some(answer) = replaced(line, &[(id, &waiter.client_id)]) else {
            return;
        };
        let answer = if waiter.modern {
            if waiter.cacheable {
                self.params.learn(&answer);
            }
            modernize(answer, waiter.cacheable)
        } else {
            answer
        };
        let _ = waiter.answer.send(answer);
    }

    fn notified(&self, line: &[u8], message: &Message<'_>) {
        match message.method.as_deref() {
            Some("notifications/progress") => {
                let token = message
                    .params
                    .and_then(|params| member(params, "progressToken"));
                let Some(token) = token else { return };
                // Only a token the bridge made names a call: its prefix is
                // a secret, so a client cannot point the child's progress at
                // another client's call.
                let own: Option<String> = serde_json::from_str(token.get()).ok();
                let id = own.as_deref().and_then(|own| {
                    own.strip_prefix(self.token_prefix.as_str())?
                        .strip_prefix('-')?
                        .parse::<u64>()
                        .ok()
                });
                let Some(id) = id else { return };
                self.calls.with(id, |waiter| {
                    let Some(own) = &waiter.token else { return };
                    if let Some(note) = replaced(line, &[(token, own)]) {
                        // A slow client loses progress, not its answer.
                        let _ = waiter.notes.try_send(note);
                    }
                });
            }
            Some("notifications/message") => {
                let params = message.params.map_or("", RawValue::get);
                tracing::info!(target: "mcp_tasks::stdio::child", log = params, "log message");
            }
            Some(method) if method.ends_with("/list_changed") => {
                // Nobody listening is no error.
                let _ = self.heard.send(Bytes::copy_from_slice(line));
            }
            Some(method) => tracing::debug!(method, "a notification of the stdio server"),
            None => {}
        }
    }

    fn asked(self: &Arc<Self>, message: &Message<'_>) {
        let Some(id) = message.id else { return };
        let method = message.method.as_deref().unwrap_or_default();
        let reply = match method {
            "ping" => result_response(id.get(), "{}"),
            _ => match self.ask_client(id.get(), method, message.params) {
                Ok(()) => return,
                Err(_) if method == "roots/list" && self.calls.len() == 0 => {
                    result_response(id.get(), r#"{"roots":[]}"#)
                }
                Err((code, why)) => error_response(id.get(), code, &why),
            },
        };
        if self.sender().try_send(reply).is_err() {
            tracing::warn!(
                method,
                "the answer to a request of the stdio server was dropped"
            );
        }
    }
}

impl Bridge {
    /// Asks the client of the one waiting call the child's `request` (JSON
    /// text of its id) `method` with `params`, as an MRTR round; or why not.
    fn ask_client(
        self: &Arc<Self>,
        request: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), (i64, String)> {
        let needed = capability(method)
            .ok_or_else(|| (-32601, format!("The gateway does not relay {method}")))?;
        let mut asked = Some(Asked {
            request: request.to_owned(),
            key: needed.to_owned(),
            method: method.to_owned(),
            params: params.map_or("{}", RawValue::get).to_owned(),
        });
        let unclear = "The gateway cannot tell which call this request belongs to (several calls, or none, wait on this server)";
        // Sent with another request of the one call in a round, while no
        // other call waits: asked together.
        if self.calls.len() == 0 && self.rounds.join(&mut asked, needed) {
            return Ok(());
        }
        // A call in a round is not counted: its tool waits on the request
        // it sent (requests sent together were gathered above), and a round
        // its client abandoned must not block every other call's questions
        // until it expires.
        let call = self.calls.single().ok_or((-32603, unclear.to_owned()))?;
        let asked = asked.ok_or((-32603, unclear.to_owned()))?;
        let cannot = || {
            let why = format!(
                "The client of this call cannot answer {method} (it did not declare {needed})"
            );
            Err((-32603, why))
        };
        let relayed = self.calls.with(call, |waiter| {
            if !waiter.declared.iter().any(|have| have == needed) {
                // Roots are context a server asks for as it goes (the
                // reference server on every call) and does without: refused
                // to the child, the call goes on. What a tool needs from its
                // user (elicitation, sampling) ends a 2026-07-28 call.
                let fails = waiter.modern && needed != "roots";
                return Ok(Asking::Undeclared { modern: fails });
            }
            let Some(session) = waiter.session.as_deref().filter(|_| !waiter.modern) else {
                return Ok(Asking::Round);
            };
            // A 2025-11-25 session: on the call's stream, as that
            // protocol asks; the client answers with a POST.
            let id = self.relayed.add(request, session, call);
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{}}}"#,
                serde_json::to_string(method).unwrap_or_default(),
                asked.params
            );
            if waiter.notes.try_send(Bytes::from(line)).is_err() {
                self.relayed.answer(id, session);
                return Err((
                    -32603,
                    "The call's client has no stream to be asked on".to_owned(),
                ));
            }
            Ok(Asking::OnStream)
        });
        match relayed.ok_or((-32603, unclear.to_owned()))?? {
            Asking::OnStream => return Ok(()),
            Asking::Undeclared { modern: false } => return cannot(),
            // A 2026-07-28 call ends with -32021 naming what it lacks, as a
            // server of that protocol answers it; the child's call stops.
            Asking::Undeclared { modern: true } => {
                if let Some(waiter) = self.calls.take(call) {
                    tracing::info!(
                        method,
                        needed,
                        "the stdio server asked what the call's client did not declare; the call ends with -32021"
                    );
                    let _ = waiter
                        .answer
                        .send(missing_capability(&waiter.client_id, needed));
                    self.cancel(call, "The client cannot answer the server's request");
                }
                return cannot();
            }
            Asking::Round => {}
        }
        let waiter = self.calls.take(call).ok_or((-32603, unclear.to_owned()))?;
        let round = Round {
            call,
            asked: vec![asked],
            gathering: Some(waiter),
            early: None,
        };
        let token = self
            .rounds
            .open(round)
            .ok_or((-32603, "No round could be opened".to_owned()))?;
        let bridge = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(GATHER).await;
            let Some(live) = bridge.upgrade() else { return };
            if let Some((waiter, asked)) = live.rounds.ask(&token) {
                let asked = result_response(&waiter.client_id, &asked);
                if waiter.answer.send(asked).is_err() {
                    // Its client left while the round gathered: no one
                    // will answer, so the call ends now.
                    if let Some(round) = live.rounds.take(&token) {
                        live.give_up(round);
                    }
                    return;
                }
            }
            drop(live);
            tokio::time::sleep(ROUND_WAIT).await;
            let Some(live) = bridge.upgrade() else { return };
            if let Some(round) = live.rounds.take(&token) {
                live.give_up(round);
            }
        });
        Ok(())
    }

    /// A round whose client never came back: the child's request gets an
    /// error and its call is cancelled.
    pub(super) fn give_up(&self, round: Round) {
        let to_child = self.sender();
        for asked in &round.asked {
            let refused =
                error_response(&asked.request, -32603, "The client did not answer in time");
            let _ = to_child.try_send(refused);
        }
        self.cancel(round.call, "The client did not answer in time");
    }

    /// Tells the child to stop its call `call` (the bridge's id), for `reason`.
    fn cancel(&self, call: u64, reason: &str) {
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{call},"reason":{}}}}}"#,
            serde_json::to_string(reason).unwrap_or_default()
        );
        let _ = self.sender().try_send(Bytes::from(cancel));
    }
}

/// How the child's request during a call is asked of its client.
enum Asking {
    /// On the call's stream, in a 2025-11-25 session.
    OnStream,
    /// As an MRTR round (2026-07-28).
    Round,
    /// Not at all: the client did not declare what it takes; `modern`:
    /// the call ends with -32021 (else the child's request is refused).
    Undeclared { modern: bool },
}

/// The start of `line`, for the log.
pub(super) fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if line.len() > 200 {
        format!("{text}…")
    } else {
        text
    }
}

/// How long a line may wait for room in the child's input queue: a child
/// that stops reading its stdin fails the calls sent to it after this,
/// instead of holding them.
const STDIN_WAIT: Duration = Duration::from_secs(10);

/// How long the warm-up waits for the child's tool list: it only saves the
/// first client a slow call, so a child that never answers it must not hold
/// the gateway's start for the whole start timeout.
const WARM_UP_WAIT: Duration = Duration::from_secs(3);

impl Bridge {
    /// Lists the child's tools once, before any client comes: a server may
    /// set up lazily on its first request (FastMCP takes about 0.4 s), which
    /// would otherwise make the first client's fast call slow enough to
    /// become a task. Read-only by the protocol; skipped for a server
    /// without tools.
    async fn warm_up(&self) {
        if member(&self.declared.capabilities, "tools").is_none() {
            return;
        }
        let (notes, _) = mpsc::channel(1);
        let (answer, answered) = tokio::sync::oneshot::channel();
        let waiter = Waiter {
            client_id: "0".to_owned(),
            token: None,
            session: None,
            modern: false,
            cacheable: false,
            declared: Vec::new(),
            notes,
            answer,
        };
        let Ok(own) = self.calls.add(waiter) else {
            return;
        };
        let list = format!(r#"{{"jsonrpc":"2.0","id":{own},"method":"tools/list"}}"#);
        let wait = self.settings.start_timeout.min(WARM_UP_WAIT);
        if self.send(Bytes::from(list)).await.is_ok()
            && tokio::time::timeout(wait, answered).await.is_err()
        {
            tracing::warn!(
                waited = ?wait,
                "the stdio server did not answer tools/list; serving without warming it up"
            );
        }
        self.calls.take(own);
    }

    /// Where lines for the child go now.
    pub(super) fn sender(&self) -> mpsc::Sender<Bytes> {
        self.life.sender()
    }

    /// Queues `line` for the child; an error says why it cannot take it.
    pub(super) async fn send(&self, line: Bytes) -> Result<(), String> {
        match self.sender().send_timeout(one_line(line), STDIN_WAIT).await {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => Err(format!(
                "The stdio server `{}` has not read its input for {STDIN_WAIT:?}",
                self.spec.shown()
            )),
            Err(mpsc::error::SendTimeoutError::Closed(_)) => Err(self
                .gone()
                .unwrap_or_else(|| "The stdio server stopped".to_owned())),
        }
    }

    /// Why the child is down, if it is.
    pub(super) fn gone(&self) -> Option<String> {
        self.life.gone()
    }
}

/// The first wait before starting an exited child again, and the longest.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));

/// Starts the child of `bridge` again, with backoff, until it runs or the
/// bridge is dropped or stopping. Boxed: it starts the reader, which starts
/// it, and a named `Send` future ends that loop of types.
fn restart(bridge: Weak<Bridge>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(restart_with_backoff(bridge))
}

async fn restart_with_backoff(bridge: Weak<Bridge>) {
    let mut wait = BACKOFF.0;
    loop {
        tokio::time::sleep(wait).await;
        let Some(live) = bridge.upgrade() else { return };
        if live.life.stopping() {
            return;
        }
        match launch(&live.spec, &live.settings).await {
            Ok(launched) => {
                // Open before the calls waiting for the child are woken.
                live.calls.reopen();
                if live.life.came_back(&launched) {
                    metrics::restarted();
                    let warm = live.clone();
                    tracing::warn!(command = %live.spec.shown(), "the stdio server was started again");
                    tokio::spawn(Bridge::read(
                        Arc::downgrade(&live),
                        launched.lines,
                        launched.process,
                    ));
                    tokio::spawn(async move { warm.warm_up().await });
                } else {
                    // Stopping: no call may wait on a child that is not kept.
                    drop(live.calls.drain());
                }
                return;
            }
            Err(why) => {
                tracing::error!(%why, retry_in = ?wait, "the stdio server could not be started again");
                wait = (wait * 2).min(BACKOFF.1);
            }
        }
    }
}
