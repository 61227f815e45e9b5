//! The page, its script and its style, compiled into the binary; and the
//! headers every console response carries ([`harden`]).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Shared;

const PAGE: &str = include_str!("assets/index.html");
const SIGN_IN: &str = include_str!("assets/sign-in.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// The Content-Security-Policy of every console response: the console's
/// own script, style and API, nothing inline, nothing from elsewhere, no
/// framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// `GET /console`: the page for a signed-in operator, the sign-in form
/// otherwise.
pub(crate) async fn page(axum::extract::State(state): Shared, headers: HeaderMap) -> Response {
    if state.access.who(&headers).is_none() {
        return sign_in(StatusCode::OK, false);
    }
    html(StatusCode::OK, PAGE.to_owned())
}

/// The sign-in form, saying the last credential was wrong when `wrong`.
pub(crate) fn sign_in(status: StatusCode, wrong: bool) -> Response {
    let form = if wrong {
        SIGN_IN.replace(
            "<!--wrong-->",
            "<p class=\"wrong\" id=\"wrong\">That is not the operator's credential.</p>",
        )
    } else {
        SIGN_IN.to_owned()
    };
    html(status, form)
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /console/console.js`.
pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// `GET /console/console.css`.
pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// Adds the console's security headers to `response`: the CSP, no MIME
/// sniffing, no referrer to other origins, no framing, and nothing cached (the pages show
/// live data behind a credential).
pub(crate) async fn harden(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `no-referrer` would make a browser send `Origin: null` with the
    // page's own form posts, which the cross-site check refuses.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
