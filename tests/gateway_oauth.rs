//! `mcp-tasks-gateway` with OAuth (tower-mcp's `OAuthLayer` outside
//! `TasksLayer`) in front of the rmcp fixture: tokens are required and
//! checked, each task belongs to the token's subject, the RFC 9728 metadata
//! is served, and keys come from an HS256 secret file, a JWKS file or a
//! JWKS URL.
//!
//! `support/oauth/test-only-es256.pem` is a P-256 key made for these tests
//! only; it signs nothing else.

#[path = "support/gateway.rs"]
mod gateway;
mod support;

use std::path::PathBuf;
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use support::client::McpClient;
use support::fixture::{FixtureMode, Served, serve_fixture};
use support::process::Process;

const ISSUER: &str = "https://auth.test";
const RESOURCE: &str = "https://mcp.test/mcp";
const SECRET: &[u8] = b"a shared secret for the gateway tests";
const ES256_PEM: &[u8] = include_bytes!("support/oauth/test-only-es256.pem");

/// A file in the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!(
            "mcp-tasks-gateway-oauth-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).expect("write temp file");
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Claims of a token for `RESOURCE`, valid for an hour.
fn claims(subject: &str, scope: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    json!({"iss": ISSUER, "sub": subject, "aud": RESOURCE, "scope": scope, "iat": now, "exp": now + 3600})
}

fn hs256(subject: &str, scope: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(subject, scope),
        &EncodingKey::from_secret(SECRET),
    )
    .expect("sign")
}

fn es256(subject: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("test-key".into());
    let key = EncodingKey::from_ec_pem(ES256_PEM).expect("test key");
    jsonwebtoken::encode(&header, &claims(subject, "mcp"), &key).expect("sign")
}

/// Unpadded base64url, as JWTs use.
fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The public half of the test key, as a JWKS document.
fn jwks() -> String {
    let key = EncodingKey::from_ec_pem(ES256_PEM).expect("test key");
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).expect("jwk");
    jwk.common.key_id = Some("test-key".into());
    serde_json::to_string(&JwkSet { keys: vec![jwk] }).expect("jwks")
}

/// The fixture, and the gateway in front of it with OAuth options.
async fn start(options: &[&str]) -> (Served, Process) {
    let (upstream, _) = serve_fixture(FixtureMode::Stateless).await;
    let mut all = vec!["--oauth-issuer", ISSUER, "--oauth-audience", RESOURCE];
    all.extend_from_slice(options);
    let gateway = gateway::start(&upstream.url, &all).await;
    (upstream, gateway)
}

/// The HTTP status of a `tools/list` with `token`.
async fn status_with(url: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

fn sign_hs256(claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET),
    )
    .expect("sign")
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
        challenge.contains(
            "resource_metadata=\"https://mcp.test/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );

    // The metadata itself needs no token.
    let base = gateway.url.trim_end_matches("/mcp");
    let metadata: Value = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .expect("metadata")
        .json()
        .await
        .expect("JSON");
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
    let without = |field: &str| {
        let mut claims = good.clone();
        claims.as_object_mut().expect("object").remove(field);
        claims
    };
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        claims
    };
    for (what, claims) in [
        ("no exp", without("exp")),
        ("expired", with("exp", json!(now - 3600))),
        ("no iss", without("iss")),
        ("another issuer", with("iss", json!("https://other.test"))),
        (
            "another audience",
            with("aud", json!("https://other.test/mcp")),
        ),
        ("no sub", without("sub")),
        ("not valid yet", with("nbf", json!(now + 3600))),
    ] {
        let status = status_with(&gateway.url, &sign_hs256(&claims)).await;
        assert_eq!(status, 401, "{what}: {claims}");
    }
    // A client credential token names its client instead of a subject.
    let client = with("client_id", json!("batch-job"));
    let client = {
        let mut claims = client;
        claims.as_object_mut().expect("object").remove("sub");
        claims
    };
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
    let document = jwks();
    let router = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || std::future::ready(document.clone())),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let (_upstream, gateway) = start(&["--oauth-jwks", &url]).await;
    let alice = McpClient::new(&gateway.url).with_bearer(es256("alice"));
    let greet = alice.call_tool("greet", json!({"name": "u"}), false).await;
    assert_eq!(
        greet["result"]["content"][0]["text"], "Hello, u!",
        "{greet}"
    );
    server.abort();
}
