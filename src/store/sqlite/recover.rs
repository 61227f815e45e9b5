//! Opening a file that a stopped process held: one process a file, and
//! what becomes of the tasks it left running.
//!
//! | Rule                                                                  | Why                                                          |
//! |-----------------------------------------------------------------------|--------------------------------------------------------------|
//! | one process holds the file at a time (an OS lock on it, kept while the store lives; a second open fails at once) | the tasks `working` in the file at open are then exactly those of a process that stopped |
//! | at open, every live `working` task is `failed` (`-32603`, saying the server stopped while it ran) | nothing else would ever end it: no task stays `working` forever |
//! | `input_required` and terminal tasks are kept as they are              | the first waits for its client, whose answer resumes it in this process; the others are done |
//!
//! The lock is the operating system's (`flock` on Unix), so it goes with the
//! process that held it, whether it exited, crashed or was killed.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use rusqlite::{Connection, params};

use super::backend;
use super::row::to_sql;
use crate::store::StoreError;
use crate::task::Timestamp;
use crate::wire::jsonrpc::{ErrorObject, INTERNAL_ERROR};

/// What a task left running by a stopped process reads as.
pub(super) const LOST: &str =
    "The server stopped while this task ran; its call did not finish and was not run again";

/// Takes the file's lock for this process; refused at once when another
/// process (or another store in this one) holds it.
pub(super) fn hold(path: &Path) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::backend(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::backend(format!(
            "{} is in use by another task store (another process, or another store in this \
             one); a task file serves one process at a time",
            path.display()
        ))),
        Err(TryLockError::Error(e)) => Err(StoreError::backend(format!(
            "cannot lock {}: {e}",
            path.display()
        ))),
    }
}

/// Fails every live `working` task, as the file's previous process left
/// them; how many.
pub(super) fn fail_orphans(conn: &Connection) -> Result<usize, StoreError> {
    let now = to_sql(Timestamp::now().as_millis());
    let error = ErrorObject::new(INTERNAL_ERROR, LOST.to_owned()).to_raw();
    let failed = conn
        .execute(
            "UPDATE tasks SET status = 'failed', error = ?1, status_message = ?2, \
             updated_at = ?3 \
             WHERE status = 'working' AND (expires_at IS NULL OR expires_at > ?3)",
            params![error.get(), LOST, now],
        )
        .map_err(backend)?;
    if failed > 0 {
        tracing::warn!(
            failed,
            "tasks left running by the task file's previous process were failed"
        );
    }
    Ok(failed)
}
