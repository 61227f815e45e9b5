//! A gateway with its console on, in front of the rmcp fixture or another
//! upstream, and the HTTP client an operator's script would use.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::gateway;
use crate::support::process::Process;

/// The operator's credential the tests start the gateway with.
pub const TOKEN: &str = "operator-credential-0123456789";

/// A gateway with its console on.
pub struct Console {
    /// The gateway.
    pub gateway: Process,
    /// `http://ADDR/console`.
    pub url: String,
    /// The file holding [`TOKEN`], removed on drop.
    token_file: std::path::PathBuf,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.token_file);
    }
}

/// A file name no other test of this process uses.
pub fn temp_file(what: &str) -> std::path::PathBuf {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "mcp-tasks-console-{}-{n}-{what}",
        std::process::id()
    ))
}

impl Console {
    /// The gateway in front of `upstream` with `--metrics` on a free port
    /// and the console's credential in a file, and `extra` options.
    pub async fn start(upstream: &str, extra: &[&str]) -> Self {
        let token_file = temp_file("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token file");
        let mut args = vec![
            "--metrics",
            "127.0.0.1:0",
            "--console-token-file",
            token_file.to_str().expect("utf-8 path"),
        ];
        args.extend_from_slice(extra);
        let gateway = gateway::start(upstream, &args).await;
        let url = console_url(&gateway).await;
        Self {
            gateway,
            url,
            token_file,
        }
    }

    /// `GET` of an API path (after `/console/api`) as a bearer caller.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = http()
            .get(format!("{}/api{path}", self.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("console GET");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `POST` of an API path as a bearer caller.
    pub async fn post(&self, path: &str) -> (u16, Value) {
        let response = http()
            .post(format!("{}/api{path}", self.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("console POST");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The row of task `id` on the first page of `query`, if listed.
    pub async fn row(&self, id: &str, query: &str) -> Option<Value> {
        let (status, page) = self.get(&format!("/tasks?limit=500&{query}")).await;
        assert_eq!(status, 200, "{page}");
        page["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|row| row["id"] == id)
            .cloned()
    }

    /// A signed-in browser's session: its cookie and its CSRF token.
    pub async fn sign_in(&self) -> (HeaderValue, String) {
        let response = http()
            .post(format!("{}/login", self.url))
            .form(&[("token", TOKEN)])
            .send()
            .await
            .expect("sign in");
        assert_eq!(response.status().as_u16(), 303);
        let set = response
            .headers()
            .get("set-cookie")
            .expect("a session cookie")
            .to_str()
            .expect("ascii")
            .to_owned();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        let pair = set.split(';').next().expect("cookie pair").to_owned();
        let cookie = HeaderValue::from_str(&pair).expect("cookie");
        let mut headers = HeaderMap::new();
        headers.insert("cookie", cookie.clone());
        let session: Value = http()
            .get(format!("{}/api/session", self.url))
            .headers(headers)
            .send()
            .await
            .expect("session")
            .json()
            .await
            .expect("session JSON");
        let csrf = session["csrf"].as_str().expect("csrf").to_owned();
        assert_eq!(csrf.len(), 32, "{session}");
        (cookie, csrf)
    }
}

/// An HTTP client that follows no redirect (a `303` is what is checked).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The console's URL from the line the gateway prints once it listens.
pub async fn console_url(gateway: &Process) -> String {
    gateway::announced(gateway, "console on ").await
}
