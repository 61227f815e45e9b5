//! `subscriptions/listen` of a 2026-07-28 client, served for an upstream of
//! an older generation, which tells its list changes as notifications of
//! its session instead (both transports).
//!
//! | Rule | Why |
//! |------|-----|
//! | agreed: each of `toolsListChanged`, `promptsListChanged`, `resourcesListChanged` the client asks for and the upstream declares (`listChanged` on its capability) | a server does not promise what it cannot send |
//! | `resourceSubscriptions` and the tasks' `taskIds` not agreed here (the layer serves task status) | the bridge does not subscribe the upstream's resources |
//! | the stream: the acknowledgement first, then each agreed `notifications/*/list_changed` of the upstream, every one with `_meta["io.modelcontextprotocol/subscriptionId"]` the listen's id | as 2026-07-28 has it |
//! | a listener too slow for the upstream's notifications loses the ones it missed, never the stream | a list change tells only "list again" |
//! | the upstream's notifications end (the child stopped, its stream closed): the listen ends with its result | the client listens again |

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use super::message::{Message, event, member, result_response};
use mcp_tasks::wire::raw::edit_object;

/// How many of the upstream's notifications wait for a slow listener.
pub(crate) const BACKLOG: usize = 64;

/// The list changes a listen can agree to: (filter key, upstream
/// capability, notification method).
const LISTS: [(&str, &str, &str); 3] = [
    (
        "toolsListChanged",
        "tools",
        "notifications/tools/list_changed",
    ),
    (
        "promptsListChanged",
        "prompts",
        "notifications/prompts/list_changed",
    ),
    (
        "resourcesListChanged",
        "resources",
        "notifications/resources/list_changed",
    ),
];

/// What one listen agreed to (indexes of [`LISTS`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Agreed(Vec<usize>);

impl Agreed {
    /// What a listen's `params` ask for that `capabilities` (the upstream's,
    /// as declared) can serve.
    pub(crate) fn read(params: Option<&RawValue>, capabilities: &RawValue) -> Self {
        let asked = params.and_then(|params| member(params, "notifications"));
        let agreed = LISTS
            .iter()
            .enumerate()
            .filter(|(_, (key, _, _))| {
                asked
                    .and_then(|asked| member(asked, key))
                    .is_some_and(|value| value.get() == "true")
            })
            .filter(|(_, (_, capability, _))| {
                member(capabilities, capability)
                    .and_then(|declared| member(declared, "listChanged"))
                    .is_some_and(|value| value.get() == "true")
            })
            .map(|(at, _)| at)
            .collect();
        Self(agreed)
    }

    /// Whether the notification `method` is one this listen agreed to.
    fn wants(&self, method: &str) -> bool {
        self.0.iter().any(|at| LISTS[*at].2 == method)
    }

    /// The acknowledgement of the listen `id` (JSON text).
    pub(crate) fn acknowledgement(&self, id: &str) -> Bytes {
        let agreed: Vec<String> = self
            .0
            .iter()
            .map(|at| format!(r#""{}":true"#, LISTS[*at].0))
            .collect();
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"notifications":{{{}}},"_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}}}}}}"#,
            agreed.join(",")
        ))
    }

    /// `line`, an upstream's notification, for the listen `id`: tagged with
    /// the subscription; `None` when the listen did not ask for it.
    pub(crate) fn relayed(&self, line: &[u8], id: &str) -> Option<Bytes> {
        let message = Message::read(line)?;
        if !self.wants(message.method.as_deref()?) {
            return None;
        }
        let tag = format!(r#"{{"io.modelcontextprotocol/subscriptionId":{id}}}"#);
        let method = serde_json::to_string(message.method.as_deref()?).ok()?;
        let params = match message.params.and_then(|params| member(params, "_meta")) {
            Some(meta) => {
                let meta = edit_object(
                    meta.get(),
                    &[("io.modelcontextprotocol/subscriptionId", Some(id))],
                )?;
                let params = message.params?;
                edit_object(params.get(), &[("_meta", Some(&meta))])?
            }
            None => match message.params {
                Some(params) => edit_object(params.get(), &[("_meta", Some(&tag))])?,
                None => format!(r#"{{"_meta":{tag}}}"#),
            },
        };
        Some(Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","method":{method},"params":{params}}}"#
        )))
    }
}

/// The SSE answer to the listen `id` (JSON text) that agreed to `agreed`:
/// the acknowledgement, then the upstream's notifications from `heard`
/// that it agreed to; its result when they end.
pub(crate) fn stream<E>(
    id: String,
    agreed: Agreed,
    heard: broadcast::Receiver<Bytes>,
) -> Response<http_body_util::combinators::UnsyncBoxBody<Bytes, E>>
where
    E: Send + 'static,
{
    let first = event(&agreed.acknowledgement(&id));
    let state = (heard, agreed, id, false);
    let rest = futures_util::stream::unfold(state, |(mut heard, agreed, id, ended)| async move {
        if ended {
            return None;
        }
        loop {
            match heard.recv().await {
                Ok(line) => {
                    if let Some(relayed) = agreed.relayed(&line, &id) {
                        return Some((event(&relayed), (heard, agreed, id, false)));
                    }
                }
                // Missed some: a list change says only "list again".
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => {
                    let meta = format!(r#"{{"io.modelcontextprotocol/subscriptionId":{id}}}"#);
                    let result = format!(r#"{{"resultType":"complete","_meta":{meta}}}"#);
                    let last = event(&result_response(&id, &result));
                    return Some((last, (heard, agreed, id, true)));
                }
            }
        }
    });
    let frames = futures_util::stream::once(async move { first })
        .chain(rest)
        .map(|bytes| Ok::<_, E>(Frame::data(bytes)));
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn a_listen_gets_what_it_asked_for_and_the_upstream_declared_each_tagged() {
        let capabilities =
            raw(r#"{"tools":{"listChanged":true},"prompts":{},"resources":{"listChanged":true}}"#);
        let params =
            raw(r#"{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}"#);
        let agreed = Agreed::read(Some(&params), &capabilities);
        let ack: serde_json::Value = serde_json::from_slice(&agreed.acknowledgement("7")).unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["notifications"],
            serde_json::json!({"toolsListChanged": true})
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        let tools = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
        let relayed: serde_json::Value =
            serde_json::from_slice(&agreed.relayed(tools, "7").unwrap()).unwrap();
        assert_eq!(
            relayed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        let prompts = br#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#;
        assert!(
            agreed.relayed(prompts, "7").is_none(),
            "not declared by the upstream"
        );
        let resources = br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"x":1}}}"#;
        assert!(agreed.relayed(resources, "7").is_none(), "not asked for");
    }
}
