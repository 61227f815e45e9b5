//! The Lua scripts that make every transition atomic, and the key names they
//! work on.
//!
//! Each script is the shared prelude (`lua/prelude.lua`: ownership check,
//! snapshot) followed by its own body. [`Script`] runs them by `EVALSHA` and
//! loads them on `NOSCRIPT`, so a restarted or flushed server costs one
//! extra round trip, once per script.

use std::sync::LazyLock;

use redis::Script;

use crate::task::TaskId;

macro_rules! script {
    ($file:literal) => {
        LazyLock::new(|| {
            Script::new(concat!(
                include_str!("lua/prelude.lua"),
                "\n",
                include_str!($file)
            ))
        })
    };
}

pub(super) static CREATE: LazyLock<Script> = script!("lua/create.lua");
pub(super) static GET: LazyLock<Script> = script!("lua/get.lua");
pub(super) static SET_MESSAGE: LazyLock<Script> = script!("lua/set_message.lua");
pub(super) static FINISH: LazyLock<Script> = script!("lua/finish.lua");
pub(super) static CANCEL: LazyLock<Script> = script!("lua/cancel.lua");
pub(super) static REQUIRE_INPUT: LazyLock<Script> = script!("lua/require_input.lua");
pub(super) static ANSWER_INPUT: LazyLock<Script> = script!("lua/answer_input.lua");
pub(super) static LIST: LazyLock<Script> = script!("lua/list.lua");
pub(super) static SNAPSHOTS: LazyLock<Script> = script!("lua/snapshots.lua");
pub(super) static SWEEP: LazyLock<Script> = script!("lua/sweep.lua");
pub(super) static RENEW: LazyLock<Script> = script!("lua/renew.lua");
pub(super) static COUNT_ATTEMPT: LazyLock<Script> = script!("lua/count_attempt.lua");
pub(super) static DELETE: LazyLock<Script> = script!("lua/delete.lua");
pub(super) static OWNER_STATUS: LazyLock<Script> = script!("lua/owner_status.lua");
pub(super) static ORPHAN: LazyLock<Script> = script!("lua/orphan.lua");
pub(super) static EVENTS: LazyLock<Script> = script!("lua/events.lua");
pub(super) static HOOK_PUT: LazyLock<Script> = script!("lua/hook_put.lua");
pub(super) static HOOK_REMOVE: LazyLock<Script> = script!("lua/hook_remove.lua");
pub(super) static HOOK_LIST: LazyLock<Script> = script!("lua/hook_list.lua");
pub(super) static HOOK_ADVANCE: LazyLock<Script> = script!("lua/hook_advance.lua");
pub(super) static HOOK_CLAIM: LazyLock<Script> = script!("lua/hook_claim.lua");

/// Key and channel names of one shard (see the module docs for the table).
/// Every name starts with the shard's hash tag (`{<prefix>}`, or
/// `{<prefix>:s<k>}` with several shards), so all of a shard's keys share
/// one Redis Cluster slot and every script's keys, the ones it builds from
/// stored ids included, are on one node.
#[derive(Debug)]
pub(super) struct Keys {
    prefix: String,
    /// `{<prefix>}`: what every name starts with.
    base: String,
    /// The two channels as the scripts take them: marked `#` for sharded
    /// pub/sub on a Redis Cluster (`announce` in `lua/prelude.lua`). Built
    /// once: every write passes one.
    ended_arg: String,
    changed_arg: String,
}

impl Keys {
    /// The names under `base`, a hash tag, for a store under `prefix`;
    /// `sharded` announces with `SPUBLISH` (a Redis Cluster).
    pub(super) fn new(prefix: String, base: String, sharded: bool) -> Self {
        let mark = if sharded { "#" } else { "" };
        Self {
            ended_arg: format!("{mark}{base}:ended"),
            changed_arg: format!("{mark}{base}:changed"),
            prefix,
            base,
        }
    }

    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hash tag every key and channel name of the shard starts with.
    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// `{<prefix>}:task:<id>`: the task hash.
    pub(super) fn task(&self, id: TaskId) -> String {
        format!("{}{id}", self.task_head())
    }

    /// `{<prefix>}:round:<id>`: the open input round of a task.
    pub(super) fn round(&self, id: TaskId) -> String {
        format!("{}{id}", self.round_head())
    }

    /// What precedes the id in a round key.
    pub(super) fn round_head(&self) -> String {
        format!("{}:round:", self.base)
    }

    /// `{<prefix>}:meta`: the key layout's version (field `v`).
    pub(super) fn meta(&self) -> String {
        format!("{}:meta", self.base)
    }

    /// `{<prefix>}:migrating`: held by the instance that moves layout-1 keys.
    pub(super) fn migrating(&self) -> String {
        format!("{}:migrating", self.base)
    }

    /// `{<prefix>}:instances`: the ids of the registered instances.
    pub(super) fn instances(&self) -> String {
        format!("{}:instances", self.base)
    }

    /// `{<prefix>}:instance:<iid>`: the lease of an instance.
    pub(super) fn instance(&self, iid: &str) -> String {
        format!("{}:instance:{iid}", self.base)
    }

    /// `{<prefix>}:driving:<iid>`: the ids of the tasks an instance drives.
    pub(super) fn driving(&self, iid: &str) -> String {
        format!("{}{iid}", self.driving_head())
    }

    /// What precedes the instance id in a driving key, for scripts that
    /// build it from a task's driver.
    pub(super) fn driving_head(&self) -> String {
        format!("{}:driving:", self.base)
    }

    /// `{<prefix>}:owned:<owner>` or `{<prefix>}:unowned`: the owner index.
    pub(super) fn index(&self, owner: Option<&str>) -> String {
        match owner {
            Some(owner) => format!("{}:owned:{owner}", self.base),
            None => format!("{}:unowned", self.base),
        }
    }

    /// `{<prefix>}:all`: every task's id, by creation time, for the
    /// operator's listing.
    pub(super) fn all(&self) -> String {
        format!("{}:all", self.base)
    }

    /// `{<prefix>}:live:owned:<owner>` or `{<prefix>}:live:unowned`: the live
    /// tasks of an owner created under a quota, by deadline.
    pub(super) fn live(&self, owner: Option<&str>) -> String {
        match owner {
            Some(owner) => format!("{}:live:owned:{owner}", self.base),
            None => format!("{}:live:unowned", self.base),
        }
    }

    /// `{<prefix>}:live:all`: every live task created under a quota, by
    /// deadline.
    pub(super) fn live_all(&self) -> String {
        format!("{}:live:all", self.base)
    }

    /// `{<prefix>}:reserved`: with several shards, the places taken under
    /// the total cap (ids by deadline); kept under the home tag.
    pub(super) fn reserved(&self) -> String {
        format!("{}:reserved", self.base)
    }

    /// `{<prefix>}:changed`: the channel that announces the other changes a
    /// status subscriber sees (status message, input asked, resumed).
    pub(super) fn changed_name(&self) -> String {
        format!("{}:changed", self.base)
    }

    /// `{<prefix>}:ended`: the channel that announces terminal transitions.
    pub(super) fn ended_name(&self) -> String {
        format!("{}:ended", self.base)
    }

    /// [`changed_name`](Self::changed_name) as the scripts take it.
    pub(super) fn changed(&self) -> &str {
        &self.changed_arg
    }

    /// [`ended_name`](Self::ended_name) as the scripts take it.
    pub(super) fn channel(&self) -> &str {
        &self.ended_arg
    }

    /// What precedes the id in a task key, for scripts that build task keys
    /// from index entries.
    pub(super) fn task_head(&self) -> String {
        format!("{}:task:", self.base)
    }
}

/// The two script arguments that carry an owner: a presence flag, so that no
/// owner and the empty owner stay distinct, and the owner itself.
pub(super) fn owner_args(owner: Option<&str>) -> [&str; 2] {
    match owner {
        Some(owner) => ["1", owner],
        None => ["0", ""],
    }
}

/// The owner arguments of the operator's calls: any owner.
pub(super) const ANY_OWNER: [&str; 2] = ["*", ""];

/// A quota cap as a script argument: `''` for none.
pub(super) fn cap_arg(cap: Option<u32>) -> String {
    cap.map(|cap| cap.to_string()).unwrap_or_default()
}
