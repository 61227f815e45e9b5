//! What a task is: its identifier, its status and the payload each status carries.
//!
//! | Status           | Payload                                   | Terminal | Reached when                                  |
//! |------------------|-------------------------------------------|----------|-----------------------------------------------|
//! | `working`        | none                                      | no       | the call is parked, or input was answered     |
//! | `input_required` | `inputRequests` the client must answer    | no       | the inner call asked for input (MRTR)         |
//! | `completed`      | the inner `result`, verbatim              | yes      | the inner call answered a result (`isError` too) |
//! | `failed`         | a JSON-RPC `error` object                 | yes      | the inner call answered an error, or broke    |
//! | `cancelled`      | none                                      | yes      | `tasks/cancel`                                |
//!
//! [`TaskState`] carries exactly the payload of its status, so a completed task
//! without a result, or a working task with one, cannot be built.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::value::RawValue;

/// A task identifier: 128 bits from the operating system's CSPRNG.
///
/// On the wire it is 32 lowercase hexadecimal digits, which is header-safe, so
/// `Mcp-Name: <taskId>` never needs the base64 form. Guessing one is as hard as
/// guessing a 128-bit key, which matters because a task id may act as a bearer
/// handle when no principal is configured.
///
/// ```
/// use mcp_tasks::TaskId;
///
/// let id = TaskId::generate().unwrap();
/// let text = id.to_string();
/// assert_eq!(text.len(), 32);
/// assert_eq!(TaskId::parse(&text), Some(id));
/// assert_eq!(TaskId::parse("not-a-task"), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(u128);

impl TaskId {
    /// Draws a fresh identifier from the OS random source.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Self(u128::from_le_bytes(bytes)))
    }

    /// Parses the wire form. Anything that is not exactly 32 lowercase hex
    /// digits is not a task this crate minted.
    pub fn parse(text: &str) -> Option<Self> {
        let valid =
            text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !valid {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(Self)
    }

    /// The identifier as a number, for stores that key on it.
    pub fn as_u128(self) -> u128 {
        self.0
    }

    /// Rebuilds an identifier from [`as_u128`](Self::as_u128).
    pub fn from_u128(value: u128) -> Self {
        Self(value)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({self})")
    }
}

/// The five task statuses shared by both protocol generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// The call is running.
    Working,
    /// The call waits for the client's answers to `inputRequests`.
    InputRequired,
    /// The call answered a result (terminal).
    Completed,
    /// The call answered a JSON-RPC error or could not finish (terminal).
    Failed,
    /// The task was cancelled (terminal).
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order of their life: running, waiting, then
    /// the three ends.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The wire name of the status.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the status can never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status together with exactly the payload it carries.
///
/// Payloads are kept as raw JSON so that what the inner server answered is
/// what the client reads, byte for byte.
#[derive(Clone, Debug)]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for input; `requests` is the client-facing `inputRequests` object.
    InputRequired {
        /// The `inputRequests` object, keyed for the task's whole life.
        requests: Box<RawValue>,
    },
    /// Finished with the inner server's `result` object.
    Completed {
        /// The result, verbatim.
        result: Box<RawValue>,
    },
    /// Finished with a JSON-RPC error object.
    Failed {
        /// The error object (`code`, `message`, `data?`), verbatim.
        error: Box<RawValue>,
    },
    /// Cancelled by `tasks/cancel`.
    Cancelled,
}

impl TaskState {
    /// The status this state is in.
    pub fn status(&self) -> TaskStatus {
        match self {
            Self::Working => TaskStatus::Working,
            Self::InputRequired { .. } => TaskStatus::InputRequired,
            Self::Completed { .. } => TaskStatus::Completed,
            Self::Failed { .. } => TaskStatus::Failed,
            Self::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// A point in time with millisecond precision, as tasks report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(self) -> u64 {
        self.0
    }

    /// Builds a timestamp from milliseconds since the Unix epoch.
    pub fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// This time plus `duration`, saturating.
    pub fn saturating_add(self, duration: Duration) -> Self {
        let add = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(add))
    }
}

impl fmt::Display for Timestamp {
    /// ISO 8601 / RFC 3339 in UTC with milliseconds, e.g. `2026-11-29T07:10:25.123Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = UNIX_EPOCH + Duration::from_millis(self.0);
        write!(f, "{}", humantime::format_rfc3339_millis(time))
    }
}

/// Everything a client may see of a task at one moment.
///
/// The owner is deliberately absent: ownership is an authorization fact kept by
/// the store, never wire state.
#[derive(Clone, Debug)]
pub struct TaskSnapshot {
    /// The identifier.
    pub id: TaskId,
    /// Status and payload.
    pub state: TaskState,
    /// Optional human-readable message (progress, diagnostics).
    pub status_message: Option<String>,
    /// When the task was created.
    pub created_at: Timestamp,
    /// When the task last changed.
    pub last_updated_at: Timestamp,
    /// Lifetime from creation; `None` is unlimited.
    pub ttl: Option<Duration>,
    /// Suggested polling interval.
    pub poll_interval: Option<Duration>,
}

impl TaskSnapshot {
    /// The status of the snapshot.
    pub fn status(&self) -> TaskStatus {
        self.state.status()
    }
}

#[cfg(test)]
impl TaskSnapshot {
    /// A fixed snapshot for unit tests: id `0xabc`, no message, 60 s TTL,
    /// 500 ms polling.
    pub(crate) fn example(state: TaskState) -> Self {
        Self {
            id: TaskId::from_u128(0xabc),
            state,
            status_message: None,
            created_at: Timestamp::from_millis(1_764_400_225_000),
            last_updated_at: Timestamp::from_millis(1_764_400_226_500),
            ttl: Some(Duration::from_secs(60)),
            poll_interval: Some(Duration::from_millis(500)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_round_trip_and_reject_foreign_strings() {
        let id = TaskId::generate().unwrap();
        assert_eq!(TaskId::parse(&id.to_string()), Some(id));
        assert_eq!(TaskId::parse("ABCDEF0123456789ABCDEF0123456789"), None);
        assert_eq!(TaskId::parse("0123"), None);
        assert_ne!(TaskId::generate().unwrap(), id);
    }

    #[test]
    fn timestamps_render_as_rfc3339_utc_with_millis() {
        assert_eq!(
            Timestamp::from_millis(1_764_400_225_123).to_string(),
            "2025-11-29T07:10:25.123Z"
        );
    }
}
