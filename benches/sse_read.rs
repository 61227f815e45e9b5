//! Reading an inner server's SSE stream event by event: the layer's reader
//! (`wire::sse::Events`, the SSE standard's rules) against `sse-stream`'s
//! (which the layer used before, and which refuses some of what the
//! standard takes), in the same run.
//!
//! Run: `cargo bench --bench sse_read`. Each case reads one whole stream,
//! from a body of frames, to its end, on the measuring thread:
//!
//! | Case       | Stream                                                     |
//! |------------|------------------------------------------------------------|
//! | `answer`   | one event: a fast call's response (about 120 bytes), one frame |
//! | `progress` | a priming event, three progress notifications, the response; one frame an event |
//! | `long`     | one response of 64 KiB of text in 16 KiB frames              |

use std::convert::Infallible;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::{FutureExt, StreamExt};
use http_body::Frame;
use http_body_util::StreamBody;
use mcp_tasks::wire::sse::Events;
use sse_stream::SseStream;

type Frames =
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

fn body(frames: &[Bytes]) -> Frames {
    let frames: Vec<_> = frames.iter().cloned().map(|b| Ok(Frame::data(b))).collect();
    StreamBody::new(futures_util::stream::iter(frames))
}

/// The events of `stream` to its end; how many carried data.
fn count<S, E>(stream: S) -> usize
where
    S: futures_util::Stream<Item = Result<sse_stream::Sse, E>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut data = 0;
    while let Some(event) = stream.next().now_or_never().flatten() {
        data += usize::from(event.ok().and_then(|e| e.data).is_some());
    }
    data
}

fn cases() -> Vec<(&'static str, Vec<Bytes>)> {
    let response = r#"data: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Hello, bench!"}],"isError":false}}"#;
    let answer = vec![Bytes::from(format!("event: message\n{response}\n\n"))];
    let mut progress = vec![Bytes::from_static(b"id: 0\ndata:\n\n")];
    for step in 1..=3 {
        progress.push(Bytes::from(format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"mcp-tasks/1-{step}\",\"progress\":{step},\"total\":3}}}}\n\n"
        )));
    }
    progress.push(answer[0].clone());
    let text = "x".repeat(64 * 1024);
    let long = Bytes::from(format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n\n"
    ));
    let long = (0..long.len())
        .step_by(16 * 1024)
        .map(|at| long.slice(at..(at + 16 * 1024).min(long.len())))
        .collect();
    vec![("answer", answer), ("progress", progress), ("long", long)]
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_read");
    for (name, frames) in cases() {
        assert_eq!(
            count(Events::new(body(&frames))),
            count(SseStream::new(body(&frames)))
        );
        group.bench_with_input(BenchmarkId::new("events", name), &frames, |b, frames| {
            b.iter(|| count(Events::new(body(frames))))
        });
        group.bench_with_input(
            BenchmarkId::new("sse_stream", name),
            &frames,
            |b, frames| b.iter(|| count(SseStream::new(body(frames)))),
        );
    }
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
