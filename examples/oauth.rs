//! OAuth (`cargo run --example oauth --features tower-mcp`): every task
//! belongs to the subject of the bearer token that created it.
//!
//! A tower-mcp server with one slow tool sits behind tower-mcp's `OAuthLayer`
//! and, inside it, `TasksLayer`:
//!
//! ```text
//! HTTP ─► OAuthLayer ─► TasksLayer ─► tower-mcp server (slow_compute)
//! ```
//!
//! `OAuthLayer` checks the token's HS256 signature, issuer, audience (this
//! server's resource URL) and scope, then inserts its `TokenClaims` into the
//! request. With the `tower-mcp` feature, the layer's default owner resolver
//! reads them, so each task is bound to the token's issuer and subject.
//!
//! The same program then acts as a client over loopback HTTP, with two signed
//! tokens (subjects `alice` and `bob`), and checks each step:
//!
//! 1. the RFC 9728 protected-resource metadata is public;
//! 2. a request without a token gets 401 and a `WWW-Authenticate` that names
//!    the metadata;
//! 3. alice's slow call becomes a task;
//! 4. alice's `tasks/get` finds it;
//! 5. bob's `tasks/get` for it answers exactly like one for a task that never
//!    existed;
//! 6. alice's task completes with the tool's result.
//!
//! It stops with an error (exit code 1) at the first step that does not hold.

// The raw 2026-07-28 client of the tests: exact headers and `_meta`. The
// module allows its own dead code.
#[path = "../tests/support/client/mod.rs"]
mod client;
#[path = "support/http.rs"]
#[allow(dead_code)]
mod serving;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use client::McpClient;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_tasks::{MemoryTaskStore, ResponseBody, TasksLayer};
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceBuilder;
use tower_mcp::oauth::{JwtValidator, OAuthLayer, ProtectedResourceMetadata, ScopePolicy};
use tower_mcp::{CallToolResult, HttpTransport, McpRouter, ToolBuilder};

/// The HMAC key shared by the (pretend) authorization server and this server.
const SECRET: &[u8] = b"mcp-tasks oauth example: a demo key, not a secret";
/// The issuer of the tokens, named in the metadata as the authorization server.
const ISSUER: &str = "https://auth.example.com";
/// The scope every request to the MCP endpoint needs.
const SCOPE: &str = "mcp";
/// How long `slow_compute` runs: past the layer's 500 ms threshold.
const SLOW_SECONDS: u64 = 2;

/// Any failure, including a step that does not hold.
type Error = Box<dyn std::error::Error + Send + Sync>;

// ---- 1. The server: tower-mcp, OAuthLayer outside, TasksLayer inside. ------

/// The arguments of `slow_compute`.
#[derive(Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How many seconds to compute.
    seconds: u64,
}

/// An ordinary tower-mcp server: one tool that takes its time.
fn mcp_router() -> McpRouter {
    let slow = ToolBuilder::new("slow_compute")
        .description("Compute for `seconds` seconds, then answer")
        .handler(|SlowArgs { seconds }: SlowArgs| async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            Ok(CallToolResult::text(format!("computed for {seconds}s")))
        })
        .build();
    McpRouter::new()
        .server_info("oauth-example", "0.1.0")
        .tool(slow)
}

/// The RFC 9728 metadata of `resource`: who issues its tokens, which scopes.
fn metadata(resource: &str) -> Result<ProtectedResourceMetadata, Error> {
    let metadata = ProtectedResourceMetadata::new(resource)
        .authorization_server(ISSUER)
        .scope(SCOPE);
    metadata.validate()?;
    Ok(metadata)
}

/// The HTTP application: `/mcp` and its metadata, behind `OAuthLayer`, then
/// `tasks`.
fn app(metadata: ProtectedResourceMetadata, tasks: TasksLayer) -> axum::Router {
    // HS256 with the shared key. OAuthLayer itself requires the token's `aud`
    // to contain `metadata.resource`, whatever the validator checks.
    let validator = JwtValidator::from_secret(SECRET).expected_issuer(ISSUER);
    let oauth = OAuthLayer::new(validator, metadata.clone())
        .scope_policy(ScopePolicy::new().default_scope(SCOPE));
    // The transport also serves the metadata, at the resource's RFC 9728
    // path, which OAuthLayer leaves public; TasksLayer passes a GET through.
    let mcp = HttpTransport::new(mcp_router())
        .oauth(metadata)
        .into_router_at("/mcp");
    let service = ServiceBuilder::new()
        .layer(oauth)
        // OAuthService wants axum's own body from the service it wraps.
        .map_response(|response: http::Response<ResponseBody<Body>>| response.map(Body::new))
        .layer(tasks)
        .service(mcp);
    axum::Router::new().fallback_service(service)
}

// ---- 2. The tokens a real authorization server would issue. ---------------

/// A signed HS256 access token for `subject`, for `resource`, valid for five
/// minutes.
fn token(subject: &str, resource: &str) -> Result<String, Error> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let claims = json!({
        "iss": ISSUER, "sub": subject, "aud": resource, "scope": SCOPE,
        "iat": now, "exp": now + 300,
    });
    let key = EncodingKey::from_secret(SECRET);
    Ok(jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &key,
    )?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://{}", listener.local_addr()?);
    // The MCP endpoint is the protected resource, and the tokens' audience.
    let resource = format!("{origin}/mcp");
    let metadata = metadata(&resource)?;
    let metadata_url = metadata.well_known_url()?;
    let tasks = TasksLayer::new(MemoryTaskStore::new());
    let drain = tasks.drain();
    let router = app(metadata, tasks);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move { drop(stopped.await) };
    let server = tokio::spawn(serving::serve(listener, router, shutdown));
    println!("server: {resource} (tower-mcp behind OAuthLayer, then TasksLayer)");

    // ---- 3. The client's steps. ---------------------------------------------
    public_metadata(&metadata_url, &resource).await?;
    no_token(&resource, &metadata_url).await?;
    let alice = McpClient::new(&resource).with_bearer(token("alice", &resource)?);
    let bob = McpClient::new(&resource).with_bearer(token("bob", &resource)?);
    let task_id = call_becomes_task(&alice).await?;
    owner_finds_task(&alice, &task_id).await?;
    other_subject_is_told_not_found(&bob, &task_id).await?;
    task_completes(&alice, &task_id).await?;

    // ---- 4. Clean shutdown. ---------------------------------------------------
    let report = drain.shutdown(Duration::from_secs(5)).await;
    check(report.finished, || format!("drain: {report:?}"))?;
    println!("drained: no task left running");
    let _ = stop.send(());
    server.await??;
    Ok(())
}

/// Step 1: the metadata is served without a token and names the issuer.
async fn public_metadata(url: &str, resource: &str) -> Result<(), Error> {
    let response = reqwest::get(url).await?;
    let status = response.status();
    let body: Value = response.json().await?;
    check(
        status == reqwest::StatusCode::OK
            && body["resource"] == resource
            && body["authorization_servers"] == json!([ISSUER]),
        || format!("metadata: HTTP {status}, {body}"),
    )?;
    println!("1. GET {url} (no token): {status}\n   {body}");
    Ok(())
}

/// Step 2: a call without a token is refused before it reaches the layer,
/// with a challenge that points to the metadata.
async fn no_token(resource: &str, metadata_url: &str) -> Result<(), Error> {
    let anonymous = McpClient::new(resource);
    let arguments = json!({"seconds": SLOW_SECONDS});
    let exchange = anonymous
        .call_tool_with("slow_compute", arguments, json!({}), true)
        .await;
    let challenge = exchange
        .headers
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let expected = format!("resource_metadata=\"{metadata_url}\"");
    check(
        exchange.status == reqwest::StatusCode::UNAUTHORIZED && challenge.contains(&expected),
        || {
            format!(
                "no token: HTTP {}, WWW-Authenticate {challenge:?}",
                exchange.status
            )
        },
    )?;
    println!(
        "2. no token: tools/call slow_compute → {}\n   WWW-Authenticate: {challenge}",
        exchange.status
    );
    Ok(())
}

/// Step 3: alice declares the tasks extension; her slow call is still running
/// after the threshold, so she gets a task handle. Returns the task id.
async fn call_becomes_task(alice: &McpClient) -> Result<String, Error> {
    let arguments = json!({"seconds": SLOW_SECONDS});
    let response = alice.call_tool("slow_compute", arguments, true).await;
    let handle = &response["result"];
    let task_id = handle["taskId"].as_str().unwrap_or_default().to_owned();
    check(
        handle["resultType"] == "task" && !task_id.is_empty(),
        || format!("alice's call did not become a task: {response}"),
    )?;
    println!(
        "3. alice: tools/call slow_compute {{\"seconds\":{SLOW_SECONDS}}} → task {task_id} ({})",
        handle["status"].as_str().unwrap_or_default()
    );
    Ok(task_id)
}

/// Step 4: the task's owner reads it.
async fn owner_finds_task(alice: &McpClient, task_id: &str) -> Result<(), Error> {
    let response = alice.tasks_get(task_id).await;
    let task = &response["result"];
    check(task["taskId"] == task_id, || {
        format!("alice's tasks/get: {response}")
    })?;
    println!(
        "4. alice: tasks/get {task_id} → {}",
        task["status"].as_str().unwrap_or_default()
    );
    Ok(())
}

/// Step 5: another subject gets the error of a task that does not exist,
/// so the id alone tells bob nothing.
async fn other_subject_is_told_not_found(bob: &McpClient, task_id: &str) -> Result<(), Error> {
    let response = bob.tasks_get(task_id).await;
    let unknown = bob.tasks_get("no-such-task").await;
    let error = &response["error"];
    check(error.is_object() && *error == unknown["error"], || {
        format!("bob's tasks/get: {response}; of an unknown task: {unknown}")
    })?;
    println!(
        "5. bob: tasks/get {task_id} → error {error}\n   the same error as tasks/get of a task that never existed"
    );
    Ok(())
}

/// Step 6: alice polls until her task is done and reads the tool's result.
async fn task_completes(alice: &McpClient, task_id: &str) -> Result<(), Error> {
    let terminal = ["completed", "failed", "cancelled"];
    let response = alice
        .wait_task_status(task_id, &terminal, Duration::from_secs(15))
        .await;
    let task = &response["result"];
    let text = task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    check(task["status"] == "completed" && !text.is_empty(), || {
        format!("alice's task did not complete: {response}")
    })?;
    println!("6. alice: task {task_id} completed: {text}");
    Ok(())
}

/// Fails the example with `describe()` unless `holds`.
fn check(holds: bool, describe: impl FnOnce() -> String) -> Result<(), Error> {
    if holds {
        Ok(())
    } else {
        Err(describe().into())
    }
}
