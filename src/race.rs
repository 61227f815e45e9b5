//! A declaring client's `tools/call`: forward it, race the threshold, and
//! park it if it runs long.
//!
//! | The call…                                  | The client gets                                  |
//! |--------------------------------------------|--------------------------------------------------|
//! | answers before the threshold               | the inner answer, unchanged                      |
//! | outlives it, and the runtime starts a task | the task handle (`CreateTaskResult`)             |
//! | outlives it, but is refused a task (draining, over a limit, the store failing) | the inner answer once it comes, as without the layer |
//! | has policy `Never`                         | the inner answer, the call never raced           |
//!
//! A refused call stays in the request's future, so a client that hangs up
//! still cancels it, and the layer never turns a flood of calls into a flood
//! of background work. Its response goes out at once from where it stands
//! (what was read, then the rest as it streams), so the layer holds nothing
//! more of it.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::value::RawValue;
use tower_service::Service;

use crate::body::{BoxError, RequestBody, ResponseBody, reply_response};
use crate::classify::ToolCall;
use crate::flight::caller::Caller;
use crate::flight::driver::Plain;
use crate::flight::{Event, Flight, InnerFuture};
use crate::mrtr::Template;
use crate::policy::ToolPolicy;
use crate::rewrite;
use crate::runtime::{First, NotStarted, Runtime, Start};
use crate::wire::jsonrpc::Reply;
use crate::wire::view::{TaskView, render};

/// The `params` object at `range` of a body classification has read.
fn raw_params(body: &[u8], range: std::ops::Range<usize>) -> Box<RawValue> {
    body.get(range)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| RawValue::from_string(text.to_owned()).ok())
        .unwrap_or_else(crate::wire::raw::empty_object)
}

/// Forwards, races and parks a declaring client's `tools/call`.
pub(crate) async fn tool_call<S, B, RB>(
    runtime: Arc<Runtime>,
    mut inner: S,
    mut parts: Parts,
    bytes: Bytes,
    call: ToolCall,
) -> Result<Response<ResponseBody<RB>>, S::Error>
where
    S: Service<Request<RequestBody<B>>, Response = Response<RB>> + Clone + Send + 'static,
    B: Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + 'static,
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    // The forwarded body loses the tasks extension, byte-exact otherwise; the
    // params kept for re-issuing are those of the forwarded body.
    let (body, params) = match rewrite::strip_tasks_extension(&bytes, call.extensions.clone()) {
        Some((body, shorter)) => (body, call.params.start..call.params.end - shorter),
        None => (bytes, call.params.clone()),
    };
    parts.headers.remove(CONTENT_LENGTH);
    if call.policy == ToolPolicy::Never {
        let request = Request::from_parts(parts, RequestBody::buffered(body));
        return Ok(inner.call(request).await?.map(ResponseBody::inner));
    }
    // What a parked call needs later: its owner, and what re-issuing takes.
    let owner = runtime.owner(&parts);
    let params = raw_params(&body, params);
    let template = Template::from_parts(&parts);
    let caller = Caller::<S, B>::boxed(inner.clone());
    let request = Request::from_parts(parts, RequestBody::buffered(body));
    let future: InnerFuture = Box::pin(inner.call(request).map(|result| match result {
        Ok(response) => Ok(response.map(|body| body.map_err(Into::into).boxed_unsync())),
        Err(error) => Err(error.into()),
    }));
    let mut flight = Flight::new(call.id.clone(), future, runtime.config.max_result_bytes);
    let mut progress = None;
    // `Always` and a zero threshold park before the first answer; otherwise
    // the call races the threshold and an answer in time goes back unchanged.
    let race = call.policy != ToolPolicy::Always && !runtime.config.threshold.is_zero();
    if race {
        let raced = tokio::time::timeout(runtime.config.threshold, async {
            loop {
                match flight.next_event().await {
                    Event::Progress(line) => progress = Some(line),
                    // Relayed with the rest of the stream if the call
                    // answers in time; a parked call cannot be asked.
                    Event::Request(_) => {}
                    Event::Done(answer) => return answer,
                }
            }
        })
        .await;
        if let Ok(answer) = raced {
            return Ok(answer.into_response());
        }
    }
    let start = Start {
        owner: owner.key,
        ttl: runtime.config.ttl,
        status_message: progress,
        caller,
        template,
        params,
        dialect: Box::new(Plain),
    };
    match runtime.start(start, First::Running(flight)).await {
        Ok(snapshot) => {
            let reply = Reply::result(&call.id, render(&snapshot, TaskView::Created));
            Ok(reply_response(reply))
        }
        Err(NotStarted { why, first }) => {
            let message = why.message(&runtime);
            if why.is_limit() {
                tracing::info!(reason = message, "not parked: the call stays synchronous");
            } else {
                tracing::warn!(reason = message, "not parked: the call stays synchronous");
            }
            match first.map(|first| *first) {
                Some(First::Running(flight)) => Ok(flight.into_response().await),
                _ => {
                    let reply =
                        Reply::internal(Some(&call.id), "The call was lost while parking it");
                    Ok(reply_response(reply))
                }
            }
        }
    }
}
