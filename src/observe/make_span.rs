//! [`MakeSpan`]: how the layer makes the span of each request it handles,
//! a hook with a default type, as tower-http's `trace` layer has one.
//!
//! | Type | Span |
//! |------|------|
//! | [`DefaultMakeSpan`] | `mcp.request` at `info`, named after the MCP method (`otel.name`, `otel.kind`, `mcp.method.name`), with the fields the layer fills later (`gen_ai.tool.name`, `mcp.task.id`, `error.type`); none at all when no subscriber takes `info` spans |
//! | your own ([`TasksLayer::make_span`](crate::TasksLayer::make_span)) | whatever it makes: another level or name, fields read from the request head (a request id, the client's address) |
//!
//! The layer records `gen_ai.tool.name`, `mcp.task.id` and `error.type` on
//! the span it gets: a span of your own shows them only if it declares them
//! (`tracing::field::Empty`). Requests that pass through to the inner
//! server untouched get no span and never reach the hook.

use http::request::Parts;
use tracing::Span;

/// Makes the span of a request the layer handles.
pub trait MakeSpan: Send + Sync + 'static {
    /// The span of a request of the MCP `method`, whose head is `parts`.
    fn make_span(&self, method: &'static str, parts: &Parts) -> Span;
}

/// The layer's own request span (see the module's table).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultMakeSpan;

impl MakeSpan for DefaultMakeSpan {
    fn make_span(&self, method: &'static str, _parts: &Parts) -> Span {
        super::request_span(method)
    }
}

impl<F> MakeSpan for F
where
    F: Fn(&'static str, &Parts) -> Span + Send + Sync + 'static,
{
    fn make_span(&self, method: &'static str, parts: &Parts) -> Span {
        self(method, parts)
    }
}
