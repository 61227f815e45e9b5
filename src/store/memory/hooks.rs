//! The memory store's webhook subscriptions.
//!
//! | Operation | What it does | Cost |
//! |-----------|--------------|------|
//! | `put` | refreshes a live subscription of the same id (secret, expiry; its cursor kept), or stores a new one within the caps | O(n): lapsed ones are dropped first |
//! | `remove` | removes the owner's subscription | O(1) |
//! | `live` | every subscription not lapsed | O(n) |
//! | `advance` | moves a cursor if it is where the caller saw it | O(1) |

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::{Hook, QuotaScope, StoreError};
use crate::task::Timestamp;

#[derive(Default)]
pub(super) struct Hooks {
    inner: Mutex<HashMap<String, Hook>>,
}

fn lapsed(hook: &Hook, now: Timestamp) -> bool {
    hook.expires_at.is_some_and(|at| at <= now)
}

impl Hooks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hook>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn put(&self, hook: Hook, per_owner: u32, total: u32) -> Result<Hook, StoreError> {
        let now = Timestamp::now();
        let mut hooks = self.lock();
        hooks.retain(|_, kept| !lapsed(kept, now));
        if let Some(kept) = hooks.get_mut(&hook.id) {
            kept.secret = hook.secret;
            kept.expires_at = hook.expires_at;
            return Ok(kept.clone());
        }
        let count = |owner: &Option<String>| hooks.values().filter(|h| h.owner == *owner).count();
        if hooks.len() >= total as usize {
            return Err(StoreError::QuotaExceeded(QuotaScope::Total));
        }
        if count(&hook.owner) >= per_owner as usize {
            return Err(StoreError::QuotaExceeded(QuotaScope::Owner));
        }
        hooks.insert(hook.id.clone(), hook.clone());
        Ok(hook)
    }

    pub(super) fn remove(&self, owner: Option<&str>, id: &str) -> bool {
        let now = Timestamp::now();
        let mut hooks = self.lock();
        match hooks.get(id) {
            Some(hook) if hook.owner.as_deref() == owner && !lapsed(hook, now) => {
                hooks.remove(id);
                true
            }
            _ => false,
        }
    }

    pub(super) fn live(&self) -> Vec<Hook> {
        let now = Timestamp::now();
        self.lock()
            .values()
            .filter(|hook| !lapsed(hook, now))
            .cloned()
            .collect()
    }

    pub(super) fn advance(&self, id: &str, from: &str, to: &str) -> bool {
        match self.lock().get_mut(id) {
            Some(hook) if hook.cursor == from => {
                hook.cursor = to.to_owned();
                true
            }
            _ => false,
        }
    }
}
