//! Which generation an HTTP upstream speaks, asked once.
//!
//! The probe is a 2026-07-28 `server/discover`, which an upstream of that
//! generation answers with a result naming 2026-07-28 among its
//! `supportedVersions`:
//!
//! | The upstream answers | It speaks |
//! |----------------------|-----------|
//! | a result whose `supportedVersions` has 2026-07-28 | 2026-07-28: requests pass as they are |
//! | a JSON-RPC error, or `400`, `404`, `405`, `406`, `415` (no session, no such method, no such version) | 2025-11-25 or older: the bridge carries 2026-07-28 requests |
//! | `401`, `403` | unknown until a client's request with credentials asks again (at once) |
//! | other statuses, `5xx`, or nothing within [`PROBE_WAIT`] | unknown: asked again on a 2026-07-28 request at least [`PROBE_BACKOFF`] later; until then requests pass as they are |

use std::time::Duration;

use http::HeaderValue;
use tower::ServiceExt;

use super::Upstream;
use super::exchange::{discover_request, first_response};
use crate::generation::message::{Message, member};
use mcp_tasks::MODERN_VERSION;

/// How long the probe may take.
pub(crate) const PROBE_WAIT: Duration = Duration::from_secs(10);

/// How long after a probe that could not tell the next one may be sent.
pub(crate) const PROBE_BACKOFF: Duration = Duration::from_secs(2);

/// The two generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// 2026-07-28.
    Modern,
    /// 2025-11-25 or older.
    Legacy,
}

/// What a probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probed {
    /// The generation.
    Found(Found),
    /// Nothing: the upstream is down, failing or slow.
    Unknown,
    /// Nothing: the upstream wants credentials (`401`, `403`) the probe
    /// did not have; a client's request that has them asks again at once.
    Unauthorized,
}

/// Asks `inner` which generation it speaks, with a client's
/// `authorization`.
pub(crate) async fn probe(
    inner: Upstream,
    max: usize,
    authorization: Option<&HeaderValue>,
) -> Probed {
    let asked = async {
        let Ok(response) = inner.oneshot(discover_request(authorization)).await;
        let status = response.status().as_u16();
        if matches!(status, 400 | 404 | 405 | 406 | 415) {
            return Probed::Found(Found::Legacy);
        }
        if matches!(status, 401 | 403) {
            return Probed::Unauthorized;
        }
        if !response.status().is_success() {
            return Probed::Unknown;
        }
        match first_response(response, max).await {
            Ok(answer) => Probed::Found(read(&answer)),
            Err(_) => Probed::Unknown,
        }
    };
    tokio::time::timeout(PROBE_WAIT, asked)
        .await
        .unwrap_or(Probed::Unknown)
}

/// The generation an answer to the probe shows.
fn read(answer: &[u8]) -> Found {
    let modern = Message::read(answer)
        .and_then(|message| message.result)
        .and_then(|result| member(result, "supportedVersions"))
        .and_then(|versions| serde_json::from_str::<Vec<String>>(versions.get()).ok())
        .is_some_and(|versions| versions.iter().any(|version| version == MODERN_VERSION));
    if modern { Found::Modern } else { Found::Legacy }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_result_naming_2026_07_28_is_a_modern_upstream() {
        let modern = br#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2026-07-28"]}}"#;
        assert_eq!(read(modern), Found::Modern);
        let error =
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#;
        assert_eq!(read(error), Found::Legacy);
        let other = br#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"]}}"#;
        assert_eq!(read(other), Found::Legacy);
    }
}
