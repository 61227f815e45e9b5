//! The memory store's log of status changes ([`TaskStore::status_events`]
//! and webhook subscriptions' positions in it).
//!
//! | Piece | Bound | Cost |
//! |-------|-------|------|
//! | every change, by sequence number | the last [`KEPT`] changes of all owners | O(log n) to add, O(1) amortized to drop the oldest |
//! | each owner's changes, by sequence number | the same changes, indexed | O(log n + page) to read after a cursor |
//! | the highest sequence number dropped | one number | a read after a cursor below it says `truncated` (the bound is shared: a busy owner may push out a quiet one's changes) |
//!
//! Nothing is logged until the first read: a layer without task events
//! never reads, and its store keeps no log.
//!
//! A cursor is `m<epoch>-<seq>`: `epoch` is drawn when the store is made,
//! so a cursor of an earlier process (a memory store does not outlive it)
//! reads as truncated from the oldest change kept instead of silently
//! meaning another position. An event's id is `e<epoch>-<seq>`.
//!
//! [`TaskStore::status_events`]: crate::TaskStore::status_events

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Entry, MemoryTaskStore};
use crate::store::{EventPage, StatusEvent, StoreError};
use crate::task::{TaskSnapshot, TaskStatus};

/// How many changes the log keeps, all owners together.
pub(super) const KEPT: usize = 100_000;

pub(super) struct Log {
    epoch: u64,
    /// Whether changes are logged: from the first read on. Every cursor
    /// comes from a read, so none can point before it; until then (a layer
    /// without task events) a change costs one load and holds nothing.
    keeping: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The last sequence number given (0: none yet).
    last: u64,
    /// The highest sequence number dropped (0: none).
    dropped: u64,
    entries: BTreeMap<u64, (Option<Box<str>>, TaskSnapshot)>,
    owners: HashMap<Option<Box<str>>, BTreeSet<u64>>,
}

/// Where a read starts.
enum After {
    /// From now.
    Now,
    /// After this sequence number.
    Seq(u64),
    /// A cursor of another process: from the oldest change kept, truncated.
    Stale,
}

impl Default for Log {
    fn default() -> Self {
        let mut bytes = [0u8; 4];
        let _ = getrandom::fill(&mut bytes);
        Self {
            epoch: u64::from(u32::from_le_bytes(bytes)),
            keeping: AtomicBool::new(false),
            inner: Mutex::default(),
        }
    }
}

impl MemoryTaskStore {
    /// Logs `entry` when its status is no longer `before` (under its
    /// shard's lock, so the log's order is the changes' order per task).
    pub(super) fn logged(&self, entry: &Entry, id: u128, before: TaskStatus) {
        if entry.state.status() != before {
            self.inner.log.record(entry.owner.as_deref(), || {
                StatusEvent::strip(&entry.snapshot(id))
            });
        }
    }
}

impl Log {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cursor(&self, seq: u64) -> String {
        format!("m{:x}-{seq}", self.epoch)
    }

    fn parse(&self, cursor: Option<&str>) -> Result<After, StoreError> {
        let Some(cursor) = cursor else {
            return Ok(After::Now);
        };
        let (epoch, seq) = cursor
            .strip_prefix('m')
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(epoch, seq)| {
                Some((
                    u64::from_str_radix(epoch, 16).ok()?,
                    seq.parse::<u64>().ok()?,
                ))
            })
            .ok_or(StoreError::InvalidCursor)?;
        Ok(if epoch == self.epoch {
            After::Seq(seq)
        } else {
            After::Stale
        })
    }

    /// Logs the task `task` gives (already stripped) as a change of
    /// `owner`'s, once someone reads the log; until then `task` is not
    /// called.
    pub(super) fn record(&self, owner: Option<&str>, task: impl FnOnce() -> TaskSnapshot) {
        if !self.keeping.load(Ordering::Acquire) {
            return;
        }
        let task = task();
        let mut inner = self.lock();
        inner.last += 1;
        let seq = inner.last;
        let owner: Option<Box<str>> = owner.map(Into::into);
        inner.owners.entry(owner.clone()).or_default().insert(seq);
        inner.entries.insert(seq, (owner, task));
        while inner.entries.len() > KEPT {
            let Some((old, (owner, _))) = inner.entries.pop_first() else {
                break;
            };
            inner.dropped = old;
            if let Some(seqs) = inner.owners.get_mut(&owner) {
                seqs.remove(&old);
                if seqs.is_empty() {
                    inner.owners.remove(&owner);
                }
            }
        }
    }

    /// How many changes are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// [`TaskStore::status_events`](crate::TaskStore::status_events).
    pub(super) fn read(
        &self,
        owner: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<EventPage, StoreError> {
        let after = self.parse(after)?;
        // Set before the lock: a change logged after this read's cursor is
        // taken is there for the next read.
        self.keeping.store(true, Ordering::Release);
        let inner = self.lock();
        let (from, truncated) = match after {
            After::Now => {
                return Ok(EventPage {
                    events: Vec::new(),
                    cursor: self.cursor(inner.last),
                    truncated: false,
                    more: false,
                });
            }
            After::Seq(seq) if seq > inner.last => return Err(StoreError::InvalidCursor),
            After::Seq(seq) => (seq, seq < inner.dropped),
            After::Stale => (0, true),
        };
        let limit = limit.clamp(1, 1000);
        let key: Option<Box<str>> = owner.map(Into::into);
        let mut events = Vec::new();
        let mut more = false;
        if let Some(seqs) = inner.owners.get(&key) {
            for &seq in seqs.range(from + 1..) {
                if events.len() == limit {
                    more = true;
                    break;
                }
                if let Some((_, task)) = inner.entries.get(&seq) {
                    events.push(StatusEvent {
                        id: format!("e{:x}-{seq}", self.epoch),
                        cursor: self.cursor(seq),
                        task: task.clone(),
                    });
                }
            }
        }
        // The page ends at its last event; a read that reached the end of
        // the owner's changes may start next time from the log's end.
        let cursor = match (more, events.last()) {
            (true, Some(last)) => last.cursor.clone(),
            _ => self.cursor(inner.last.max(from)),
        };
        Ok(EventPage {
            events,
            cursor,
            truncated,
            more,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{TaskId, TaskState};

    fn task(id: u128) -> TaskSnapshot {
        let mut task = TaskSnapshot::example(TaskState::Working);
        task.id = TaskId::from_u128(id);
        task
    }

    #[test]
    fn a_reader_resumes_after_its_cursor_and_sees_only_its_owner() {
        let log = Log::default();
        let start = log.read(Some("a"), None, 10).unwrap();
        assert!(start.events.is_empty() && !start.truncated);
        log.record(Some("a"), || task(1));
        log.record(Some("b"), || task(2));
        log.record(Some("a"), || task(3));
        let page = log.read(Some("a"), Some(&start.cursor), 1).unwrap();
        assert_eq!(page.events.len(), 1);
        assert_eq!(page.events[0].task.id, TaskId::from_u128(1));
        assert!(page.more);
        let next = log.read(Some("a"), Some(&page.cursor), 10).unwrap();
        assert_eq!(next.events.len(), 1);
        assert_eq!(next.events[0].task.id, TaskId::from_u128(3));
        assert!(!next.more);
        let after = log.read(Some("a"), Some(&next.cursor), 10).unwrap();
        assert!(after.events.is_empty());
        assert_eq!(after.cursor, next.cursor);
        let other = log.read(Some("b"), Some(&start.cursor), 10).unwrap();
        assert_eq!(other.events.len(), 1);
        assert!(
            log.read(None, Some(&start.cursor), 10)
                .unwrap()
                .events
                .is_empty()
        );
    }

    #[test]
    fn dropped_changes_and_foreign_cursors_read_as_truncated() {
        let log = Log::default();
        let start = log.read(None, None, 10).unwrap();
        for id in 0..(KEPT as u128 + 5) {
            log.record(None, || task(id));
        }
        let page = log.read(None, Some(&start.cursor), 10).unwrap();
        assert!(page.truncated);
        assert_eq!(page.events[0].task.id, TaskId::from_u128(5));
        let next = log.read(None, Some(&page.cursor), 10).unwrap();
        assert!(!next.truncated);
        let other = Log::default();
        let stale = other.read(None, Some(&page.cursor), 10).unwrap();
        assert!(stale.truncated || other.epoch == log.epoch);
        assert!(matches!(
            log.read(None, Some("nonsense"), 10),
            Err(StoreError::InvalidCursor)
        ));
        let ahead = format!("m{:x}-{}", log.epoch, KEPT * 10);
        assert!(matches!(
            log.read(None, Some(&ahead), 10),
            Err(StoreError::InvalidCursor)
        ));
    }
}
