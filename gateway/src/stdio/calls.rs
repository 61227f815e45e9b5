//! The calls waiting on the child, by the id the bridge gave each.
//!
//! | Rule | Why |
//! |------|-----|
//! | every forwarded request gets a fresh id (a counter) | two clients may use the same id; answers must never cross |
//! | a progress token is replaced by that same id | tokens are the client's choice too; the child's progress finds its call by it |
//! | the answer goes through a oneshot, progress through a bounded queue that drops when full | a slow client loses progress lines, never its answer, and never stalls the reader |
//! | a call dropped before its answer (the client left, the task was cancelled, its time ran out) sends `notifications/cancelled` to the child | the tool stops instead of running for nobody |

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};

/// How many progress notifications may wait for a slow client.
pub(super) const NOTES: usize = 64;

/// A call waiting on the child.
pub(super) struct Waiter {
    /// The client's id (JSON text), put back on the answer.
    pub client_id: String,
    /// The client's progress token (JSON text), put back on progress.
    pub token: Option<String>,
    /// The session the call came in (2025-11-25 and older).
    pub session: Option<String>,
    /// The call speaks 2026-07-28: its results need a `resultType`.
    pub modern: bool,
    /// Its result is a 2026-07-28 `CacheableResult` (`tools/list`, ...),
    /// which needs the cache hints.
    pub cacheable: bool,
    /// The client capabilities the call's client declared (2026-07-28:
    /// `elicitation`, `sampling`, `roots`), which say what it can answer.
    pub declared: Vec<String>,
    pub notes: mpsc::Sender<Bytes>,
    pub answer: oneshot::Sender<Bytes>,
}

/// The table, and where the cancels go.
pub(super) struct Calls {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    waiting: HashMap<u64, Waiter>,
    /// The child is gone: no call may wait on it until one runs again.
    closed: bool,
}

impl Calls {
    pub(super) fn new() -> Self {
        Self {
            // Id 0 is the bridge's own `initialize`.
            table: Mutex::new(Table {
                next: 1,
                waiting: HashMap::new(),
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding it leaves the table as consistent as any
        // single insert or remove does.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Files `waiter` under a fresh id; while the child is gone, the
    /// waiter comes back.
    pub(super) fn add(&self, waiter: Waiter) -> Result<u64, Waiter> {
        let mut table = self.lock();
        if table.closed {
            return Err(waiter);
        }
        let id = table.next;
        table.next += 1;
        table.waiting.insert(id, waiter);
        Ok(id)
    }

    /// The waiter of `id`, taken out: its answer came, or it gave up.
    pub(super) fn take(&self, id: u64) -> Option<Waiter> {
        self.lock().waiting.remove(&id)
    }

    /// Files `waiter` under `id` again: a call that waited for its client's
    /// input is waited on anew. While the child is gone the waiter comes
    /// back.
    pub(super) fn put(&self, id: u64, waiter: Waiter) -> Result<(), Waiter> {
        let mut table = self.lock();
        if table.closed {
            return Err(waiter);
        }
        table.waiting.insert(id, waiter);
        Ok(())
    }

    /// The one call waiting, when there is exactly one.
    pub(super) fn single(&self) -> Option<u64> {
        let table = self.lock();
        let mut ids = table.waiting.keys();
        match (ids.next(), ids.next()) {
            (Some(id), None) => Some(*id),
            _ => None,
        }
    }

    /// Runs `with` on the waiter of `id`, left in place.
    pub(super) fn with<T>(&self, id: u64, with: impl FnOnce(&Waiter) -> T) -> Option<T> {
        self.lock().waiting.get(&id).map(with)
    }

    /// The id the bridge gave the call `client_id` of `session`.
    pub(super) fn find(&self, session: Option<&str>, client_id: &str) -> Option<u64> {
        let table = self.lock();
        let mut found = table.waiting.iter().filter(|(_, waiter)| {
            waiter.session.as_deref() == session && waiter.client_id == client_id
        });
        let (id, _) = found.next()?;
        // Two stateless clients may share an id: then neither is cancelled.
        found.next().is_none().then_some(*id)
    }

    /// Every waiter, taken out, and no more until [`Self::reopen`]: the
    /// child is gone.
    pub(super) fn drain(&self) -> Vec<Waiter> {
        let mut table = self.lock();
        table.closed = true;
        table.waiting.drain().map(|(_, waiter)| waiter).collect()
    }

    /// Takes calls again: a child runs.
    pub(super) fn reopen(&self) {
        self.lock().closed = false;
    }

    /// How many calls wait.
    pub(super) fn len(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// Held by the caller while its call waits: dropped before the answer came,
/// it takes the call out and tells the child to stop it.
pub(super) struct Pending {
    pub calls: Arc<Calls>,
    pub to_child: mpsc::Sender<Bytes>,
    pub id: u64,
    pub answered: bool,
    /// Why the call is cancelled, if it is dropped unanswered.
    pub reason: &'static str,
    /// The call's place among those in flight.
    pub _slot: OwnedSemaphorePermit,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.answered || self.calls.take(self.id).is_none() {
            return;
        }
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{},"reason":{}}}}}"#,
            self.id,
            serde_json::to_string(self.reason).unwrap_or_default()
        );
        // A full queue means a child that stopped reading: it gets no cancel.
        if self.to_child.try_send(Bytes::from(cancel)).is_ok() {
            tracing::debug!(
                id = self.id,
                "notifications/cancelled sent to the stdio server"
            );
        }
    }
}
