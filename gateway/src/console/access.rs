//! Who gets into the console: the operator's bearer token, or a session
//! the sign-in form opened with it; and what a state-changing request must
//! show besides (its own origin, its session's token).
//!
//! | Session | Value |
//! |---------|-------|
//! | cookie | `mcp_tasks_console`, `HttpOnly`, `SameSite=Strict`, `Path=/console` |
//! | lifetime | 12 hours from sign-in |
//! | sessions held | 64; one more ends the oldest |

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Form;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::Shared;
use super::assets;
use super::credential::{Credential, MAX_LEN};

/// The session cookie's name.
pub const COOKIE: &str = "mcp_tasks_console";
/// The header a state-changing request carries its session's token in.
pub const CSRF_HEADER: &str = "x-console-csrf";
/// How long a session lasts.
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions held at once.
pub const MAX_SESSIONS: usize = 64;

/// One signed-in browser.
struct Session {
    expires: Instant,
    csrf: String,
    /// Its place in the order of sign-ins (the cap ends the oldest).
    order: u64,
}

/// The credential and the open sessions.
pub(crate) struct Access {
    credential: Credential,
    sessions: Mutex<HashMap<String, Session>>,
    opened: std::sync::atomic::AtomicU64,
}

/// Who made a request that got in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// A caller with the bearer token (a script): no cookie, so no
    /// cross-site risk.
    Bearer,
    /// A browser's session.
    Session {
        /// The first characters of the session's id, for the audit log.
        tag: String,
        /// The token its state-changing requests must carry.
        csrf: String,
    },
}

impl Who {
    /// How the audit log names the caller.
    pub fn label(&self) -> String {
        match self {
            Who::Bearer => "bearer".to_owned(),
            Who::Session { tag, .. } => format!("session {tag}"),
        }
    }
}

impl Access {
    pub(crate) fn new(credential: Credential) -> Self {
        Self {
            credential,
            sessions: Mutex::new(HashMap::new()),
            opened: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Who sent `headers`, or `None` when they carry no valid credential.
    pub(crate) fn who(&self, headers: &HeaderMap) -> Option<Who> {
        if let Some(token) = bearer(headers) {
            return self.credential.matches(token).then_some(Who::Bearer);
        }
        let id = cookie(headers, COOKIE)?;
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let now = Instant::now();
        sessions.retain(|_, session| session.expires > now);
        let session = sessions.get(id)?;
        Some(Who::Session {
            tag: id[..8].to_owned(),
            csrf: session.csrf.clone(),
        })
    }

    /// [`who`](Self::who) for a state-changing request: it must also come
    /// from the console's own origin, and a session's must carry its token.
    pub(crate) fn who_may_change(&self, headers: &HeaderMap) -> Result<Who, Box<Response>> {
        if !same_origin(headers) {
            return Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                "a cross-site request",
            )));
        }
        let who = self
            .who(headers)
            .ok_or_else(|| Box::new(refuse(StatusCode::UNAUTHORIZED, "no operator credential")))?;
        if let Who::Session { csrf, .. } = &who {
            let offered = headers.get(CSRF_HEADER).map(HeaderValue::as_bytes);
            if offered != Some(csrf.as_bytes()) {
                let refused = refuse(StatusCode::FORBIDDEN, "no or a wrong X-Console-Csrf");
                return Err(Box::new(refused));
            }
        }
        Ok(who)
    }

    /// Opens a session; returns its id.
    fn open(&self) -> String {
        let id = random_hex();
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let now = Instant::now();
        sessions.retain(|_, session| session.expires > now);
        if sessions.len() >= MAX_SESSIONS {
            let soonest = sessions
                .iter()
                .min_by_key(|(_, session)| session.order)
                .map(|(id, _)| id.clone());
            if let Some(soonest) = soonest {
                sessions.remove(&soonest);
            }
        }
        let session = Session {
            expires: now + LIFETIME,
            csrf: random_hex(),
            order: self
                .opened
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        sessions.insert(id.clone(), session);
        id
    }

    fn close(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, COOKIE) {
            self.sessions.lock().expect("sessions lock").remove(id);
        }
    }
}

/// A JSON refusal `{"error": why}` with `status`.
pub(crate) fn refuse(status: StatusCode, why: &str) -> Response {
    let body = serde_json::json!({ "error": why });
    (status, axum::Json(body)).into_response()
}

/// Whether a browser says the request comes from the console's own page:
/// `Sec-Fetch-Site` (when sent) is `same-origin` or `none`, and `Origin`
/// (when sent) is this host's. A request with neither (a script, an old
/// browser's same-origin GET) passes: it carries no cookie it did not
/// choose to.
pub fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Some(host) = headers.get(header::HOST) else {
        return false;
    };
    let origin = origin.as_bytes();
    let host = host.as_bytes();
    [&b"http://"[..], b"https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(*scheme) == Some(host))
}

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let scheme = value.get(..7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| value[7..].trim_ascii())
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
        .filter(|value| value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// 128 bits of the system's random source as 32 hex digits: what a task
/// id is made of.
fn random_hex() -> String {
    mcp_tasks::TaskId::generate()
        .expect("the system's random source")
        .to_string()
}

/// The sign-in form's fields.
#[derive(Deserialize)]
pub(crate) struct SignIn {
    token: String,
}

/// `POST /console/login`: a session for the right credential (a `303` to
/// the page with its cookie), the sign-in form again with `401` otherwise.
pub(crate) async fn login(
    axum::extract::State(state): Shared,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    if !same_origin(&headers) {
        return refuse(StatusCode::FORBIDDEN, "a cross-site request");
    }
    let token = form.token.trim();
    if token.len() > MAX_LEN || !state.access.credential.matches(token.as_bytes()) {
        tracing::warn!(target: "mcp_tasks_gateway::console", "a sign-in with a wrong credential");
        return assets::sign_in(StatusCode::UNAUTHORIZED, true);
    }
    let id = state.access.open();
    tracing::info!(target: "mcp_tasks_gateway::console", session = &id[..8], "signed in");
    let cookie = format!(
        "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}",
        LIFETIME.as_secs()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/console"));
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /console/logout`: ends the session and clears its cookie.
pub(crate) async fn logout(axum::extract::State(state): Shared, headers: HeaderMap) -> Response {
    if let Err(refused) = state.access.who_may_change(&headers) {
        return *refused;
    }
    state.access.close(&headers);
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/console"));
    headers.insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "mcp_tasks_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0",
        ),
    );
    response
}

/// `GET /console/api/session`: `{"csrf": token}` for the page's
/// state-changing requests (empty for a bearer caller, who needs none).
pub(crate) async fn session(axum::extract::State(state): Shared, headers: HeaderMap) -> Response {
    match state.access.who(&headers) {
        Some(Who::Session { csrf, .. }) => {
            axum::Json(serde_json::json!({ "csrf": csrf })).into_response()
        }
        Some(Who::Bearer) => axum::Json(serde_json::json!({ "csrf": "" })).into_response(),
        None => refuse(StatusCode::UNAUTHORIZED, "no operator credential"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_the_consoles_own_origin_is_same_origin() {
        assert!(same_origin(&headers(&[])));
        assert!(same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "http://127.0.0.1:9090"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "http://evil.example"),
        ])));
        assert!(!same_origin(&headers(&[
            ("host", "127.0.0.1:9090"),
            ("origin", "null"),
        ])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!same_origin(&headers(&[("sec-fetch-site", "same-site")])));
        assert!(!same_origin(&headers(&[(
            "origin",
            "http://127.0.0.1:9090"
        )])));
    }

    #[test]
    fn a_session_needs_its_cookie_and_its_token_to_change_anything() {
        let access = Access::new(Credential::new("0123456789abcdef").unwrap());
        assert_eq!(access.who(&headers(&[])), None);
        assert_eq!(
            access.who(&headers(&[("authorization", "Bearer 0123456789abcdef")])),
            Some(Who::Bearer)
        );
        assert_eq!(
            access.who(&headers(&[("authorization", "Bearer 0123456789abcdeg")])),
            None
        );
        let id = access.open();
        let mut signed = HeaderMap::new();
        let cookie = format!("other=1; {COOKIE}={id}");
        signed.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
        let Some(Who::Session { csrf, .. }) = access.who(&signed) else {
            panic!("the session's cookie gets in");
        };
        assert_eq!(
            access.who_may_change(&signed).unwrap_err().status(),
            StatusCode::FORBIDDEN
        );
        signed.insert(CSRF_HEADER, HeaderValue::from_str(&csrf).unwrap());
        assert!(access.who_may_change(&signed).is_ok());
        access.close(&signed);
        assert_eq!(access.who(&signed), None);
    }

    #[test]
    fn sessions_beyond_the_cap_end_the_oldest() {
        let access = Access::new(Credential::new("0123456789abcdef").unwrap());
        let first = access.open();
        for _ in 0..MAX_SESSIONS {
            access.open();
        }
        let sessions = access.sessions.lock().unwrap();
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert!(!sessions.contains_key(&first));
    }
}
