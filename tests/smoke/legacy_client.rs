//! Proves the rmcp 2.2 legacy client (2025-11-25 sessions) works against the
//! bare fixture in session mode, without any layer.

use crate::support;

use serde_json::{Value, json};
use support::{
    client::{ElicitReply, LegacyClient},
    fixture::{FixtureMode, serve_fixture},
};

/// Text of the first content block of a raw `tools/call` result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

#[tokio::test]
async fn legacy_client_round_trips_raw_requests() {
    let (served, probe) = serve_fixture(FixtureMode::Session).await;
    let client = LegacyClient::connect(&served.url).await;

    // The handshake negotiated 2025-11-25 on a session; the bare fixture
    // advertises tools but no tasks.
    let session = client.session_id().expect("Mcp-Session-Id from initialize");
    let init = client.initialize_response();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(client.server_capabilities()["tools"].is_object(), "{init}");
    assert!(
        client.server_capabilities().get("tasks").is_none(),
        "{init}"
    );
    let info = client.peer_info().expect("typed peer info");
    assert!(info.capabilities.tasks.is_none());

    let tools = client
        .request("tools/list", json!({}))
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"greet"), "{tools}");
    assert!(names.contains(&"confirm_delete"), "{tools}");

    let greet = client
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "legacy"}}),
        )
        .await
        .expect("greet");
    assert_eq!(text(&greet), "Hello, legacy!");
    // Raw, not re-serialized: a legacy session gets no resultType.
    assert!(greet.get("resultType").is_none(), "{greet}");

    // Every request after initialize carried the session and the version.
    let greet_post = client
        .wire()
        .http()
        .into_iter()
        .find(|exchange| exchange["body"]["params"]["name"] == "greet")
        .expect("greet POST");
    assert_eq!(greet_post["headers"]["mcp-session-id"], session.as_str());
    assert_eq!(greet_post["headers"]["mcp-protocol-version"], "2025-11-25");
    // rmcp adds a progress token to every request.
    assert!(
        greet_post["body"]["params"]["_meta"]["progressToken"].is_number(),
        "{greet_post}"
    );

    // confirm_delete asks with a real elicitation/create on the call's
    // response stream; the handler accepts with {"confirm": true}.
    assert!(client.received().is_empty());
    let deleted = client
        .request(
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"filename": "old.txt"}}),
        )
        .await
        .expect("confirm_delete");
    assert!(text(&deleted).starts_with("Deleted old.txt"), "{deleted}");
    let received = client.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["method"], "elicitation/create");
    assert_eq!(received[0]["params"]["mode"], "form", "{}", received[0]);
    assert!(
        received[0]["params"]["requestedSchema"]["properties"]["confirm"].is_object(),
        "{}",
        received[0]
    );
    // The answer went back as its own POST on the session.
    let answer = client
        .wire()
        .answer_to(&received[0])
        .expect("elicitation answer POST");
    assert_eq!(answer["body"]["result"]["action"], "accept", "{answer}");
    assert_eq!(
        answer["body"]["result"]["content"],
        json!({"confirm": true})
    );
    assert_eq!(answer["status"], 202, "{answer}");
    assert_eq!(probe.finished("confirm_delete"), 1);

    // The fixture does not implement tasks: errors come back raw.
    let (code, message, error) = client
        .request("tasks/get", json!({"taskId": "no-such-task"}))
        .await
        .expect_err("the bare fixture has no tasks/get");
    assert_eq!(code, -32601, "{message}: {error}");
    assert_eq!(error["code"], -32601);

    // A raw notification goes out as a POST answered 202.
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": 999, "reason": "smoke"}),
        )
        .await;
    let cancelled = client
        .wire()
        .http()
        .into_iter()
        .find(|exchange| exchange["body"]["method"] == "notifications/cancelled")
        .expect("notification POST");
    assert_eq!(cancelled["status"], 202, "{cancelled}");
    assert_eq!(cancelled["body"]["params"]["requestId"], 999);

    // Closing ends the session with DELETE.
    let wire = client.close().await;
    let delete = wire
        .http()
        .into_iter()
        .find(|exchange| exchange["method"] == "DELETE")
        .expect("DELETE on close");
    assert_eq!(delete["headers"]["mcp-session-id"], session.as_str());
    assert!(
        delete["status"].as_u64().is_some_and(|status| status < 300),
        "{delete}"
    );
}

#[tokio::test]
async fn legacy_client_reply_is_configurable() {
    let (served, probe) = serve_fixture(FixtureMode::Session).await;
    let client = LegacyClient::connect_with(&served.url, ElicitReply::Decline).await;

    let declined = client
        .request(
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"filename": "keep.txt"}}),
        )
        .await;
    let received = client.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let answer = client
        .wire()
        .answer_to(&received[0])
        .expect("elicitation answer POST");
    assert_eq!(answer["body"]["result"]["action"], "decline", "{answer}");
    // Whatever the fixture makes of a decline, it did not delete.
    if let Ok(result) = &declined {
        assert!(!text(result).starts_with("Deleted"), "{result}");
    }
    assert_eq!(probe.finished("confirm_delete"), 1);
    client.close().await;
}
