//! The file's webhook subscriptions (the `hooks` table): they outlive the
//! process, so a restarted server keeps delivering where it stopped.
//!
//! | Operation | What it does | How |
//! |-----------|--------------|-----|
//! | `put` | refreshes a live subscription of the same id (secret, expiry; its cursor kept), or stores a new one within the caps | a writer job: lapsed rows deleted, then an `UPDATE` or the counts and an `INSERT` |
//! | `remove` | removes the owner's live subscription | a writer job, `DELETE … WHERE owner IS ?` |
//! | `live` | every subscription not lapsed | a read beside the writer |
//! | `advance` | moves a cursor if it is where the caller saw it | a writer job, `UPDATE … WHERE cursor = ?` (compare-and-set) |
//!
//! One process holds the file at a time, so the delivery claim
//! ([`TaskStore::claim_hook`](crate::TaskStore::claim_hook)) is always this
//! process's: the trait's default.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::backend;
use super::row::to_sql;
use super::writer::Step;
use crate::store::{Hook, QuotaScope, StoreError};
use crate::task::Timestamp;

/// The columns [`decode`] reads, in its order.
const COLUMNS: &str = "id, owner, url, name, arguments, secret, expires_at, cursor";

/// Live at `?1` (ms).
const LIVE: &str = "(expires_at IS NULL OR expires_at > ?1)";

fn decode(row: &Row<'_>) -> rusqlite::Result<Hook> {
    let expires_at: Option<i64> = row.get(6)?;
    Ok(Hook {
        id: row.get(0)?,
        owner: row.get(1)?,
        url: row.get(2)?,
        name: row.get(3)?,
        arguments: row.get(4)?,
        secret: row.get(5)?,
        expires_at: expires_at.map(|at| Timestamp::from_millis(u64::try_from(at).unwrap_or(0))),
        cursor: row.get(7)?,
    })
}

/// [`TaskStore::put_hook`](crate::TaskStore::put_hook).
pub(super) fn put(
    step: &mut Step<'_>,
    hook: Hook,
    per_owner: u32,
    total: u32,
) -> Result<Hook, StoreError> {
    let now = to_sql(step.now.as_millis());
    let conn = step.conn;
    conn.execute(
        "DELETE FROM hooks WHERE expires_at IS NOT NULL AND expires_at <= ?1",
        [now],
    )
    .map_err(backend)?;
    let expires_at = hook.expires_at.map(|at| to_sql(at.as_millis()));
    let kept = conn
        .query_row(
            &format!(
                "UPDATE hooks SET secret = ?2, expires_at = ?3 WHERE id = ?1 RETURNING {COLUMNS}"
            ),
            params![hook.id, hook.secret, expires_at],
            decode,
        )
        .optional()
        .map_err(backend)?;
    if let Some(kept) = kept {
        return Ok(kept);
    }
    let (all, owned): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(*) FILTER (WHERE owner IS ?1) FROM hooks",
            params![hook.owner],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(backend)?;
    if all >= i64::from(total) {
        return Err(StoreError::QuotaExceeded(QuotaScope::Total));
    }
    if owned >= i64::from(per_owner) {
        return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
    }
    conn.execute(
        &format!("INSERT INTO hooks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            hook.id,
            hook.owner,
            hook.url,
            hook.name,
            hook.arguments,
            hook.secret,
            expires_at,
            hook.cursor
        ],
    )
    .map_err(backend)?;
    Ok(hook)
}

/// [`TaskStore::remove_hook`](crate::TaskStore::remove_hook).
pub(super) fn remove(
    step: &mut Step<'_>,
    owner: Option<&str>,
    id: &str,
) -> Result<bool, StoreError> {
    let removed = step
        .conn
        .execute(
            &format!("DELETE FROM hooks WHERE id = ?2 AND owner IS ?3 AND {LIVE}"),
            params![to_sql(step.now.as_millis()), id, owner],
        )
        .map_err(backend)?;
    Ok(removed > 0)
}

/// [`TaskStore::hooks`](crate::TaskStore::hooks).
pub(super) fn live(conn: &Connection) -> Result<Vec<Hook>, StoreError> {
    let now = to_sql(Timestamp::now().as_millis());
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM hooks WHERE {LIVE} ORDER BY id"
        ))
        .map_err(backend)?;
    statement
        .query_map([now], decode)
        .and_then(Iterator::collect)
        .map_err(backend)
}

/// [`TaskStore::advance_hook`](crate::TaskStore::advance_hook).
pub(super) fn advance(
    step: &mut Step<'_>,
    id: &str,
    from: &str,
    to: &str,
) -> Result<bool, StoreError> {
    let moved = step
        .conn
        .execute(
            "UPDATE hooks SET cursor = ?3 WHERE id = ?1 AND cursor = ?2",
            params![id, from, to],
        )
        .map_err(backend)?;
    Ok(moved > 0)
}
