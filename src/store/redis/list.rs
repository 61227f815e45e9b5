//! One owner's live tasks, a page at a time, from the owner index.

use std::fmt;

use super::scripts::{Keys, LIST, owner_args};
use super::{RedisTaskStore, backend, reply};
use crate::store::StoreError;
use crate::task::{TaskId, Timestamp};

/// Where the next page of [`RedisTaskStore::list_owned`] starts: just after
/// the task created at `created` with id `id`.
///
/// Its text form (`Display` / [`parse`](Self::parse)) is opaque to clients
/// and safe to hand out as a `nextCursor`: it names a task the owner may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListCursor {
    created: Timestamp,
    id: TaskId,
}

impl ListCursor {
    /// Reads the text form; `None` for anything this store did not write.
    pub fn parse(text: &str) -> Option<Self> {
        let (created, id) = text.split_once('-')?;
        let valid = !created.is_empty() && created.bytes().all(|b| b.is_ascii_digit());
        Some(Self {
            created: Timestamp::from_millis(created.parse().ok().filter(|_| valid)?),
            id: TaskId::parse(id)?,
        })
    }
}

impl fmt::Display for ListCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.created.as_millis(), self.id)
    }
}

/// A page of one owner's live task ids, oldest first.
#[derive(Clone, Debug, Default)]
pub struct TaskPage {
    /// Live (unexpired) task ids of the owner, in creation order.
    pub ids: Vec<TaskId>,
    /// Where the next page starts; `None` when the index is exhausted.
    pub next: Option<ListCursor>,
}

/// The most index entries one page may inspect beyond `limit`.
const SLACK: usize = 64;
/// The largest page.
pub(super) const MAX_PAGE: usize = 1000;

impl RedisTaskStore {
    /// Lists the live tasks of `owner` (exactly that owner: `None` lists
    /// unowned tasks only), `limit` at most (clamped to 1..=1000), starting
    /// after `after`.
    ///
    /// One script call over the owner's sorted set: O(log n + k) for k
    /// inspected entries. Entries whose task expired are skipped and removed
    /// from the index on the way; at most `4 × limit + 64` entries are
    /// inspected per call, so a page may hold fewer than `limit` ids while
    /// `next` is still set. Another owner's task is never listed: each entry
    /// is checked against the task's own owner field too.
    pub async fn list_owned(
        &self,
        owner: Option<&str>,
        after: Option<ListCursor>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let keys: &Keys = &self.inner.keys;
        let (score, id) = match after {
            Some(cursor) => (
                cursor.created.as_millis().to_string(),
                cursor.id.to_string(),
            ),
            None => (String::new(), String::new()),
        };
        let [has_owner, owner_text] = owner_args(owner);
        let mut call = LIST.key(keys.index(owner));
        call.arg(keys.task_head())
            .arg(Keys::TASK_TAIL)
            .arg(has_owner)
            .arg(owner_text)
            .arg(score)
            .arg(id)
            .arg(limit)
            .arg(limit * 4 + SLACK);
        let mut conn = self.inner.conn.clone();
        let reply: redis::Value = call.invoke_async(&mut conn).await.map_err(backend)?;
        let mut items = reply::items(reply)?.into_iter();
        let more = reply::required(items.next(), "list flag")? == "1";
        let last_score = reply::text(items.next().unwrap_or(redis::Value::Nil))?;
        let last_id = reply::text(items.next().unwrap_or(redis::Value::Nil))?;
        let ids = items
            .map(|item| {
                reply::text(item)?
                    .as_deref()
                    .and_then(TaskId::parse)
                    .ok_or_else(|| reply::corrupt("an index entry"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let next = match (more, last_score, last_id) {
            (true, Some(score), Some(id)) => Some(ListCursor {
                created: Timestamp::from_millis(
                    score
                        .parse()
                        .map_err(|_| reply::corrupt("an index score"))?,
                ),
                id: TaskId::parse(&id).ok_or_else(|| reply::corrupt("an index entry"))?,
            }),
            _ => None,
        };
        Ok(TaskPage { ids, next })
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
        ] {
            assert_eq!(ListCursor::parse(bad), None, "{bad}");
        }
    }
}
