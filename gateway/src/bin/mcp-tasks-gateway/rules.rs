//! The values of the gateway's settings that are written as text: a
//! duration (`500ms`, `none`) and the per-tool rules (`TOOL=POLICY`,
//! `TOOL[=ATTEMPTS]`, `TOOL=DURATION`), and a stdio server's `KEY=VALUE`.
//! Each reads the same from the command line, the environment and the
//! TOML file.

use std::str::FromStr;
use std::time::Duration;

use mcp_tasks::ToolPolicy;
use serde::{Deserialize, Deserializer};

/// A duration as people write it (`500ms`, `1h`), or `none`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Human(pub Option<Duration>);

impl FromStr for Human {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "none" | "off" => Ok(Self(None)),
            text => humantime::parse_duration(text)
                .map(|duration| Self(Some(duration)))
                .map_err(|e| format!("{text:?} is not a duration such as 500ms or 1h: {e}")),
        }
    }
}

/// `TOOL=POLICY`.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyRule {
    /// The tool's name.
    pub tool: String,
    /// What happens to its calls.
    pub policy: ToolPolicy,
}

impl FromStr for PolicyRule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (tool, policy) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: expected TOOL=POLICY"))?;
        let policy = match policy.trim() {
            "threshold" => ToolPolicy::Threshold,
            "always" => ToolPolicy::Always,
            "never" => ToolPolicy::Never,
            "required" => ToolPolicy::Required,
            other => {
                return Err(format!(
                    "{other:?}: a policy is threshold, always, never or required"
                ));
            }
        };
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("{text:?}: the tool name is empty"));
        }
        Ok(Self {
            tool: tool.to_owned(),
            policy,
        })
    }
}

/// `KEY=VALUE`: an environment variable for a stdio server.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvVar {
    /// The variable's name.
    pub key: String,
    /// Its value.
    pub value: String,
}

impl FromStr for EnvVar {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('=') {
            Some((key, value)) if !key.is_empty() && !key.contains('\0') => Ok(Self {
                key: key.to_owned(),
                value: value.to_owned(),
            }),
            _ => Err(format!("{text:?}: expected KEY=VALUE")),
        }
    }
}

impl<'de> Deserialize<'de> for EnvVar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

/// `TOOL[=ATTEMPTS]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryRule {
    /// The tool's name.
    pub tool: String,
    /// How many runs its calls may have in all.
    pub attempts: u32,
}

/// The runs a `--retry` tool has when its rule names no number.
const DEFAULT_ATTEMPTS: u32 = 3;

impl FromStr for RetryRule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (tool, attempts) = match text.split_once('=') {
            Some((tool, attempts)) => {
                let attempts = attempts.trim().parse::<u32>().ok().filter(|n| *n >= 1);
                let attempts = attempts
                    .ok_or_else(|| format!("{text:?}: ATTEMPTS is a whole number of at least 1"))?;
                (tool, attempts)
            }
            None => (text, DEFAULT_ATTEMPTS),
        };
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("{text:?}: the tool name is empty"));
        }
        Ok(Self {
            tool: tool.to_owned(),
            attempts,
        })
    }
}

impl<'de> Deserialize<'de> for RetryRule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

/// Reads a value written as a string in TOML with its `FromStr`.
fn from_text<'de, D: Deserializer<'de>, T: FromStr<Err = String>>(
    deserializer: D,
) -> Result<T, D::Error> {
    String::deserialize(deserializer)?
        .parse()
        .map_err(serde::de::Error::custom)
}

/// A list in TOML that may also be written as one string, for a key that
/// once took one value (`oauth-audience = "https://…"`).
pub fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

impl<'de> Deserialize<'de> for Human {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

impl<'de> Deserialize<'de> for PolicyRule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

/// `TOOL=DURATION` or `TOOL=off`: when a tool's calls of clients without
/// tasks fall back to a task they read with the added tools.
#[derive(Clone, Debug, PartialEq)]
pub struct FallbackRule {
    /// The tool's name.
    pub tool: String,
    /// After how long; `None` for never.
    pub after: Option<Duration>,
}

impl FromStr for FallbackRule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (tool, after) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: expected TOOL=DURATION or TOOL=off"))?;
        let Human(after) = after.parse()?;
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("{text:?}: the tool name is empty"));
        }
        Ok(Self {
            tool: tool.to_owned(),
            after,
        })
    }
}

impl<'de> Deserialize<'de> for FallbackRule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

/// The names of the fallback's two tools: `RESULT,CANCEL`.
#[derive(Clone, Debug, PartialEq)]
pub struct FallbackNames {
    /// The tool that reads a task's outcome.
    pub result: String,
    /// The tool that cancels one.
    pub cancel: String,
}

impl FromStr for FallbackNames {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let names = text
            .split_once(',')
            .map(|(result, cancel)| (result.trim(), cancel.trim()))
            .filter(|(result, cancel)| {
                !result.is_empty() && !cancel.is_empty() && result != cancel
            });
        let (result, cancel) = names
            .ok_or_else(|| format!("{text:?}: expected two different names, RESULT,CANCEL"))?;
        Ok(Self {
            result: result.to_owned(),
            cancel: cancel.to_owned(),
        })
    }
}

impl<'de> Deserialize<'de> for FallbackNames {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_text(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!("500ms".parse(), Ok(Human(Some(Duration::from_millis(500)))));
        assert_eq!("1h".parse(), Ok(Human(Some(Duration::from_secs(3600)))));
        assert_eq!("none".parse(), Ok(Human(None)));
        assert!("soon".parse::<Human>().is_err());
    }

    #[test]
    fn retries_read_tool_and_attempts_with_three_by_default() {
        let rule: RetryRule = "reindex".parse().unwrap();
        assert_eq!((rule.tool.as_str(), rule.attempts), ("reindex", 3));
        let rule: RetryRule = "reindex=5".parse().unwrap();
        assert_eq!(rule.attempts, 5);
        assert!("reindex=0".parse::<RetryRule>().is_err());
        assert!("=2".parse::<RetryRule>().is_err());
    }

    #[test]
    fn policies_read_tool_equals_mode() {
        let rule: PolicyRule = "slow = always".parse().unwrap();
        assert_eq!(rule.tool, "slow");
        assert_eq!(rule.policy, ToolPolicy::Always);
        assert!("slow".parse::<PolicyRule>().is_err());
        assert!("slow=sometimes".parse::<PolicyRule>().is_err());
        assert!("=always".parse::<PolicyRule>().is_err());
    }

    #[test]
    fn fallbacks_read_tool_equals_duration_or_off() {
        let rule: FallbackRule = "render=5s".parse().unwrap();
        assert_eq!(rule.tool, "render");
        assert_eq!(rule.after, Some(Duration::from_secs(5)));
        let rule: FallbackRule = "send_email=off".parse().unwrap();
        assert_eq!(rule.after, None);
        assert!("render".parse::<FallbackRule>().is_err());
        assert!("render=soon".parse::<FallbackRule>().is_err());
        assert!("=5s".parse::<FallbackRule>().is_err());
    }

    #[test]
    fn fallback_names_are_two_different_names() {
        let names: FallbackNames = "job_result, job_cancel".parse().unwrap();
        assert_eq!(
            (names.result.as_str(), names.cancel.as_str()),
            ("job_result", "job_cancel")
        );
        assert!("one".parse::<FallbackNames>().is_err());
        assert!("same,same".parse::<FallbackNames>().is_err());
        assert!(",x".parse::<FallbackNames>().is_err());
    }
}
