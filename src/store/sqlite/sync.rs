//! [`Synchronous`]: how far a committed task survives.

/// How far a committed task survives: SQLite's `PRAGMA synchronous`, in WAL
/// journal mode.
///
/// | Level              | Survives                                        | Costs                                   |
/// |--------------------|-------------------------------------------------|-----------------------------------------|
/// | `Normal` (default) | the process dying, `kill -9` included           | an fsync per WAL checkpoint, not per commit |
/// | `Full`             | also a power loss or an operating-system crash  | an fsync of the WAL per commit group    |
///
/// With `Normal`, a commit is in the operating system's hands when `create`
/// resolves: the process may die at any point after and the task is in the
/// file. A power cut may lose the last commits (never corrupt the file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// `synchronous = NORMAL`: durable across process crashes.
    #[default]
    Normal,
    /// `synchronous = FULL`: durable across power loss and OS crashes too,
    /// at an fsync per commit group (the writer commits up to 256 waiting
    /// writes together).
    Full,
}

impl Synchronous {
    /// The value of SQLite's `PRAGMA synchronous` for this level.
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }
}
