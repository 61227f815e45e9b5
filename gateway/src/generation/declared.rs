//! What an older upstream declared in its `initialize` answer, and the
//! answers a client of either generation gets from it without asking the
//! upstream again: `server/discover` for 2026-07-28, `initialize` for a
//! 2025-11-25 session the gateway keeps itself.

use bytes::Bytes;
use serde_json::value::RawValue;

use super::message::{member, result_response};
use mcp_tasks::MODERN_VERSION;
use mcp_tasks::wire::raw::empty_object;

/// The versions of the `initialize` handshake: a client asking one of them
/// gets it (the stdio upstream: when no newer than its child's).
pub(crate) const HANDSHAKE_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What an upstream declared in its `initialize` answer.
#[derive(Clone, Debug)]
pub(crate) struct Declared {
    /// The protocol version the upstream agreed to.
    pub version: String,
    /// `capabilities`, as sent.
    pub capabilities: Box<RawValue>,
    /// `serverInfo`, as sent.
    pub server_info: Box<RawValue>,
    /// `instructions`, as sent.
    pub instructions: Option<Box<RawValue>>,
}

impl Declared {
    /// Reads the `result` of an `initialize` answer.
    pub(crate) fn read(result: &RawValue) -> Result<Self, String> {
        let raw = |name: &str| member(result, name).map(ToOwned::to_owned);
        let version = member(result, "protocolVersion")
            .and_then(|version| serde_json::from_str::<String>(version.get()).ok())
            .ok_or("its initialize answer has no protocolVersion")?;
        Ok(Self {
            version,
            capabilities: raw("capabilities").unwrap_or_else(empty_object),
            server_info: raw("serverInfo").unwrap_or_else(empty_object),
            instructions: raw("instructions"),
        })
    }

    /// The answer to a 2026-07-28 `server/discover` with id `id` (its JSON
    /// text): the upstream's capabilities and instructions, as a 2026-07-28
    /// server's, not to be reused (`ttlMs` 0: the upstream may change them).
    pub(crate) fn discover(&self, id: &str) -> Bytes {
        let instructions = self
            .instructions
            .as_ref()
            .map(|instructions| format!(r#","instructions":{}"#, instructions.get()))
            .unwrap_or_default();
        let result = format!(
            r#"{{"resultType":"complete","supportedVersions":["{MODERN_VERSION}"],"capabilities":{},"_meta":{{"io.modelcontextprotocol/serverInfo":{}}}{instructions},"ttlMs":0,"cacheScope":"public"}}"#,
            self.capabilities.get(),
            self.server_info.get()
        );
        result_response(id, &result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discover_is_answered_from_what_initialize_declared() {
        let result = RawValue::from_string(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"},"instructions":"use it"}"#.into(),
        )
        .unwrap();
        let declared = Declared::read(&result).unwrap();
        assert_eq!(declared.version, "2025-11-25");
        let answer: serde_json::Value = serde_json::from_slice(&declared.discover("7")).unwrap();
        assert_eq!(answer["id"], 7);
        let result = &answer["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["supportedVersions"][0], MODERN_VERSION);
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "s"
        );
        assert_eq!(result["instructions"], "use it");
        assert_eq!(result["ttlMs"], 0);
        let none = RawValue::from_string(r#"{"capabilities":{}}"#.into()).unwrap();
        assert!(Declared::read(&none).is_err());
    }
}
