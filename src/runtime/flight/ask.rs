//! Requests of the layer's own to the inner server: a `tools/list` page
//! (`runtime::hints`), `server/discover` (`own_tasks`), and `tasks/get` or
//! `tasks/cancel` of a task the inner server made (`runtime::follow`).
//!
//! Each goes with the credentials and extensions of the client request it
//! serves (its [`Template`]), as a 2026-07-28 request with the request
//! `_meta` the layer writes as its own client, or, for a call of an older
//! session, in that session as its version.

use bytes::Bytes;
use http::{HeaderValue, Request};
use serde_json::value::RawValue;

use super::caller::CallInner;
use super::{Event, Flight};
use crate::runtime::mrtr::Template;
use crate::wire::{MODERN_VERSION, Outcome, TASKS_EXTENSION};

/// The client capabilities the layer declares: none, or the tasks
/// extension (to read the inner server's own tasks).
#[derive(Clone, Copy)]
pub(crate) enum Declares {
    Nothing,
    Tasks,
}

/// The `"_meta":{…}` member of a 2026-07-28 request of the layer's.
pub(crate) fn modern_meta(declares: Declares) -> String {
    let capabilities = match declares {
        Declares::Nothing => "{}".to_owned(),
        Declares::Tasks => format!(r#"{{"extensions":{{"{TASKS_EXTENSION}":{{}}}}}}"#),
    };
    format!(
        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{capabilities},"io.modelcontextprotocol/clientInfo":{{"name":"mcp-tasks","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// The POST of `body`, a request for `method` (about `name`, its
/// `Mcp-Name`), as version `older` (in its session) or as 2026-07-28. The
/// `Mcp-Param-*` headers of the client's call stay out: they describe its
/// `tools/call`, not this request.
pub(crate) fn request(
    template: &Template,
    body: String,
    method: &'static str,
    name: Option<&str>,
    older: Option<&HeaderValue>,
) -> Result<Request<Bytes>, String> {
    let mut request = template
        .post(body, MODERN_VERSION)
        .map_err(|e| e.to_string())?;
    let headers = request.headers_mut();
    let params: Vec<_> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("mcp-param-"))
        .cloned()
        .collect();
    for param in params {
        headers.remove(param);
    }
    if let Some(version) = older {
        headers.insert("mcp-protocol-version", version.clone());
    }
    headers.insert("mcp-method", HeaderValue::from_static(method));
    if let Some(name) = name {
        let value = HeaderValue::from_str(name).map_err(|e| e.to_string())?;
        headers.insert("mcp-name", value);
    }
    Ok(request)
}

/// Sends `request` (whose JSON-RPC id is `id`) and reads its answer to the
/// result object; anything else (an error, a broken stream) is an `Err`.
/// The inner server's requests and progress on the way are ignored.
pub(crate) async fn result(
    caller: &mut dyn CallInner,
    id: &str,
    request: Request<Bytes>,
    limit: usize,
) -> Result<Box<RawValue>, String> {
    let id = RawValue::from_string(id.to_owned()).map_err(|e| e.to_string())?;
    let mut flight = Flight::background(id, caller.call(request), limit);
    loop {
        match flight.next_event().await {
            Event::Done(answer) => {
                return match answer.into_outcome()? {
                    Outcome::Result(result) => Ok(result),
                    Outcome::Error(error) => Err(format!("answered the error {}", error.get())),
                    Outcome::InputRequired(_) => Err("asked for input".to_owned()),
                };
            }
            Event::Progress(_) | Event::Request(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layers_meta_declares_what_it_reads() {
        let plain: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", modern_meta(Declares::Nothing))).unwrap();
        let meta = &plain["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
        let tasks: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", modern_meta(Declares::Tasks))).unwrap();
        let capabilities = &tasks["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(
            capabilities["extensions"][TASKS_EXTENSION],
            serde_json::json!({})
        );
    }

    #[test]
    fn a_request_of_the_layers_names_its_method_and_drops_the_calls_param_headers() {
        let parts = Request::post("http://127.0.0.1/mcp")
            .header("authorization", "Bearer t")
            .header("mcp-param-region", "eu")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let template = Template::from_parts(&parts);
        let request = request(&template, "{}".into(), "tasks/get", Some("t-1"), None).unwrap();
        let headers = request.headers();
        assert_eq!(headers["mcp-method"], "tasks/get");
        assert_eq!(headers["mcp-name"], "t-1");
        assert_eq!(headers["authorization"], "Bearer t");
        assert_eq!(headers["mcp-protocol-version"], MODERN_VERSION);
        assert!(headers.get("mcp-param-region").is_none());
    }
}
