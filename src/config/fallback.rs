//! The fallback's settings (see `crate::modern::fallback` for what it does).

use std::collections::HashMap;
use std::time::Duration;

/// The fallback's settings.
#[derive(Clone, Debug)]
pub(crate) struct Fallback {
    /// The time after which any tool's call falls back (`None`: off).
    pub every: Option<Duration>,
    /// Per tool: its own time, or `None` for never.
    pub tools: HashMap<String, Option<Duration>>,
    /// The names of the two added tools.
    pub names: Names,
}

/// The names of the two tools the fallback adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Names {
    /// Reads a task's outcome.
    pub result: String,
    /// Cancels a task.
    pub cancel: String,
}

/// One of the two added tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Added {
    Result,
    Cancel,
}

impl Default for Fallback {
    fn default() -> Self {
        Self {
            every: None,
            tools: HashMap::new(),
            names: Names {
                result: "get_task_result".into(),
                cancel: "cancel_task".into(),
            },
        }
    }
}

impl Fallback {
    /// How long a call of `tool` runs before it falls back (`None`: never).
    pub(crate) fn after(&self, tool: &str) -> Option<Duration> {
        self.tools.get(tool).copied().unwrap_or(self.every)
    }

    /// Whether any tool falls back: the two tools are added only then.
    pub(crate) fn on(&self) -> bool {
        self.every.is_some() || self.tools.values().any(Option::is_some)
    }

    /// The added tool `tool` names, when the fallback is on.
    pub(crate) fn added(&self, tool: &str) -> Option<Added> {
        if !self.on() {
            return None;
        }
        if tool == self.names.result {
            Some(Added::Result)
        } else if tool == self.names.cancel {
            Some(Added::Cancel)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_of_its_own_wins_over_every_tool_and_the_tools_exist_only_when_on() {
        let mut fallback = Fallback::default();
        assert!(!fallback.on());
        assert_eq!(fallback.added("get_task_result"), None);
        fallback
            .tools
            .insert("slow".into(), Some(Duration::from_secs(5)));
        assert!(fallback.on());
        assert_eq!(fallback.after("slow"), Some(Duration::from_secs(5)));
        assert_eq!(fallback.after("other"), None);
        fallback.every = Some(Duration::from_secs(30));
        fallback.tools.insert("quick".into(), None);
        assert_eq!(fallback.after("other"), Some(Duration::from_secs(30)));
        assert_eq!(fallback.after("quick"), None);
        assert_eq!(fallback.added("get_task_result"), Some(Added::Result));
        assert_eq!(fallback.added("cancel_task"), Some(Added::Cancel));
        assert_eq!(fallback.added("slow"), None);
    }
}
