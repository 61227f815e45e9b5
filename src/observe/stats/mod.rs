//! [`ToolStats`], the call observer made for an operator's console: per
//! tool, a window of slots (its docs hold the rules and their reasons).
//!
//! | File           | Holds                                                     |
//! |----------------|-----------------------------------------------------------|
//! | `mod.rs`       | [`ToolStats`], the series a snapshot gives, the names kept |
//! | `window.rs`    | one tool's ring of slots, recorded into with atomics      |
//! | `histogram.rs` | run times in a fixed log-scale histogram, and quantiles   |
//! | `tests.rs`     | its unit tests                                            |

mod histogram;
mod window;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::calls::{CallObserver, CallOutcome, CallRecord};
use window::{Call, Window};

/// Per tool, over the last minutes, how many calls, how many
/// of them parked or failed, and the 50th, 95th and 99th percentiles of
/// their run time, slot by slot: what an operator's console plots. It is a
/// [`CallObserver`]: install a clone with
/// [`TasksLayer::observe_calls`](crate::TasksLayer::observe_calls) and read
/// [`ToolStats::snapshot`] whenever the console asks.
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::observe::ToolStats;
/// use mcp_tasks::observe::calls::{CallObserver, CallOutcome, CallRecord};
/// use mcp_tasks::{MemoryTaskStore, TasksLayer};
///
/// let stats = ToolStats::new(); // 10 s slots over 10 minutes
/// let layer = TasksLayer::new(MemoryTaskStore::new()).observe_calls(stats.clone());
/// # let _ = layer;
///
/// // What the layer does at the end of each call:
/// let ms = Duration::from_millis;
/// stats.finished(&CallRecord::new("search", ms(40), false, CallOutcome::Succeeded));
/// stats.finished(&CallRecord::new("export", ms(9_000), true, CallOutcome::Failed));
///
/// let series = stats.snapshot();
/// assert_eq!(series[1].tool, "search");
/// assert_eq!(series[1].slots.len(), 60);
/// assert_eq!(series[1].slots[59].calls, 1); // the newest slot is the last
/// assert_eq!((series[0].total.parked, series[0].total.failed), (1, 1));
/// let json = serde_json::to_value(&series).unwrap();
/// let p50 = json[1]["total"]["p50_ms"].as_f64().unwrap();
/// assert!((p50 - 40.0).abs() <= 40.0 * ToolStats::MAX_RELATIVE_ERROR);
/// ```
///
/// | Rule | Why |
/// |------|-----|
/// | a call counts in the slot in which it ended | its run time is known then |
/// | quantiles by nearest rank, from a fixed log-scale histogram per slot (8 buckets per doubling, 1.024 µs to about 19.5 h): within [`ToolStats::MAX_RELATIVE_ERROR`] (4.43 %) of the true value inside that range | fixed memory per slot, and slots merge into the window's total exactly |
/// | quantiles over every call of the slot, whatever its outcome (a cancelled one for the time it ran) | what the tool's callers waited |
/// | at most [`ToolStats::MAX_TOOLS`] (256) names; calls of further names count under [`ToolStats::OTHER`], `"(other)"` (as does a tool of that very name) | a client can send any name: memory stays bounded whatever it sends |
/// | a name cut at [`ToolStats::MAX_NAME_BYTES`] (256) bytes, at a char boundary | the same |
/// | recording: one read-locked map lookup (the tool's window, an `Arc`), then atomic adds; the map's write lock only for a new name, a window's own lock only when a slot starts a new period | calls of every tool record side by side; nothing is allocated for a known tool once each slot has its histogram |
///
/// Memory: per name, about 50 bytes a slot, and 1.1 KiB of histogram for
/// each slot that ever recorded a call (allocated then, and reused); at
/// most 257 windows (with `"(other)"`), about 18 MiB at the defaults if
/// every one of them recorded in every slot.
///
/// Clones share the same statistics.
#[derive(Clone)]
pub struct ToolStats {
    shared: Arc<Shared>,
}

struct Shared {
    slot: Duration,
    slot_nanos: u64,
    slots: usize,
    /// Periods are counted from here.
    epoch: Instant,
    tools: RwLock<HashMap<Box<str>, Arc<Window>>>,
    other: Arc<Window>,
    /// Whether `other` recorded a call yet (it is shown from then on).
    other_used: AtomicBool,
}

/// One tool's statistics, as [`ToolStats::snapshot`] reads them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ToolSeries {
    /// The tool's name (cut at [`ToolStats::MAX_NAME_BYTES`]), or
    /// [`ToolStats::OTHER`].
    pub tool: String,
    /// One entry per slot of the window, oldest first, the current
    /// (partial) slot last; always the window's number of slots, an empty
    /// slot all zeros.
    pub slots: Vec<SlotStats>,
    /// Over the whole window.
    pub total: SlotStats,
}

/// The calls of one slot (or of the window): plain data, serialized with
/// the quantiles as milliseconds (`p50_ms`, `p95_ms`, `p99_ms`: a float, or
/// `null` without calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SlotStats {
    /// Calls that ended in the slot.
    pub calls: u64,
    /// Of them, those that parked (became tasks).
    pub parked: u64,
    /// Of them, those that failed ([`CallOutcome::Failed`]).
    pub failed: u64,
    /// The median run time.
    #[serde(rename = "p50_ms", serialize_with = "millis")]
    pub p50: Option<Duration>,
    /// The 95th percentile of run time.
    #[serde(rename = "p95_ms", serialize_with = "millis")]
    pub p95: Option<Duration>,
    /// The 99th percentile of run time.
    #[serde(rename = "p99_ms", serialize_with = "millis")]
    pub p99: Option<Duration>,
}

fn millis<S: serde::Serializer>(time: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    time.map(|time| time.as_secs_f64() * 1000.0)
        .serialize(serializer)
}

impl Default for ToolStats {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.read_tools().len();
        f.debug_struct("ToolStats")
            .field("slot", &self.shared.slot)
            .field("slots", &self.shared.slots)
            .field("tools", &tools)
            .finish()
    }
}

impl ToolStats {
    /// The most distinct tool names kept apart.
    pub const MAX_TOOLS: usize = 256;
    /// The longest tool name kept, in bytes.
    pub const MAX_NAME_BYTES: usize = 256;
    /// The name calls of tools past [`MAX_TOOLS`](Self::MAX_TOOLS) count under.
    pub const OTHER: &'static str = "(other)";
    /// The most slots a window may have.
    pub const MAX_SLOTS: usize = 1000;
    /// The largest relative error of a quantile, for run times from
    /// 1.024 µs to about 19.5 hours: 2^(1/16) − 1, about 4.43 %.
    pub const MAX_RELATIVE_ERROR: f64 = histogram::MAX_RELATIVE_ERROR;

    /// Statistics over 10 minutes, in 60 slots of 10 seconds.
    pub fn new() -> Self {
        Self::with_window(Duration::from_secs(10), 60)
    }

    /// Statistics over `slots` slots of `slot` each (a slot at least one
    /// millisecond long; 1 to [`MAX_SLOTS`](Self::MAX_SLOTS) slots).
    pub fn with_window(slot: Duration, slots: usize) -> Self {
        let slot = slot.max(Duration::from_millis(1));
        let slots = slots.clamp(1, Self::MAX_SLOTS);
        Self {
            shared: Arc::new(Shared {
                slot,
                slot_nanos: u64::try_from(slot.as_nanos()).unwrap_or(u64::MAX),
                slots,
                epoch: Instant::now(),
                tools: RwLock::default(),
                other: Arc::new(Window::new(slots)),
                other_used: AtomicBool::new(false),
            }),
        }
    }

    /// How long one slot lasts.
    pub fn slot(&self) -> Duration {
        self.shared.slot
    }

    /// Every tool seen, sorted by name, each with its window up to now.
    pub fn snapshot(&self) -> Vec<ToolSeries> {
        self.snapshot_at(Instant::now())
    }

    /// [`snapshot`](Self::snapshot) as of `at`.
    fn snapshot_at(&self, at: Instant) -> Vec<ToolSeries> {
        let shared = &*self.shared;
        let last = self.period(at);
        let mut windows: Vec<(String, Arc<Window>)> = self
            .read_tools()
            .iter()
            .map(|(tool, window)| (tool.to_string(), window.clone()))
            .collect();
        if shared.other_used.load(Ordering::Acquire) {
            windows.push((Self::OTHER.to_owned(), shared.other.clone()));
        }
        windows.sort_by(|a, b| a.0.cmp(&b.0));
        windows
            .into_iter()
            .map(|(tool, window)| {
                let (slots, total) = window.read(last, shared.slots);
                ToolSeries { tool, slots, total }
            })
            .collect()
    }

    /// Records `call` as ended at `at`.
    fn record_at(&self, at: Instant, call: &CallRecord<'_>) {
        let period = self.period(at);
        let recorded = Call {
            nanos: u64::try_from(call.elapsed.as_nanos()).unwrap_or(u64::MAX),
            parked: call.parked,
            failed: call.outcome == CallOutcome::Failed,
        };
        self.window(cut(call.tool)).record(period, recorded);
    }

    /// The number of the period `at` falls in.
    fn period(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.shared.epoch);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX) / self.shared.slot_nanos
    }

    /// The window of `tool`: its own, made on its first call while there
    /// is room, else `"(other)"`'s.
    fn window(&self, tool: &str) -> Arc<Window> {
        let shared = &*self.shared;
        if let Some(window) = self.read_tools().get(tool) {
            return window.clone();
        }
        if tool != Self::OTHER {
            let mut tools = shared.tools.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(window) = tools.get(tool) {
                return window.clone();
            }
            if tools.len() < Self::MAX_TOOLS {
                let window = Arc::new(Window::new(shared.slots));
                tools.insert(tool.into(), window.clone());
                return window;
            }
        }
        shared.other_used.store(true, Ordering::Release);
        shared.other.clone()
    }

    /// The map of windows, read-locked. A panic cannot leave it half
    /// changed (an insert is whole or not done), so a poisoned lock is
    /// read all the same.
    fn read_tools(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Box<str>, Arc<Window>>> {
        self.shared
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl CallObserver for ToolStats {
    fn finished(&self, call: &CallRecord<'_>) {
        self.record_at(Instant::now(), call);
    }
}

/// `name` cut to at most [`ToolStats::MAX_NAME_BYTES`] bytes, at a char
/// boundary.
fn cut(name: &str) -> &str {
    crate::text::head(name, ToolStats::MAX_NAME_BYTES)
}

#[cfg(test)]
mod tests;
