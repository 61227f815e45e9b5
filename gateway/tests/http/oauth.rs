//! `mcp-tasks-gateway` with OAuth (tower-mcp's `OAuthLayer` outside
//! `TasksLayer`) in front of the rmcp fixture: tokens are required and
//! checked, each task belongs to the token's subject, the RFC 9728 metadata
//! is served, and keys come from an HS256 secret file, a JWKS file or a
//! JWKS URL. The hardening of #35: clocks may disagree by the leeway only,
//! a blank `sub` or `client_id` names nobody, a refusal is told in fixed
//! words (the details go to the log), and the accepted audiences are set
//! apart from the resource.
//!
//! The tokens are made by `support/oauth/tokens.rs`.

use crate::{gateway, support};

#[path = "../support/oauth/tokens.rs"]
mod tokens;

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, Served, serve_fixture};
use support::process::Process;
use tokens::*;

/// The fixture, and the gateway in front of it with OAuth options.
async fn start(options: &[&str]) -> (Served, Process) {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let mut all = vec!["--oauth-issuer", ISSUER, "--oauth-audience", RESOURCE];
    all.extend_from_slice(options);
    let gateway = gateway::start(&upstream.url, &all).await;
    (upstream, gateway)
}

/// The headers the upstream saw on an `echo_headers` call.
async fn upstream_headers(client: &McpClient) -> Value {
    let answer = client.call_tool("echo_headers", json!({}), false).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("{answer}"))
}

#[tokio::test]
async fn tokens_are_required_and_each_task_belongs_to_its_subject() {
    let secret = TempFile::new("secret", SECRET);
    let (_upstream, gateway) = start(&["--oauth-hs256-secret-file", secret.path()]).await;

    // No token: 401 with the metadata's address.
    let response = reqwest::Client::new()
        .post(&gateway.url)
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        challenge.contains(&format!("resource_metadata=\"{METADATA}\"")),
        "{challenge}"
    );

    // The metadata itself needs no token.
    let metadata = read_metadata(&gateway.url).await;
    assert_eq!(metadata["resource"], RESOURCE, "{metadata}");
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));

    let alice = McpClient::new(&gateway.url).with_bearer(hs256("alice", "mcp"));
    let bob = McpClient::new(&gateway.url).with_bearer(hs256("bob", "mcp"));
    let created = alice
        .call_tool("slow_compute", json!({"seconds": 2}), true)
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().expect("taskId");

    let seen = alice.tasks_get(task).await;
    assert_eq!(seen["result"]["taskId"], task, "{seen}");
    let foreign = bob.tasks_get(task).await;
    let unknown = bob.tasks_get("no-such-task").await;
    assert!(foreign.get("error").is_some(), "{foreign}");
    assert_eq!(
        foreign["error"], unknown["error"],
        "bob learns nothing of alice's task"
    );
    let cancel = bob.tasks_cancel(task).await;
    assert!(cancel.get("error").is_some(), "{cancel}");
    let still = alice
        .wait_task_status(task, &["completed"], Duration::from_secs(10))
        .await;
    assert_eq!(still["result"]["status"], "completed");

    // A token signed with another secret is refused.
    let forged = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims("alice", "mcp"),
        &EncodingKey::from_secret(b"not the secret"),
    )
    .expect("sign");
    let mallory = McpClient::new(&gateway.url).with_bearer(forged);
    let refused = mallory
        .call_tool("greet", json!({"name": "m"}), false)
        .await;
    assert!(refused.get("result").is_none(), "{refused}");
}

#[tokio::test]
async fn tokens_without_the_claims_an_owner_needs_are_refused() {
    let secret = TempFile::new("secret-claims", SECRET);
    let (_upstream, gateway) = start(&["--oauth-hs256-secret-file", secret.path()]).await;
    let good = claims("alice", "mcp");
    assert_eq!(status_with(&gateway.url, &sign_hs256(&good)).await, 200);

    let now = good["iat"].as_u64().expect("iat");
    for (what, claims) in [
        ("no exp", without(&good, "exp")),
        ("expired", with(&good, "exp", json!(now - 3600))),
        ("no iss", without(&good, "iss")),
        (
            "another issuer",
            with(&good, "iss", json!("https://other.test")),
        ),
        (
            "another audience",
            with(&good, "aud", json!("https://other.test/mcp")),
        ),
        ("no sub", without(&good, "sub")),
        ("not valid yet", with(&good, "nbf", json!(now + 3600))),
    ] {
        let status = status_with(&gateway.url, &sign_hs256(&claims)).await;
        assert_eq!(status, 401, "{what}: {claims}");
    }
    // A client credential token names its client instead of a subject.
    let client = without(&with(&good, "client_id", json!("batch-job")), "sub");
    assert_eq!(status_with(&gateway.url, &sign_hs256(&client)).await, 200);
}

#[tokio::test]
async fn the_authorization_header_goes_upstream_unless_told_not_to() {
    let secret = TempFile::new("secret-forward", SECRET);
    let token = hs256("alice", "mcp");
    let (_a, forwarding) = start(&["--oauth-hs256-secret-file", secret.path()]).await;
    let seen = upstream_headers(&McpClient::new(&forwarding.url).with_bearer(token.clone())).await;
    assert_eq!(seen["authorization"], format!("Bearer {token}"), "{seen}");

    let (_b, keeping) = start(&[
        "--oauth-hs256-secret-file",
        secret.path(),
        "--forward-authorization",
        "false",
    ])
    .await;
    let seen = upstream_headers(&McpClient::new(&keeping.url).with_bearer(token)).await;
    assert!(seen.get("authorization").is_none(), "{seen}");
}

#[tokio::test]
async fn a_required_scope_is_enforced() {
    let secret = TempFile::new("secret-scope", SECRET);
    let (_upstream, gateway) = start(&[
        "--oauth-hs256-secret-file",
        secret.path(),
        "--oauth-scopes",
        "tools:call",
    ])
    .await;
    let without = McpClient::new(&gateway.url).with_bearer(hs256("alice", "mcp"));
    let id = without.next_id();
    let body = without.build_request(id, "tools/list", json!({}), false);
    let status = reqwest::Client::new()
        .post(&gateway.url)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {}", hs256("alice", "mcp")))
        .body(body.to_string())
        .send()
        .await
        .expect("request")
        .status();
    assert_eq!(status, 403);
    let with = McpClient::new(&gateway.url).with_bearer(hs256("alice", "mcp tools:call"));
    let greet = with.call_tool("greet", json!({"name": "s"}), false).await;
    assert_eq!(
        greet["result"]["content"][0]["text"], "Hello, s!",
        "{greet}"
    );
}

#[tokio::test]
async fn keys_come_from_a_jwks_file() {
    let file = TempFile::new("jwks.json", jwks().as_bytes());
    let (_upstream, gateway) = start(&["--oauth-jwks", file.path()]).await;
    let alice = McpClient::new(&gateway.url).with_bearer(es256("alice"));
    let greet = alice.call_tool("greet", json!({"name": "f"}), false).await;
    assert_eq!(
        greet["result"]["content"][0]["text"], "Hello, f!",
        "{greet}"
    );
    // An HS256 token is not signed by any key of the set.
    assert_eq!(status_with(&gateway.url, &hs256("alice", "mcp")).await, 401);
    // Nor one whose HMAC key is the set's public key (algorithm confusion):
    // the key is for ES256 only.
    let public = jwks();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("test-key".into());
    let confused = jsonwebtoken::encode(
        &header,
        &claims("alice", "mcp"),
        &EncodingKey::from_secret(public.as_bytes()),
    )
    .expect("sign");
    assert_eq!(status_with(&gateway.url, &confused).await, 401);
    // Nor `alg: none`.
    let none = format!(
        "{}.{}.",
        base64_url(br#"{"alg":"none","typ":"JWT","kid":"test-key"}"#),
        base64_url(claims("alice", "mcp").to_string().as_bytes())
    );
    assert_eq!(status_with(&gateway.url, &none).await, 401);
}

#[tokio::test]
async fn keys_come_from_a_jwks_url() {
    let (url, server) = serve_jwks().await;
    let (_upstream, gateway) = start(&["--oauth-jwks", &url]).await;
    let alice = McpClient::new(&gateway.url).with_bearer(es256("alice"));
    let greet = alice.call_tool("greet", json!({"name": "u"}), false).await;
    assert_eq!(
        greet["result"]["content"][0]["text"], "Hello, u!",
        "{greet}"
    );
    server.abort();
}

#[tokio::test]
async fn clocks_may_disagree_by_the_leeway_and_no_more() {
    // tower-mcp's validators leave jsonwebtoken's 60 s on `exp`; the
    // gateway's leeway, 5 s unless --oauth-leeway says otherwise, holds
    // for `exp`, `nbf` and `iat` alike.
    let secret = TempFile::new("secret-leeway", SECRET);
    let (_a, strict) = start(&["--oauth-hs256-secret-file", secret.path()]).await;
    let good = claims("alice", "mcp");
    let now = good["iat"].as_u64().expect("iat");
    for (what, claims, status) in [
        ("expired 30 s ago", with(&good, "exp", json!(now - 30)), 401),
        (
            "issued in a minute",
            with(&good, "iat", json!(now + 60)),
            401,
        ),
        ("valid in 30 s", with(&good, "nbf", json!(now + 30)), 401),
        (
            "expired a second ago",
            with(&good, "exp", json!(now - 1)),
            200,
        ),
        (
            "issued in a second",
            with(&good, "iat", json!(now + 1)),
            200,
        ),
    ] {
        let answer = answer(&strict.url, &sign_hs256(&claims)).await;
        assert_eq!(answer.0, status, "{what}: {claims} {answer:?}");
    }

    let (_b, lenient) = start(&[
        "--oauth-hs256-secret-file",
        secret.path(),
        "--oauth-leeway",
        "2m",
    ])
    .await;
    let good = claims("alice", "mcp");
    let now = good["iat"].as_u64().expect("iat");
    for (what, claims) in [
        ("expired 90 s ago", with(&good, "exp", json!(now - 90))),
        ("issued in a minute", with(&good, "iat", json!(now + 60))),
    ] {
        let status = status_with(&lenient.url, &sign_hs256(&claims)).await;
        assert_eq!(status, 200, "{what} with --oauth-leeway 2m: {claims}");
    }
}

#[tokio::test]
async fn a_blank_subject_or_client_id_names_no_owner() {
    let secret = TempFile::new("secret-blank", SECRET);
    let (_upstream, gateway) = start(&["--oauth-hs256-secret-file", secret.path()]).await;
    let good = without(&claims("alice", "mcp"), "sub");
    let token = |sub: Option<&str>, client: Option<&str>| {
        let mut claims = good.clone();
        for (field, value) in [("sub", sub), ("client_id", client)] {
            if let Some(value) = value {
                claims[field] = json!(value);
            }
        }
        sign_hs256(&claims)
    };
    for (sub, client) in [
        (Some(""), None),
        (Some(" \t"), None),
        (None, Some("")),
        (Some(""), Some(" ")),
    ] {
        let (status, challenge, _) = answer(&gateway.url, &token(sub, client)).await;
        assert_eq!(status, 401, "sub {sub:?}, client_id {client:?}");
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }

    // A blank sub beside a client id: the client owns the task, as if the
    // token had no sub, and no other blank-sub token shares it.
    let batch = McpClient::new(&gateway.url).with_bearer(token(Some(""), Some("batch")));
    let same = McpClient::new(&gateway.url).with_bearer(token(None, Some("batch")));
    let other = McpClient::new(&gateway.url).with_bearer(token(Some(""), Some("other")));
    let created = batch
        .call_tool("slow_compute", json!({"seconds": 1}), true)
        .await;
    let task = created["result"]["taskId"].as_str().expect("taskId");
    let seen = same.tasks_get(task).await;
    assert_eq!(seen["result"]["taskId"], task, "{seen}");
    let foreign = other.tasks_get(task).await;
    assert!(foreign.get("error").is_some(), "{foreign}");
}

#[tokio::test]
async fn a_refused_token_is_told_in_fixed_words_and_the_details_are_logged() {
    let file = TempFile::new("jwks-words.json", jwks().as_bytes());
    let (url, server) = serve_jwks().await;
    let (_a, from_file) = start(&["--oauth-jwks", file.path()]).await;
    let (_b, from_url) = start(&["--oauth-jwks", &url]).await;

    let signed = es256("alice");
    let parts: Vec<&str> = signed.split('.').collect();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        base64_url(claims("mallory", "mcp").to_string().as_bytes()),
        parts[2]
    );
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("test-key".into());
    let confused = jsonwebtoken::encode(
        &header,
        &claims("alice", "mcp"),
        &EncodingKey::from_secret(jwks().as_bytes()),
    )
    .expect("sign");
    // (A JWKS URL of one key tries that key whatever the key id.)
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("no-such-key".into());
    let unknown = jsonwebtoken::encode(
        &header,
        &claims("alice", "mcp"),
        &EncodingKey::from_secret(SECRET),
    )
    .expect("sign");

    let words = "the token is malformed or not signed by a trusted key";
    for served in [&from_file, &from_url] {
        for (what, token) in [
            ("tampered", tampered.as_str()),
            ("HS256 with the public key", &confused),
            ("unknown key id", &unknown),
            ("not a JWT", "not-a-jwt"),
        ] {
            let (status, challenge, body) = answer(&served.url, token).await;
            assert_eq!(status, 401, "{what}");
            assert_eq!(
                challenge,
                format!(
                    "Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\", \
                     error_description=\"{words}\""
                ),
                "{what}"
            );
            assert_eq!(
                body["error"]["message"],
                format!("invalid token: {words}"),
                "{what}: {body}"
            );
        }
    }
    let other = sign_es256(&with(
        &claims("alice", "mcp"),
        "iss",
        json!("https://x.test"),
    ));
    let (status, challenge, body) = answer(&from_file.url, &other).await;
    assert_eq!(status, 401);
    assert!(
        challenge.ends_with("error_description=\"the token is not from the trusted issuer\""),
        "{challenge}"
    );
    assert!(!body.to_string().contains("x.test"), "{body}");

    // What went wrong is in the log, for the operator.
    assert!(
        from_file
            .wait_log("InvalidSignature", Duration::from_secs(5))
            .await,
        "{}",
        from_file.log()
    );
    assert!(
        from_url
            .wait_log("InvalidAlgorithm", Duration::from_secs(5))
            .await,
        "{}",
        from_url.log()
    );
    server.abort();
}

#[tokio::test]
async fn the_accepted_audiences_are_set_apart_from_the_resource() {
    // An identity provider whose `aud` is a client id (Keycloak's default).
    let secret = TempFile::new("secret-audience", SECRET);
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let oauth = [
        "--oauth-issuer",
        ISSUER,
        "--oauth-hs256-secret-file",
        secret.path(),
    ];
    let apart = [
        &oauth[..],
        &["--oauth-resource", RESOURCE],
        &[
            "--oauth-audience",
            "mcp-gateway",
            "--oauth-audience",
            "account",
        ],
    ]
    .concat();
    let gateway = gateway::start(&upstream.url, &apart).await;
    let metadata = read_metadata(&gateway.url).await;
    assert_eq!(metadata["resource"], RESOURCE, "{metadata}");

    let good = claims("alice", "mcp");
    for (aud, status) in [
        (json!("mcp-gateway"), 200),
        (json!(["elsewhere", "account"]), 200),
        (json!(RESOURCE), 401),
        (json!("elsewhere"), 401),
    ] {
        let token = sign_hs256(&with(&good, "aud", aud.clone()));
        assert_eq!(status_with(&gateway.url, &token).await, status, "aud {aud}");
    }
    let alice = McpClient::new(&gateway.url).with_bearer(sign_hs256(&with(
        &good,
        "aud",
        json!("mcp-gateway"),
    )));
    let created = alice
        .call_tool("slow_compute", json!({"seconds": 1}), true)
        .await;
    let task = created["result"]["taskId"].as_str().expect("taskId");
    assert_eq!(alice.tasks_get(task).await["result"]["taskId"], task);

    // A client id alone: the resource is the gateway's own URL.
    let own = gateway::start(
        &upstream.url,
        &[&oauth[..], &["--oauth-audience", "mcp-gateway"]].concat(),
    )
    .await;
    let metadata = read_metadata(&own.url).await;
    assert_eq!(metadata["resource"], own.url, "{metadata}");
    let token = sign_hs256(&with(&good, "aud", json!("mcp-gateway")));
    assert_eq!(status_with(&own.url, &token).await, 200);
}
