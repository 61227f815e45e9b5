//! Tokens for the gateway's OAuth tests: claims, HS256 and ES256 signing,
//! the test key's JWKS (in a file or served), and a request's answer.
//! Include it with `#[path = "support/oauth/tokens.rs"] mod tokens;`.
//!
//! `test-only-es256.pem` beside this file is a P-256 key made for these
//! tests only; it signs nothing else.

#![allow(dead_code)]

use std::path::PathBuf;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The issuer the tests' gateways trust.
pub const ISSUER: &str = "https://auth.test";
/// The resource (and, unless told otherwise, the audience) of the tests.
pub const RESOURCE: &str = "https://mcp.test/mcp";
/// Where the gateway serves `RESOURCE`'s RFC 9728 metadata.
pub const METADATA: &str = "https://mcp.test/.well-known/oauth-protected-resource/mcp";
/// The HS256 secret the gateways are given in a file.
pub const SECRET: &[u8] = b"a shared secret for the gateway tests";
/// The P-256 test key (private), whose public half is [`jwks`].
pub const ES256_PEM: &[u8] = include_bytes!("test-only-es256.pem");

/// A file in the temporary directory, removed on drop.
pub struct TempFile(PathBuf);

impl TempFile {
    /// Writes `contents` to a file named after `name`, this process and a
    /// number of its own: tests of one binary run side by side, and two
    /// files of one name would overwrite, or remove, each other.
    pub fn new(name: &str, contents: &[u8]) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "mcp-tasks-gateway-oauth-{}-{n}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).expect("write temp file");
        Self(path)
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // A SQLite file (the events test's) leaves its WAL and shared
        // memory beside it.
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// The gateway's options to take HS256 tokens of [`ISSUER`] for
/// [`RESOURCE`], signed with the key in `secret`.
pub fn hs256_options(secret: &TempFile) -> [&str; 6] {
    [
        "--oauth-issuer",
        ISSUER,
        "--oauth-audience",
        RESOURCE,
        "--oauth-hs256-secret-file",
        secret.path(),
    ]
}

/// Claims of a token for `RESOURCE`, valid for an hour.
pub fn claims(subject: &str, scope: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    json!({"iss": ISSUER, "sub": subject, "aud": RESOURCE, "scope": scope, "iat": now, "exp": now + 3600})
}

/// [`claims`] of `subject` with `scope`, HS256 with [`SECRET`].
pub fn hs256(subject: &str, scope: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(subject, scope),
        &EncodingKey::from_secret(SECRET),
    )
    .expect("sign")
}

/// [`claims`] of `subject` with scope `mcp`, by [`sign_es256`].
pub fn es256(subject: &str) -> String {
    sign_es256(&claims(subject, "mcp"))
}

/// `claims` signed ES256 with the test key, key id `test-key`.
pub fn sign_es256(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("test-key".into());
    let key = EncodingKey::from_ec_pem(ES256_PEM).expect("test key");
    jsonwebtoken::encode(&header, claims, &key).expect("sign")
}

/// Unpadded base64url, as JWTs use.
pub fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The public half of the test key, as a JWKS document.
pub fn jwks() -> String {
    let key = EncodingKey::from_ec_pem(ES256_PEM).expect("test key");
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).expect("jwk");
    jwk.common.key_id = Some("test-key".into());
    serde_json::to_string(&JwkSet { keys: vec![jwk] }).expect("jwks")
}

/// The status, `WWW-Authenticate` and JSON body (`null` when not JSON) of
/// a `tools/list` with `token`.
pub async fn answer(url: &str, token: &str) -> (u16, String, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

/// The RFC 9728 metadata a gateway serving `url` (`http://ADDR/mcp`)
/// serves for the resource path `/mcp`, read without a token.
pub async fn read_metadata(url: &str) -> Value {
    let base = url.trim_end_matches("/mcp");
    reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .await
        .expect("metadata")
        .json()
        .await
        .expect("JSON")
}

/// The HTTP status of a `tools/list` with `token`.
pub async fn status_with(url: &str, token: &str) -> u16 {
    answer(url, token).await.0
}

/// `claims` with `field` set to `value`.
pub fn with(claims: &Value, field: &str, value: Value) -> Value {
    let mut claims = claims.clone();
    claims[field] = value;
    claims
}

/// `claims` without `field`.
pub fn without(claims: &Value, field: &str) -> Value {
    let mut claims = claims.clone();
    claims.as_object_mut().expect("object").remove(field);
    claims
}

/// `claims` signed HS256 with [`SECRET`].
pub fn sign_hs256(claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET),
    )
    .expect("sign")
}

/// Serves the test key's JWKS document; its URL, and the server to abort.
pub async fn serve_jwks() -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
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
    (url, server)
}
