//! Any answer of the inner server to a declaring client's fast
//! `tools/call` (the layer's own progress token in it, so SSE answers pass
//! the per-event filter), as JSON or SSE, cut into any pieces. Checked:
//!
//! - the layer answers, within an hour of paused time;
//! - what the client gets and the outcome recorded do not depend on where
//!   the pieces were cut;
//! - a JSON answer reaches the client byte for byte;
//! - the outcome of a JSON answer is the one the observer's documentation
//!   gives, read by serde_json (when both readers of equal keys agree and
//!   no name is written with a `\u` escape, which the verdict does not
//!   decode, as documented).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mcp_tasks::observe::calls::CallOutcome;
use mcp_tasks_fuzz::{Answer, Got, Harness, declaring_call, first_wins};
use serde_json::Value;
use std::time::Duration;

fn run(answer: Answer) -> (Got, Vec<CallOutcome>) {
    let harness = Harness::new();
    let got = harness.send(declaring_call(), answer);
    let outcomes = harness.outcomes.lock().unwrap().clone();
    (got, outcomes)
}

/// The outcome the observer's documentation gives a JSON answer.
fn expected(answer: &Value) -> CallOutcome {
    let error = answer.get("error").is_some_and(|e| !e.is_null());
    let result = answer.get("result");
    let is_error = result.and_then(|r| r.get("isError")) == Some(&Value::Bool(true));
    if error || is_error || result.is_none() {
        CallOutcome::Failed
    } else {
        CallOutcome::Succeeded
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, body) = data.split_at(4);
    let sse = head[0] & 1 != 0;
    let status = if head[0] & 2 != 0 { 500 } else { 200 };
    let pieces: Vec<usize> = head[1..].iter().map(|&n| usize::from(n % 32) + 1).collect();
    let pieces = pieces.repeat(body.len() / 32 + 1);
    let answer = |pieces: Vec<usize>| Answer {
        body: Bytes::copy_from_slice(body),
        pieces,
        sse,
        status,
        delay: Duration::ZERO,
    };
    let (whole, whole_outcomes) = run(answer(vec![]));
    let (cut, cut_outcomes) = run(answer(pieces));
    assert_eq!(whole.status, cut.status);
    assert_eq!(
        whole.body, cut.body,
        "the client's body depends on the pieces"
    );
    assert_eq!(
        whole_outcomes, cut_outcomes,
        "the outcome depends on the pieces"
    );
    if sse || status != 200 {
        return;
    }
    assert_eq!(&whole.body[..], body, "a JSON answer was changed");
    let last = serde_json::from_slice::<Value>(body).ok();
    let first = first_wins(body);
    if let (Some(last), Some(first)) = (last, first)
        && last == first
        && last.is_object()
        && !body.windows(2).any(|w| w == b"\\u")
    {
        assert_eq!(whole_outcomes, vec![expected(&last)], "{last}");
    }
});
