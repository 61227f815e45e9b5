//! The upstream's questions during a call (elicitation, sampling, roots),
//! asked of a 2026-07-28 client as MRTR rounds: what both transports share.
//!
//! An older server asks its client a question by sending it a request
//! (`elicitation/create`, id R) and waits for the answer. A 2026-07-28
//! client is asked in the call's result instead: `input_required`, the
//! request under a key of the bridge's, and a `requestState` token; it
//! calls again with `inputResponses` under those keys and the token, and
//! the bridge answers R with them. The stdio upstream (`stdio/input.rs`)
//! and the HTTP bridge (`http/rounds.rs`) each keep their rounds; the
//! wire is this one.

use std::time::Duration;

/// One request of the upstream, asked in a round.
#[derive(Clone, Debug)]
pub(crate) struct Asked {
    /// The id of the upstream's request (JSON text), for its answer.
    pub request: String,
    /// Its key in `inputRequests`.
    pub key: String,
    pub method: String,
    /// Its params (JSON text).
    pub params: String,
}

/// How long a round waits for its client before the call is cancelled.
pub(crate) const ROUND_WAIT: Duration = Duration::from_secs(600);

/// How long a round gathers requests the upstream sends together (a tool
/// that asks two questions at once sends two requests back to back).
pub(crate) const GATHER: Duration = Duration::from_millis(25);

/// The client capabilities the bridge can ask about, in the order of the
/// bits of a [`declared`] mask.
pub(crate) const ASKABLE: [&str; 3] = ["elicitation", "sampling", "roots"];

/// The capability a client needs to answer `method`.
pub(crate) fn capability(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// The [`ASKABLE`] capabilities among `names`, as a mask (bit `i` for
/// `ASKABLE[i]`).
pub(crate) fn declared<'a>(names: impl IntoIterator<Item = &'a str>) -> usize {
    names
        .into_iter()
        .filter_map(|name| ASKABLE.iter().position(|askable| *askable == name))
        .fold(0, |mask, at| mask | 1 << at)
}

/// The `capabilities` of an `initialize` that declares the capabilities
/// of `mask`.
pub(crate) fn capabilities(mask: usize) -> String {
    let members: Vec<String> = ASKABLE
        .iter()
        .enumerate()
        .filter(|(at, _)| mask & 1 << at != 0)
        .map(|(_, name)| format!(r#""{name}":{{}}"#))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// The `input_required` result that asks `asked`, with `token` as the
/// `requestState`.
pub(crate) fn input_required(asked: &[Asked], token: &str) -> String {
    let requests: Vec<String> = asked
        .iter()
        .map(|asked| {
            format!(
                r#"{}:{{"method":{},"params":{}}}"#,
                serde_json::to_string(&asked.key).unwrap_or_default(),
                serde_json::to_string(&asked.method).unwrap_or_default(),
                asked.params
            )
        })
        .collect();
    format!(
        r#"{{"resultType":"input_required","inputRequests":{{{}}},"requestState":"{token}"}}"#,
        requests.join(",")
    )
}

/// The key of the `nth` (from 1) request for `capability` in one round:
/// the capability's name, then `-2`, `-3`, ...
pub(crate) fn key(capability: &str, nth: usize) -> String {
    if nth <= 1 {
        capability.to_owned()
    } else {
        format!("{capability}-{nth}")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An elicitation asked under `key`, for tests of rounds.
    pub(crate) fn asked(key: &str) -> Asked {
        Asked {
            request: "3".into(),
            key: key.into(),
            method: "elicitation/create".into(),
            params: r#"{"message":"Go?"}"#.into(),
        }
    }

    #[test]
    fn an_input_round_is_a_valid_mrtr_result() {
        let text = input_required(&[asked("a"), asked("b")], "t0k");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["resultType"], "input_required");
        assert_eq!(value["inputRequests"]["a"]["method"], "elicitation/create");
        assert_eq!(value["inputRequests"]["b"]["params"]["message"], "Go?");
        assert_eq!(value["requestState"], "t0k");
    }

    #[test]
    fn a_mask_names_the_capabilities_an_initialize_declares() {
        assert_eq!(declared(["sampling", "tools", "roots"]), 0b110);
        assert_eq!(capabilities(0b110), r#"{"sampling":{},"roots":{}}"#);
        assert_eq!(capabilities(0), "{}");
        assert_eq!(key("elicitation", 1), "elicitation");
        assert_eq!(key("elicitation", 2), "elicitation-2");
    }
}
