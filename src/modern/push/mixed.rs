//! A listen that asks for task status *and* for other notifications: the
//! inner server gets the listen without `taskIds` (and without the tasks
//! extension), and the client gets one stream carrying both.
//!
//! The inner server's acknowledgement stays first: the layer holds its own
//! notifications until it has passed, adding the agreed `taskIds` to it.
//! Then the inner server's events and the layer's `notifications/tasks`
//! interleave as they come. The inner server's stream ends the listen; the
//! task part stops with it (and stops earlier, silently, once every task
//! is terminal). An inner answer that is not a stream (an error, such as
//! rmcp's `-32601` for a server without subscriptions) reaches the client
//! unchanged, and no task part is served.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use http_body::Body;
use serde_json::Value;
use tokio::sync::mpsc;

use super::listen::{Feeder, ListenCall, Merged, agree};
use crate::body::{BoxError, ResponseBody, reply_response};
use crate::runtime::Runtime;
use crate::runtime::feed::Hub;
use crate::runtime::feed::stream::{BUFFER, Inner, event_stream, inner_events};

/// Answers a merged listen from the inner server's `response`.
pub(crate) async fn merged<RB>(
    runtime: Arc<Runtime>,
    hub: &Hub,
    owner: Option<String>,
    call: ListenCall,
    response: Response<RB>,
) -> Response<ResponseBody<RB>>
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    let events = match inner_events(response) {
        Inner::Stream(_, events) => events,
        Inner::Answer(answer) => return answer,
    };
    let agreed = match agree(&runtime, hub, owner.as_deref(), &call).await {
        Ok(agreed) => agreed,
        // Refused: the client gets the refusal, the inner stream is dropped.
        Err(refused) => return reply_response(refused),
    };
    let names: Vec<String> = agreed.names().into_iter().map(str::to_owned).collect();
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER + agreed.tasks.len() + 1);
    let first = agreed.tasks.into_iter().map(|(_, task)| task).collect();
    let link = Merged::default();
    let background = runtime.background.clone();
    let feeder = Feeder::new(
        runtime,
        owner,
        call.id,
        agreed.watch,
        tx.clone(),
        Some(link.clone()),
    );
    let relay = relay(events, tx, names, feeder, first, link);
    background.spawn_detached(relay);
    event_stream(rx)
}

/// Relays the inner server's events until its stream ends or the client
/// leaves, starting the feeder once the acknowledgement has passed.
async fn relay<S>(
    mut events: S,
    tx: mpsc::Sender<Bytes>,
    names: Vec<String>,
    feeder: Feeder,
    first: Vec<crate::task::TaskSnapshot>,
    link: Merged,
) where
    S: futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
{
    let mut feeder = Some((feeder, first));
    loop {
        let event = tokio::select! {
            _ = link.ended.cancelled() => break,
            _ = tx.closed() => break,
            event = events.next() => event,
        };
        let Some(Ok(mut event)) = event else { break };
        if let Some((_, _)) = &feeder
            && let Some(data) = event.data.as_deref()
            && let Some(ack) = with_task_ids(data, &names)
        {
            event.data = Some(ack);
            if tx.send(Bytes::from(event)).await.is_err() {
                break;
            }
            if let Some((feeder, first)) = feeder.take() {
                feeder.start(first);
            }
            continue;
        }
        if tx.send(Bytes::from(event)).await.is_err() {
            break;
        }
    }
    link.ended.cancel();
    let last_word = link
        .last_word
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(word) = last_word {
        // A client too slow for this gets the end of the stream without it.
        let _ = tokio::time::timeout(LAST_WORD_WAIT, tx.send(word)).await;
    }
}

/// How long the relay waits to hand a slow client the stream's last word.
const LAST_WORD_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The inner server's acknowledgement with `taskIds` added to what it
/// agreed to; `None` for any other message.
fn with_task_ids(data: &str, names: &[String]) -> Option<String> {
    let mut message: Value = serde_json::from_str(data).ok()?;
    if message.get("method")? != "notifications/subscriptions/acknowledged" {
        return None;
    }
    let notifications = message
        .get_mut("params")?
        .as_object_mut()?
        .entry("notifications")
        .or_insert_with(|| Value::Object(Default::default()));
    notifications
        .as_object_mut()?
        .insert("taskIds".to_owned(), Value::from(names.to_vec()));
    serde_json::to_string(&message).ok()
}
