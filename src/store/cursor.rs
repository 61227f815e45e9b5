//! [`ListCursor`]: where the next page of one owner's tasks starts, shared by
//! every store.

use std::fmt;

use super::StoreError;
use crate::task::{TaskId, Timestamp};

/// The largest page a listing returns.
pub(crate) const MAX_PAGE: usize = 1000;

/// Where the next page of an owner's task listing starts: just after the task
/// created at `created` with id `id` (tasks are listed by creation time, then
/// id).
///
/// Its text form (`Display` / [`parse`](Self::parse)), `<created ms>-<id>`, is
/// opaque to clients and safe to hand out as a `nextCursor`: it names a task
/// the owner may see. A cursor stays valid when the task it names is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListCursor {
    pub(crate) created: Timestamp,
    pub(crate) id: TaskId,
}

impl ListCursor {
    /// Reads the text form; `None` for anything a store did not write.
    pub fn parse(text: &str) -> Option<Self> {
        let (created, id) = text.split_once('-')?;
        let valid = !created.is_empty() && created.bytes().all(|b| b.is_ascii_digit());
        Some(Self {
            created: Timestamp::from_millis(created.parse().ok().filter(|_| valid)?),
            id: TaskId::parse(id)?,
        })
    }

    /// A listing's `cursor` parameter: none, or one this store gave out
    /// ([`StoreError::InvalidCursor`] otherwise).
    pub(crate) fn param(cursor: Option<&str>) -> Result<Option<Self>, StoreError> {
        cursor
            .map(|text| Self::parse(text).ok_or(StoreError::InvalidCursor))
            .transpose()
    }

    /// The cursor just after the task created at `created` with id `id`:
    /// what a listing gives as its next cursor when that task ends its
    /// page, so that a reader that keeps only part of a page (a filter
    /// with enough rows) can go on from the last task it kept.
    pub fn after(created: Timestamp, id: TaskId) -> Self {
        Self { created, id }
    }

    /// The position in creation order: `(created ms, id)`.
    pub(crate) fn key(self) -> (u64, u128) {
        (self.created.as_millis(), self.id.as_u128())
    }
}

impl fmt::Display for ListCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.created.as_millis(), self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_foreign_text() {
        let cursor = ListCursor {
            created: Timestamp::from_millis(1_764_400_225_123),
            id: TaskId::generate().unwrap(),
        };
        assert_eq!(ListCursor::parse(&cursor.to_string()), Some(cursor));
        for bad in [
            "",
            "-",
            "12-",
            "x-0123",
            "+1-00000000000000000000000000000000",
            "1-0000000000000000000000000000000G",
            "1-00000000000000000000000000000000-",
            "99999999999999999999999-00000000000000000000000000000000",
        ] {
            assert_eq!(ListCursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn cursors_order_by_creation_time_then_id() {
        let at = |ms, id| ListCursor::after(Timestamp::from_millis(ms), TaskId::from_u128(id));
        assert!(at(1, u128::MAX) < at(2, 0));
        assert!(at(2, 1) < at(2, 2));
        assert_eq!(at(5, 7).key(), (5, 7));
    }
}
