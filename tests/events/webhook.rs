//! Webhooks over a recording transport (the gateway's HTTPS transport and
//! an independent verifier are tested in the gateway crate): the
//! subscription's checks, the verification handshake, each change signed
//! and sent, a receiver that fails twice getting the event on the third
//! try, the caps, a refresh and an unsubscribe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use mcp_tasks::EventsConfig;
use mcp_tasks::webhook::{CallbackPolicy, Deliver, DeliverFuture, Delivered, Delivery};
use serde_json::{Value, json};
use sha2::Sha256;

use super::support::wait::{BOUND, wait_until};
use super::{NAME, events_request, serve, start_as};

/// What the receiver does with an event it has seen `tries` times.
#[derive(Clone, Copy)]
enum Answers {
    /// 500 for the first two tries of each event, then 204.
    FailTwice,
    /// A wrong challenge to the verification.
    WrongChallenge,
}

#[derive(Default)]
struct Seen {
    posts: Vec<(http::HeaderMap, Bytes)>,
    tries: HashMap<String, u32>,
}

#[derive(Clone)]
struct Receiver {
    answers: Answers,
    seen: Arc<Mutex<Seen>>,
}

impl Deliver for Receiver {
    fn deliver(&self, delivery: Delivery) -> DeliverFuture {
        let (answers, seen) = (self.answers, self.seen.clone());
        Box::pin(async move {
            let body: Value = serde_json::from_slice(&delivery.body).unwrap();
            let id = delivery.headers["webhook-id"].to_str().unwrap().to_owned();
            let mut seen = seen.lock().unwrap();
            seen.posts
                .push((delivery.headers.clone(), delivery.body.clone()));
            let tries = {
                let tries = seen.tries.entry(id).or_default();
                *tries += 1;
                *tries
            };
            let answer = |status: u16, body: Value| {
                Ok(Delivered {
                    status: http::StatusCode::from_u16(status).unwrap(),
                    body: Bytes::from(body.to_string()),
                })
            };
            if body["type"] == "verification" {
                return match answers {
                    Answers::WrongChallenge => answer(200, json!({"challenge": "no"})),
                    Answers::FailTwice => answer(200, json!({"challenge": body["challenge"]})),
                };
            }
            if tries <= 2 {
                answer(500, json!({}))
            } else {
                answer(204, json!({}))
            }
        })
    }
}

fn receiver(answers: Answers) -> Receiver {
    Receiver {
        answers,
        seen: Arc::default(),
    }
}

fn config(receiver: &Receiver) -> EventsConfig {
    EventsConfig::new()
        .webhooks(receiver.clone(), CallbackPolicy::new())
        .retries(5, Duration::from_millis(20), Duration::from_millis(100))
}

fn secret() -> String {
    format!("whsec_{}", STANDARD.encode([42u8; 32]))
}

fn subscription(url: &str) -> Value {
    json!({
        "arguments": {},
        "delivery": {"mode": "webhook", "url": url, "secret": secret()},
        "cursor": null,
        "ttlMs": 60000,
    })
}

/// `events/subscribe` of `url` as `user`, with the test secret.
async fn subscribe_as(client: &super::McpClient, url: &str, user: &str) -> super::Exchange {
    events_request(client, "events/subscribe", subscription(url), user).await
}

/// Checks the Standard Webhooks signature of one POST, computed here
/// with HMAC-SHA256 directly.
fn verify(headers: &http::HeaderMap, body: &[u8]) {
    let text = |name: &str| headers[name].to_str().unwrap().to_owned();
    let signed = format!("{}.{}.", text("webhook-id"), text("webhook-timestamp"));
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&[42u8; 32]).unwrap();
    mac.update(signed.as_bytes());
    mac.update(body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    assert_eq!(text("webhook-signature"), expected);
    assert_eq!(text("content-type"), "application/json");
    assert!(text("x-mcp-subscription-id").starts_with("sub_"));
}

#[tokio::test]
async fn each_change_is_signed_and_a_receiver_failing_twice_gets_it_on_the_third_try() {
    let hooks = receiver(Answers::FailTwice);
    let layered = serve(config(&hooks)).await;
    let client = layered.client();
    let subscribed = subscribe_as(&client, "https://hooks.example.com/mcp", "alice")
        .await
        .into_response();
    let result = &subscribed["result"];
    assert!(
        result["id"].as_str().unwrap().starts_with("sub_"),
        "{subscribed}"
    );
    assert!(result["refreshBefore"].as_str().unwrap().ends_with('Z'));
    assert_eq!(result["truncated"], false);

    let task = start_as(&client, "alice", 0.3).await;
    let _bobs = start_as(&client, "bob", 0.1).await;
    let delivered = wait_until("both of the task's changes are taken", BOUND, || async {
        let seen = hooks.seen.lock().unwrap();
        let taken: Vec<Value> = seen
            .posts
            .iter()
            .map(|(_, body)| serde_json::from_slice::<Value>(body).unwrap())
            .filter(|body| body.get("eventId").is_some())
            .filter(|body| seen.tries[body["eventId"].as_str().unwrap()] >= 3)
            .collect();
        let statuses: Vec<&str> = taken
            .iter()
            .map(|body| body["data"]["status"].as_str().unwrap())
            .collect();
        (statuses.contains(&"completed")).then(|| taken.clone())
    })
    .await;
    let seen = hooks.seen.lock().unwrap();
    for (headers, body) in &seen.posts {
        verify(headers, body);
    }
    // Each event three times (500, 500, 204), under its own id each time.
    let mut events: Vec<(String, String, u32)> = Vec::new();
    for body in &delivered {
        let id = body["eventId"].as_str().unwrap().to_owned();
        let status = body["data"]["status"].as_str().unwrap().to_owned();
        assert_eq!(
            body["data"]["taskId"],
            task.as_str(),
            "only alice's task: {body}"
        );
        assert_eq!(body["name"], NAME);
        assert!(body["cursor"].is_string());
        if !events.iter().any(|(known, _, _)| *known == id) {
            events.push((id.clone(), status, seen.tries[&id]));
        }
    }
    let statuses: Vec<&str> = events.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(statuses, ["working", "completed"], "{events:?}");
    assert!(events.iter().all(|(_, _, tries)| *tries == 3), "{events:?}");
    let verification = seen
        .posts
        .iter()
        .filter(|(_, body)| {
            body.starts_with(br#"{"challenge""#)
                || body.windows(14).any(|w| w == b"\"verification\"")
        })
        .count();
    assert_eq!(verification, 1);
}

#[tokio::test]
async fn subscriptions_are_checked_capped_refreshed_and_removed() {
    let hooks = receiver(Answers::FailTwice);
    let layered = serve(config(&hooks).max_hooks(1, 10)).await;
    let client = layered.client();
    let code = |exchange: &super::Exchange| exchange.response().unwrap()["error"]["code"].clone();
    // Not https, a secret of the wrong form, another mode: refused.
    let plain = subscribe_as(&client, "http://h.example.com/", "alice").await;
    assert_eq!(code(&plain), -32602, "{}", plain.body);
    let mut short = subscription("https://h.example.com/");
    short["delivery"]["secret"] = json!("whsec_AAAA");
    assert_eq!(
        code(&events_request(&client, "events/subscribe", short, "alice").await),
        -32602
    );
    // Addresses that are not public, written in the URL; a file URL.
    for hostile in [
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]:8443/hook",
        "file:///etc/passwd",
    ] {
        let refused = subscribe_as(&client, hostile, "alice").await;
        assert_eq!(code(&refused), -32602, "{hostile}: {}", refused.body);
    }
    let mut push = subscription("https://h.example.com/");
    push["delivery"]["mode"] = json!("push");
    let refused = events_request(&client, "events/subscribe", push, "alice").await;
    assert_eq!(code(&refused), -32014, "{}", refused.body);

    let first = subscribe_as(&client, "https://a.example.com/", "alice")
        .await
        .into_response();
    let again = subscribe_as(&client, "https://a.example.com/", "alice")
        .await
        .into_response();
    assert_eq!(
        first["result"]["id"], again["result"]["id"],
        "a refresh keeps the id"
    );
    let capped = subscribe_as(&client, "https://b.example.com/", "alice").await;
    assert_eq!(code(&capped), -32013, "{}", capped.body);
    // Bob has room of his own, and his key gives another id.
    let bobs = subscribe_as(&client, "https://a.example.com/", "bob")
        .await
        .into_response();
    assert_ne!(bobs["result"]["id"], first["result"]["id"]);

    let gone = json!({"arguments": {}, "delivery": {"url": "https://a.example.com/"}});
    let removed = events_request(&client, "events/unsubscribe", gone.clone(), "alice")
        .await
        .into_response();
    assert_eq!(removed["result"]["resultType"], "complete", "{removed}");
    let twice = events_request(&client, "events/unsubscribe", gone, "alice").await;
    assert_eq!(code(&twice), -32011, "{}", twice.body);
}

#[tokio::test]
async fn a_callback_that_does_not_echo_the_challenge_is_not_subscribed() {
    let hooks = receiver(Answers::WrongChallenge);
    let layered = serve(config(&hooks)).await;
    let client = layered.client();
    let refused = subscribe_as(&client, "https://h.example.com/", "alice").await;
    let error = &refused.response().unwrap()["error"];
    assert_eq!(error["code"], -32015, "{}", refused.body);
    assert_eq!(error["data"]["reason"], "challenge_failed");
}

#[tokio::test]
async fn webhooks_need_a_transport_and_a_principal() {
    let layered = serve(EventsConfig::new()).await;
    let client = layered.client();
    let refused = subscribe_as(&client, "https://h.example.com/", "alice").await;
    assert_eq!(
        refused.response().unwrap()["error"]["code"],
        -32014,
        "{}",
        refused.body
    );

    let hooks = receiver(Answers::FailTwice);
    let layered =
        super::support::layered::Layered::start(|layer| layer.events(config(&hooks))).await;
    let client = layered.client();
    let id = client.next_id();
    let mut params = subscription("https://h.example.com/");
    params["name"] = json!(NAME);
    let anonymous =
        super::support::layered::send(&client, id, "events/subscribe", params, false, &[]).await;
    assert_eq!(
        anonymous.response().unwrap()["error"]["code"],
        -32012,
        "{}",
        anonymous.body
    );
}
