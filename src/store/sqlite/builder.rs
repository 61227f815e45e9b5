//! [`SqliteTaskStoreBuilder`]: where the file is and how hard a commit
//! holds, and opening it.

use std::path::PathBuf;
use std::sync::Arc;

use super::read::Readers;
use super::shared::Shared;
use super::sync::Synchronous;
use super::writer::Writer;
use super::{Inner, SqliteTaskStore, recover, schema};
use crate::store::StoreError;

/// Settings of a [`SqliteTaskStore`] before its file is opened.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp_tasks::StoreError> {
/// use mcp_tasks::store::{SqliteTaskStore, Synchronous};
///
/// let path = std::env::temp_dir().join(format!(
///     "mcp-tasks-doc-builder-{}.db",
///     mcp_tasks::TaskId::generate().unwrap()
/// ));
/// let store = SqliteTaskStore::builder(&path)
///     .synchronous(Synchronous::Full)
///     .open()
///     .await?;
/// assert_eq!(store.path(), path.as_path());
/// store.close().await;
/// # for suffix in ["", "-wal", "-shm"] {
/// #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
/// # }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct SqliteTaskStoreBuilder {
    path: PathBuf,
    synchronous: Synchronous,
}

impl SqliteTaskStoreBuilder {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            synchronous: Synchronous::default(),
        }
    }

    /// How far a commit survives (default [`Synchronous::Normal`]).
    pub fn synchronous(mut self, level: Synchronous) -> Self {
        self.synchronous = level;
        self
    }

    /// Opens the file (creating it and its schema if needed) off the async
    /// runtime, switches it to WAL, checks its schema version, and starts
    /// the writer thread and the reaper; must run inside a Tokio runtime.
    ///
    /// Fails with [`StoreError::Backend`] when the file cannot be opened,
    /// is not a task file, or was written by a newer schema version.
    pub async fn open(self) -> Result<SqliteTaskStore, StoreError> {
        let Self { path, synchronous } = self;
        let opening = path.clone();
        let (conn, lock, orphans) = tokio::task::spawn_blocking(move || {
            let lock = recover::hold(&opening)?;
            let conn = schema::open_writer(&opening, synchronous)?;
            let orphans = recover::recover(&conn)?;
            Ok::<_, StoreError>((conn, lock, orphans))
        })
        .await
        .map_err(|e| StoreError::Backend(Box::new(e)))??;
        let shared = Arc::new(Shared::default());
        let writer = Writer::start(conn, Arc::clone(&shared), &path)?;
        let store = SqliteTaskStore {
            inner: Arc::new(Inner {
                readers: Arc::new(Readers::new(path.clone())),
                path,
                writer,
                shared,
                reaper: std::sync::Mutex::new(None),
                lock: std::sync::Mutex::new(Some(lock)),
                orphans: std::sync::Mutex::new(orphans),
            }),
        };
        // Rows of an earlier process may be due already.
        store.ensure_reaper();
        Ok(store)
    }
}
