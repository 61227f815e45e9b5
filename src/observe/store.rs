//! The task store with each operation timed and its failures counted
//! (`mcp_tasks_store_seconds`, `mcp_tasks_store_errors_total`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::value::RawValue;

use super::metrics as m;
use crate::store::{
    AdminPage, AdminTask, CancelOutcome, CreatedTask, InputProgress, InputRound, NewTask,
    StoreError, StoreFuture, TaskCounts, TaskList, TaskStore,
};
use crate::task::{TaskId, TaskSnapshot};

/// A store whose operations are measured; what the layer uses.
pub(crate) struct Measured(pub Arc<dyn TaskStore>);

/// `future`, timed under `op`; a backend failure is counted.
fn timed<'a, T: Send + 'a>(op: &'static str, future: StoreFuture<'a, T>) -> StoreFuture<'a, T> {
    Box::pin(async move {
        let started = Instant::now();
        let result = future.await;
        metrics::histogram!(m::STORE, "op" => op).record(started.elapsed().as_secs_f64());
        if let Err(StoreError::Backend(_)) = &result {
            metrics::counter!(m::STORE_ERRORS, "op" => op).increment(1);
        }
        result
    })
}

impl TaskStore for Measured {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        timed("create", self.0.create(task))
    }

    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        timed("get", self.0.get(id, owner))
    }

    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        timed("set_status_message", self.0.set_status_message(id, message))
    }

    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        timed("complete", self.0.complete(id, result))
    }

    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        timed("fail", self.0.fail(id, error))
    }

    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        timed("cancel", self.0.cancel(id, owner))
    }

    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        timed("require_input", self.0.require_input(id, round))
    }

    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        timed("answer_input", self.0.answer_input(id, owner, answers))
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        timed("list", self.0.list(owner, cursor, limit))
    }

    // The operator's methods are rare and not the service's latency: passed
    // through untimed.
    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        self.0.admin_list(cursor, limit)
    }

    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        self.0.admin_counts()
    }

    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        self.0.admin_cancel(id)
    }

    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        self.0.admin_get(id)
    }

    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        self.0.admin_delete(id)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<crate::store::TaskChange>> {
        self.0.changes()
    }

    fn listen(&self, owner: Option<&str>) -> Option<crate::store::Listening> {
        self.0.listen(owner)
    }

    fn listen_all(&self) -> Option<crate::store::Listening> {
        self.0.listen_all()
    }

    fn release(&self) -> StoreFuture<'_, ()> {
        self.0.release()
    }

    fn orphans_held(&self) -> usize {
        self.0.orphans_held()
    }

    fn orphan_signal(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        self.0.orphan_signal()
    }

    fn keeps_reruns(&self) -> bool {
        self.0.keeps_reruns()
    }

    fn orphans(&self) -> StoreFuture<'_, Vec<crate::store::Orphan>> {
        self.0.orphans()
    }

    fn count_attempt(&self, id: TaskId, why: String) -> StoreFuture<'_, Option<(u32, u32)>> {
        self.0.count_attempt(id, why)
    }

    fn status_events<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, crate::store::EventPage> {
        timed("status_events", self.0.status_events(owner, after, limit))
    }

    fn put_hook(
        &self,
        hook: crate::store::Hook,
        per_owner: u32,
        total: u32,
    ) -> StoreFuture<'_, crate::store::Hook> {
        timed("put_hook", self.0.put_hook(hook, per_owner, total))
    }

    fn remove_hook<'a>(&'a self, owner: Option<&'a str>, id: &'a str) -> StoreFuture<'a, bool> {
        timed("remove_hook", self.0.remove_hook(owner, id))
    }

    fn hooks(&self) -> StoreFuture<'_, Vec<crate::store::Hook>> {
        timed("hooks", self.0.hooks())
    }

    fn advance_hook<'a>(
        &'a self,
        id: &'a str,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, bool> {
        timed("advance_hook", self.0.advance_hook(id, from, to))
    }

    fn claim_hook<'a>(&'a self, id: &'a str, lease: std::time::Duration) -> StoreFuture<'a, bool> {
        timed("claim_hook", self.0.claim_hook(id, lease))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryTaskStore;

    /// A store that says no to every claim, and answers its own log.
    struct Refusing(MemoryTaskStore);

    impl TaskStore for Refusing {
        fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
            self.0.create(task)
        }
        fn get<'a>(
            &'a self,
            id: TaskId,
            owner: Option<&'a str>,
        ) -> StoreFuture<'a, Option<TaskSnapshot>> {
            self.0.get(id, owner)
        }
        fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
            self.0.set_status_message(id, message)
        }
        fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
            self.0.complete(id, result)
        }
        fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
            self.0.fail(id, error)
        }
        fn cancel<'a>(
            &'a self,
            id: TaskId,
            owner: Option<&'a str>,
        ) -> StoreFuture<'a, Option<CancelOutcome>> {
            self.0.cancel(id, owner)
        }
        fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
            self.0.require_input(id, round)
        }
        fn answer_input<'a>(
            &'a self,
            id: TaskId,
            owner: Option<&'a str>,
            answers: Vec<(String, Box<RawValue>)>,
        ) -> StoreFuture<'a, Option<InputProgress>> {
            self.0.answer_input(id, owner, answers)
        }
        fn list<'a>(
            &'a self,
            owner: Option<&'a str>,
            cursor: Option<&'a str>,
            limit: usize,
        ) -> StoreFuture<'a, TaskList> {
            self.0.list(owner, cursor, limit)
        }
        fn status_events<'a>(
            &'a self,
            owner: Option<&'a str>,
            after: Option<&'a str>,
            limit: usize,
        ) -> StoreFuture<'a, crate::store::EventPage> {
            self.0.status_events(owner, after, limit)
        }
        fn claim_hook<'a>(
            &'a self,
            _id: &'a str,
            _lease: std::time::Duration,
        ) -> StoreFuture<'a, bool> {
            Box::pin(async { Ok(false) })
        }
        fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
            self.0.admin_get(id)
        }
        fn listen_all(&self) -> Option<crate::store::Listening> {
            Some(crate::store::Listening::new(()))
        }
    }

    /// The events methods reach the store behind: a default answer here
    /// would let two instances deliver one subscription's events. So do
    /// the operator's `admin_get` and `listen_all`: a default answer there
    /// would leave a console without tasks or, over Redis, deaf to most of
    /// them.
    #[tokio::test]
    async fn the_events_and_the_operators_methods_reach_the_store_behind() {
        let measured = Measured(Arc::new(Refusing(MemoryTaskStore::new())));
        let lease = std::time::Duration::from_secs(1);
        assert!(!measured.claim_hook("sub_x", lease).await.unwrap());
        assert!(measured.status_events(None, None, 10).await.is_ok());
        let unknown = TaskId::generate().unwrap();
        assert!(matches!(measured.admin_get(unknown).await, Ok(None)));
        assert!(measured.listen_all().is_some());
    }
}
