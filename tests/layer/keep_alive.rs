//! A long synchronous call stays alive through proxies that cut idle
//! connections: when the inner server has sent no response head after
//! `keep_alive`, the layer sends an SSE head of its own and a comment every
//! `keep_alive` until the answer, which then comes on that stream (as an
//! event, whether the inner server answered SSE or JSON); an SSE answer the
//! layer relays gets comments in its quiet gaps, between events only.
//! Clients skip comments: the raw client and rmcp's read the answer as if
//! they were not there. The inner server is the rmcp fixture, whose
//! `slow_compute` is silent when the client asks for no progress, and
//! which sends no head before its first message.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::legacy::LegacyClient;
use support::client::{Exchange, RmcpClient};
use support::layered::{Layered, ms, text};

/// The comment the layer sends.
const COMMENT: &str = ": keep-alive\n\n";

/// `slow_compute` for `seconds`, from a client without tasks, as it came.
async fn slow(layered: &Layered, seconds: f64) -> Exchange {
    let arguments = json!({"name": "slow_compute", "arguments": {"seconds": seconds}});
    layered
        .client()
        .request("tools/call", arguments, false)
        .await
}

/// Asserts `answer` is `slow_compute`'s for `seconds`.
fn done_after(answer: &Value, seconds: &str) {
    let said = text(&answer["result"]);
    assert_eq!(
        said,
        format!("slow_compute done after {seconds}s"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_silent_call_of_a_client_without_tasks_gets_keep_alive_comments_and_its_answer() {
    let layered = Layered::start(|layer| layer.keep_alive(ms(100))).await;
    let call = slow(&layered, 0.7).await;
    assert!(call.is_sse(), "{}", call.content_type());
    let comments = call.body.matches(COMMENT).count();
    assert!(
        (3..=8).contains(&comments),
        "about one comment every 100 ms of 700: {comments} in {:?}",
        call.body
    );
    let answer = call.into_response();
    done_after(&answer, "0.7");
}

#[tokio::test]
async fn a_json_answer_comes_as_an_event_and_a_real_client_reads_through_the_comments() {
    let layered = Layered::start_json(|layer| layer.keep_alive(ms(100))).await;
    let raw = slow(&layered, 0.5).await;
    assert!(raw.is_sse(), "{}", raw.content_type());
    assert!(raw.body.contains(COMMENT), "{:?}", raw.body);
    let answer = raw.into_response();
    done_after(&answer, "0.5");

    let client = RmcpClient::connect(&layered.served.url, false).await;
    let answer = client
        .call_tool("slow_compute", json!({"seconds": 0.5}), false)
        .await;
    done_after(&answer, "0.5");
    client.close().await;
}

#[tokio::test]
async fn a_call_answered_before_the_interval_gets_none() {
    let layered = Layered::start(|layer| layer.keep_alive(Duration::from_secs(30))).await;
    let call = slow(&layered, 0.3).await;
    assert!(!call.body.contains(COMMENT), "{:?}", call.body);
    done_after(&call.into_response(), "0.3");
}

#[tokio::test]
async fn a_2025_sessions_long_call_gets_the_early_stream_and_the_rmcp_2_2_client_reads_it() {
    let layered = Layered::start_sessions(|layer| layer.keep_alive(ms(100))).await;
    let session = LegacyClient::connect(&layered.served.url).await;
    let answer = session
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.5}}),
        )
        .await
        .expect("the call");
    assert_eq!(text(&answer), "slow_compute done after 0.5s", "{answer}");
    session.close().await;

    let raw = layered.client();
    let id = raw.legacy_initialize("2025-11-25", json!({})).await;
    let call = raw
        .legacy_request(
            &id,
            "2025-11-25",
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.5}}),
        )
        .await;
    assert!(call.body.contains(COMMENT), "{:?}", call.body);
    done_after(&call.into_response(), "0.5");
}
