//! A task as one row of the console's table, in JSON.
//!
//! Values that a client or a tool chose are cut to a size a browser shows
//! without trouble (a status message at [`MESSAGE_BYTES`], an owner at
//! [`OWNER_BYTES`]; the layer keeps tool names at 1 KiB already), each cut
//! at a character boundary and marked with `…`; the page writes them as
//! text.

use mcp_tasks::store::AdminTask;
use mcp_tasks::{TaskStatus, Timestamp};
use serde::Serialize;

/// The most bytes of a status message a row carries.
pub const MESSAGE_BYTES: usize = 4096;
/// The most bytes of an owner a row carries.
pub const OWNER_BYTES: usize = 1024;

/// One task, as the page shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The task's id.
    pub id: String,
    /// The tool whose call made it, when the store knows.
    pub tool: Option<String>,
    /// Whose it is: the store's owner key (the principal, after the
    /// layer's scope), `None` without a principal.
    pub owner: Option<String>,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: &'static str,
    /// Whether the status is terminal (the task may be deleted).
    pub finished: bool,
    /// The status message.
    pub message: Option<String>,
    /// Progress from 0 to 1, when the status message states it
    /// ([`progress`]).
    pub progress: Option<f64>,
    /// Creation, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// The last change, in milliseconds since the Unix epoch.
    pub updated_ms: u64,
    /// How long it ran: to its end for a finished task, to `now` otherwise.
    pub run_ms: u64,
    /// Which run of the call this is, 1 for the first.
    pub attempt: u32,
}

impl Row {
    /// The row of `task`, its run time counted to `now`.
    pub fn of(task: &AdminTask, now: Timestamp) -> Self {
        let snapshot = &task.snapshot;
        let status = snapshot.status();
        let finished = status.is_terminal();
        let created = snapshot.created_at.as_millis();
        let end = if finished {
            snapshot.last_updated_at.as_millis()
        } else {
            now.as_millis()
        };
        let message = snapshot.status_message.as_deref();
        Self {
            id: snapshot.id.to_string(),
            tool: task.tool.clone(),
            owner: task.owner.as_deref().map(|owner| cut(owner, OWNER_BYTES)),
            status: status.as_str(),
            finished,
            progress: match status {
                TaskStatus::Completed => Some(1.0),
                _ => message.and_then(progress),
            },
            message: message.map(|message| cut(message, MESSAGE_BYTES)),
            created_ms: created,
            updated_ms: snapshot.last_updated_at.as_millis(),
            run_ms: end.saturating_sub(created),
            attempt: task.attempt,
        }
    }
}

/// `text`, or its first `max` bytes (at a character boundary) and `…`.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The progress a status message states, from 0 to 1: the layer's own
/// `progress N/TOTAL` (what it writes for a progress notification without
/// a message), or a message that ends in `N/TOTAL`, `(N/TOTAL)` or `P%`.
/// `None` when it states none.
pub fn progress(message: &str) -> Option<f64> {
    let tail = message.trim_end().trim_end_matches(')');
    if let Some(percent) = tail.strip_suffix('%') {
        let number = last_number(percent)?;
        return fraction(number, 100.0);
    }
    let (before, total) = tail.rsplit_once('/')?;
    let total: f64 = total.trim().parse().ok()?;
    fraction(last_number(before)?, total)
}

fn last_number(text: &str) -> Option<f64> {
    let text = text.trim_end();
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit() || *c == '.')
        .last()
        .map(|(at, _)| at)?;
    text[start..].parse().ok()
}

fn fraction(done: f64, total: f64) -> Option<f64> {
    (total > 0.0 && done.is_finite() && total.is_finite()).then(|| (done / total).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_read_from_the_forms_a_message_states_it_in() {
        assert_eq!(progress("progress 3/10"), Some(0.3));
        assert_eq!(progress("copying (5/20)"), Some(0.25));
        assert_eq!(progress("42%"), Some(0.42));
        assert_eq!(progress("step 12 of 5/10"), Some(0.5));
        assert_eq!(progress("progress 7"), None);
        assert_eq!(progress("a/b"), None);
        assert_eq!(progress("3/0"), None);
        assert_eq!(progress("20/10"), Some(1.0));
        assert_eq!(progress(""), None);
    }

    #[test]
    fn a_long_value_is_cut_at_a_character_boundary() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("ééé", 3), "é…");
        assert_eq!(
            cut(&"x".repeat(1 << 20), MESSAGE_BYTES).len(),
            MESSAGE_BYTES + 3
        );
    }
}
