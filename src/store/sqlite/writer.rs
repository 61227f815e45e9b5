//! The writer thread: the one connection that writes, fed by a queue of
//! jobs, committing them in groups.
//!
//! | Rule                                                              | Why                                                                |
//! |-------------------------------------------------------------------|--------------------------------------------------------------------|
//! | one `std::thread` owns the write connection                       | SQLite calls block; none may run on the async runtime              |
//! | it takes every job waiting, up to [`GROUP`], into one transaction | one commit (one fsync with `FULL`) for the group, not per job      |
//! | each job runs in its own `SAVEPOINT`                              | a job's error (a quota, a refused transition) undoes only that job |
//! | a job is answered only after the transaction committed            | `create` resolves once the task is durable and readable            |
//! | a failed commit answers every job of the group with the error     | nothing a caller was told happened was lost                        |
//! | effects (stop signals, change feed) follow the commit             | nothing is announced or stopped by a write that did not happen     |
//!
//! The queue is bounded ([`QUEUE`]): when the disk is slower than the
//! callers, they wait for room on the async side instead of growing memory.
//! The thread ends when every sender is gone (the store was dropped) or on
//! [`Writer::close`]; its connection closes with it.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::backend;
use super::shared::{Effect, Shared};
use crate::store::StoreError;
use crate::task::Timestamp;

/// The most jobs one transaction commits.
pub(super) const GROUP: usize = 256;

/// The most jobs waiting for the writer.
const QUEUE: usize = 4 * GROUP;

/// What a job sees while it runs: the connection inside its savepoint, the
/// time, and where its effects go.
pub(super) struct Step<'a> {
    pub(super) conn: &'a Connection,
    pub(super) now: Timestamp,
    pub(super) shared: &'a Shared,
    effects: Vec<Effect>,
}

impl Step<'_> {
    /// Records what this process must do once the job's write committed.
    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }
}

/// A queued job, its outcome kept until the commit decides it.
trait Pending: Send {
    /// Runs the job; whether it succeeded (and its savepoint is kept).
    fn run(&mut self, step: &mut Step<'_>) -> bool;
    /// Answers the caller: its outcome, or why the group did not commit.
    fn answer(self: Box<Self>, commit: Result<(), &str>);
}

struct Job<T, F> {
    work: Option<F>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Pending for Job<T, F>
where
    T: Send,
    F: FnOnce(&mut Step<'_>) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, step: &mut Step<'_>) -> bool {
        let outcome = match self.work.take() {
            Some(work) => work(step),
            None => Err(StoreError::backend("a store job ran twice")),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn answer(self: Box<Self>, commit: Result<(), &str>) {
        let outcome = match (commit, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(StoreError::backend("a store job did not run")),
            (Err(why), _) => Err(StoreError::backend(format!(
                "the SQLite task store did not commit: {why}"
            ))),
        };
        // A caller that went away does not need its answer.
        let _ = self.reply.send(outcome);
    }
}

enum Message {
    Job(Box<dyn Pending>),
    Close(oneshot::Sender<()>),
}

/// The async side's handle on the writer thread.
pub(super) struct Writer {
    jobs: mpsc::Sender<Message>,
}

fn closed() -> StoreError {
    StoreError::backend("the SQLite task store is closed")
}

impl Writer {
    /// Starts the thread that owns `conn`.
    pub(super) fn start(
        conn: Connection,
        shared: std::sync::Arc<Shared>,
        path: &Path,
    ) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("mcp-tasks-sqlite-writer".into())
            .spawn(move || serve(conn, queue, &shared))
            .map_err(|e| {
                StoreError::backend(format!(
                    "{}: cannot start the writer thread: {e}",
                    path.display()
                ))
            })?;
        Ok(Self { jobs })
    }

    /// Runs `work` in the next group transaction; its outcome once that
    /// committed.
    pub(super) async fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Step<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            work: Some(work),
            outcome: None,
            reply,
        };
        self.jobs
            .send(Message::Job(Box::new(job)))
            .await
            .map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    /// Whether the thread has ended ([`close`](Self::close)).
    pub(super) fn is_closed(&self) -> bool {
        self.jobs.is_closed()
    }

    /// Commits what is queued before it, then ends the thread and closes
    /// its connection; resolves once it is closed.
    pub(super) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.jobs.send(Message::Close(done)).await.is_ok() {
            // An error: the thread is gone already, so is its connection.
            let _ = closed.await;
        }
    }
}

/// The thread's loop: a group per wake-up, until the queue closes.
fn serve(mut conn: Connection, mut queue: mpsc::Receiver<Message>, shared: &Shared) {
    let mut group: Vec<Box<dyn Pending>> = Vec::with_capacity(GROUP);
    let mut close = None;
    while let Some(first) = queue.blocking_recv() {
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Job(job) => group.push(job),
                Message::Close(done) => {
                    close = Some(done);
                    break;
                }
            }
            if group.len() < GROUP {
                next = queue.try_recv().ok();
            }
        }
        if !group.is_empty() {
            commit(&mut conn, &mut group, shared);
        }
        if close.is_some() {
            break;
        }
    }
    queue.close();
    drop(conn);
    if let Some(done) = close {
        let _ = done.send(());
    }
}

/// Runs `group` in one transaction, a savepoint per job, and answers it.
fn commit(conn: &mut Connection, group: &mut Vec<Box<dyn Pending>>, shared: &Shared) {
    let mut effects = Vec::new();
    match run_group(conn, group, shared, &mut effects) {
        Ok(()) => {
            shared.apply(effects);
            for job in group.drain(..) {
                job.answer(Ok(()));
            }
        }
        Err(error) => {
            let why = error.to_string();
            for job in group.drain(..) {
                job.answer(Err(&why));
            }
        }
    }
}

fn run_group(
    conn: &mut Connection,
    group: &mut [Box<dyn Pending>],
    shared: &Shared,
    effects: &mut Vec<Effect>,
) -> Result<(), StoreError> {
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    for job in group.iter_mut() {
        let savepoint = tx.savepoint().map_err(backend)?;
        let mut step = Step {
            conn: &savepoint,
            now: Timestamp::now(),
            shared,
            effects: Vec::new(),
        };
        if job.run(&mut step) {
            let kept = step.effects;
            savepoint.commit().map_err(backend)?;
            effects.extend(kept);
        } else {
            let mut savepoint = savepoint;
            savepoint.rollback().map_err(backend)?;
            // Released: nothing of the job is left in the transaction.
            savepoint.commit().map_err(backend)?;
        }
    }
    tx.commit().map_err(backend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::TempFile;
    use crate::store::sqlite::{Synchronous, schema};

    /// A job that inserts a row named `id`, then fails if `fail`.
    fn insert(
        id: &'static str,
        fail: bool,
    ) -> (Box<dyn Pending>, oneshot::Receiver<Result<(), StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let work = move |step: &mut Step<'_>| {
            step.conn
                .execute(
                    "INSERT INTO tasks (id, status, created_at, updated_at) VALUES (?1, 'working', 0, 0)",
                    [id],
                )
                .map_err(backend)?;
            step.effect(Effect::Changed(1));
            if fail {
                return Err(StoreError::NotFound);
            }
            Ok(())
        };
        let job = Job {
            work: Some(work),
            outcome: None,
            reply,
        };
        (Box::new(job), answer)
    }

    #[test]
    fn one_jobs_error_undoes_only_that_job_and_the_group_commits_once() {
        let file = TempFile::new();
        let mut conn = schema::open_writer(file.path(), Synchronous::Normal).unwrap();
        let shared = Shared::default();
        let mut feed = shared.subscribe();
        let (first, first_answer) = insert("a", false);
        let (second, mut second_answer) = insert("b", true);
        let (third, mut third_answer) = insert("c", false);
        let mut group = vec![first, second, third];
        commit(&mut conn, &mut group, &shared);
        assert!(group.is_empty(), "every job was answered");
        assert!(matches!(first_answer.blocking_recv(), Ok(Ok(()))));
        assert!(matches!(
            second_answer.try_recv(),
            Ok(Err(StoreError::NotFound))
        ));
        assert!(matches!(third_answer.try_recv(), Ok(Ok(()))));
        let mut ids = conn.prepare("SELECT id FROM tasks ORDER BY id").unwrap();
        let ids: Vec<String> = ids
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            ids,
            ["a", "c"],
            "the failed job's row was rolled back, its neighbours' kept"
        );
        let mut announced = 0;
        while feed.try_recv().is_ok() {
            announced += 1;
        }
        assert_eq!(announced, 2, "the failed job's effects were dropped");
    }
}
