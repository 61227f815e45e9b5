//! A result of a 2025-11-25 (or older) server made a 2026-07-28 one.
//!
//! | What a 2026-07-28 client checks | What an older server sends | What the bridge adds |
//! |---------------------------------|----------------------------|----------------------|
//! | `resultType` on every result | nothing | `"resultType":"complete"` (an older server has no other kind) |
//! | `ttlMs` and `cacheScope` on the six cacheable results ([`CACHEABLE`]) | nothing | `"ttlMs":0,"cacheScope":"private"`: the bridge cannot know how long the list holds, nor whether it differs by principal (the upstream sees the client's credentials), so nothing is reused |
//!
//! Every other byte is kept as the server wrote it, and a member the server
//! did write is never replaced. An error response, or anything that is not
//! a response, passes untouched.

use bytes::Bytes;

use super::message::Message;
use mcp_tasks::wire::raw::{Members, span};
use mcp_tasks::wire::splice::{Edit, splice};

/// The methods whose 2026-07-28 results are `CacheableResult`s, which must
/// carry `ttlMs` and `cacheScope`.
pub(crate) const CACHEABLE: [&str; 6] = [
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// Whether the result of `method` is cacheable in 2026-07-28.
pub(crate) fn is_cacheable(method: &str) -> bool {
    CACHEABLE.contains(&method)
}

/// `response` (one JSON-RPC message of an older server) as a 2026-07-28
/// server would send it; `cacheable` when it answers one of [`CACHEABLE`].
pub(crate) fn modernize(response: Bytes, cacheable: bool) -> Bytes {
    let Some(message) = Message::read(&response) else {
        return response;
    };
    let Some(result) = message.result else {
        return response;
    };
    let Ok(members) = Members::parse(result.get()) else {
        return response;
    };
    let mut added = Vec::new();
    if members.get("resultType").is_none() {
        added.push(r#""resultType":"complete""#);
    }
    if cacheable && members.get("ttlMs").is_none() {
        added.push(r#""ttlMs":0"#);
    }
    if cacheable && members.get("cacheScope").is_none() {
        added.push(r#""cacheScope":"private""#);
    }
    if added.is_empty() {
        return response;
    }
    let Some(at) = span(&response, result.get()) else {
        return response;
    };
    let mut insert = added.join(",");
    if !members.0.is_empty() {
        insert.push(',');
    }
    let inside = at.start + 1..at.start + 1;
    splice(&response, &mut [Edit::put(inside, insert.into_bytes())]).unwrap_or(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &'static str, cacheable: bool) -> String {
        let out = modernize(Bytes::from_static(text.as_bytes()), cacheable);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn a_2025_result_gains_its_result_type_and_nothing_else_changes() {
        assert_eq!(
            fixed(
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"n":1e400}}"#,
                false
            ),
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"n":1e400}}"#
        );
        assert_eq!(
            fixed(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, false),
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#
        );
        let kept = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#;
        assert_eq!(fixed(kept, false), kept);
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#;
        assert_eq!(fixed(error, true), error);
    }

    #[test]
    fn a_cacheable_result_gains_the_cache_hints_it_lacks_and_keeps_its_own() {
        assert_eq!(
            fixed(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#, true),
            r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}}"#
        );
        assert_eq!(
            fixed(
                r#"{"id":2,"result":{"tools":[],"ttlMs":60000,"cacheScope":"public"}}"#,
                true
            ),
            r#"{"id":2,"result":{"resultType":"complete","tools":[],"ttlMs":60000,"cacheScope":"public"}}"#
        );
        assert!(is_cacheable("tools/list") && !is_cacheable("tools/call"));
    }
}
