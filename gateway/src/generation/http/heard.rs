//! What an upstream session says on its own stream (the session's GET),
//! read while 2026-07-28 clients listen: its list changes, for
//! `subscriptions/listen` (`generation/listen.rs`).
//!
//! | Rule | Why |
//! |------|-----|
//! | opened by the first listen of the session, read by one task, fanned out to every listener | one stream per session, however many listen |
//! | when it ends (the upstream closed it, or refused it), the listens end with their result, and the next listen opens it again | the client listens again, as after any end |
//! | an upstream that opens no session has no such stream: its listens are acknowledged and hear nothing | there is nothing to hear |

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::ACCEPT;
use http::{HeaderValue, Method};
use mcp_tasks::wire::sse::Events;
use tokio::sync::broadcast;
use tower::ServiceExt;

use super::exchange::own_request;
use super::{Upstream, lock};
use crate::generation::listen::BACKLOG;

/// The listeners of one session's stream.
#[derive(Debug, Default)]
pub(crate) struct Heard {
    /// While the stream is read.
    open: Mutex<Option<broadcast::Sender<Bytes>>>,
}

/// A listener of a session's stream (`heard`, the session's; `headers`,
/// those of a request in it; `in_session`: the upstream opened one),
/// opened through `inner` if nobody listens yet.
pub(crate) fn listen(
    heard: &Arc<Heard>,
    headers: Vec<(&'static str, HeaderValue)>,
    in_session: bool,
    inner: &Upstream,
) -> broadcast::Receiver<Bytes> {
    let mut open = lock(&heard.open);
    if let Some(sender) = open.as_ref() {
        return sender.subscribe();
    }
    let (sender, receiver) = broadcast::channel(BACKLOG);
    if in_session {
        *open = Some(sender.clone());
        tokio::spawn(read(inner.clone(), headers, heard.clone(), sender));
    }
    receiver
}

/// Reads the session's stream, passing on each notification, until it
/// ends.
async fn read(
    inner: Upstream,
    headers: Vec<(&'static str, HeaderValue)>,
    heard: Arc<Heard>,
    sender: broadcast::Sender<Bytes>,
) {
    let mut request = own_request(String::new(), &headers);
    *request.method_mut() = Method::GET;
    request
        .headers_mut()
        .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    request.headers_mut().remove(http::header::CONTENT_TYPE);
    let Ok(response) = inner.oneshot(request).await;
    if response.status().is_success() {
        let mut events = std::pin::pin!(Events::new(response.into_body()));
        while let Some(Ok(event)) = events.next().await {
            if let Some(data) = event.data.filter(|data| data.contains("list_changed")) {
                // Nobody listening is no error.
                let _ = sender.send(Bytes::from(data));
            }
        }
        tracing::debug!("the upstream session's stream ended");
    } else {
        tracing::info!(status = %response.status(), "the upstream refused its session's stream: listens hear nothing");
    }
    // Its listens end; the next listen opens it again.
    *lock(&heard.open) = None;
}
