//! Which tools answer at once and report no progress: their calls go
//! without the layer's own progress token (`wire::progress`).
//!
//! The token costs each call it goes in: the forwarded body grows, and the
//! inner server reads (and some servers keep) one more `_meta` member. It
//! matters only for a call that is parked, whose task's `statusMessage`
//! comes from the progress reported for it. So the layer remembers, per
//! tool, how its calls went:
//!
//! | A call of the tool…                                     | Its slot                       |
//! |---------------------------------------------------------|--------------------------------|
//! | answers in time, its answer plainly the response (JSON, or SSE whose first message is the response) | one more quiet answer |
//! | outlives the threshold, or its SSE answer carries anything before the response (progress, a request) | back to none |
//!
//! After [`QUIET_AFTER`] quiet answers in a row, the tool's calls go
//! without the token; the first that is parked anyway goes without a
//! status message from progress, and the tool's calls carry the token again
//! from the next one on. A tool never seen, and every tool whose slot
//! another took meanwhile, gets the token: that is the safe side.
//!
//! The slots are a fixed table of atomics, indexed by a keyed hash of the
//! tool's name and holding the rest of that hash, so a client can neither
//! grow it nor aim one name at another's slot. A quiet tool's call only
//! reads its slot: nothing is written once a tool is known quiet.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many quiet answers in a row make a tool's calls go without the token.
pub(crate) const QUIET_AFTER: u64 = 16;
/// The table's slots (a power of two).
const SLOTS: usize = 256;
/// The bits of a slot that count quiet answers; the rest hold the name's
/// hash.
const COUNT: u64 = 0xffff;

/// What the layer knows of its tools' quiet (see the module docs).
pub(crate) struct Quiet {
    hasher: RandomState,
    slots: Box<[AtomicU64]>,
}

impl Default for Quiet {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl std::fmt::Debug for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quiet").finish_non_exhaustive()
    }
}

/// A tool, as [`Quiet`] finds its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tool {
    slot: usize,
    /// The hash's bits above the count; never zero, so an empty slot is
    /// nobody's.
    mark: u64,
}

impl Quiet {
    /// The tool named `name` (its bytes as the call spells them).
    pub(crate) fn tool(&self, name: &[u8]) -> Tool {
        let hash = self.hasher.hash_one(name);
        Tool {
            slot: (hash as usize) & (SLOTS - 1),
            mark: (hash & !COUNT) | (COUNT + 1),
        }
    }

    /// Whether `tool`'s calls go without the layer's token.
    pub(crate) fn is_quiet(&self, tool: Tool) -> bool {
        let value = self.slots[tool.slot].load(Ordering::Relaxed);
        value & !COUNT == tool.mark && value & COUNT >= QUIET_AFTER
    }

    /// A call of `tool` answered in time, plainly. Writes nothing once the
    /// tool is quiet; two calls counted at once may count as one.
    pub(crate) fn answered(&self, tool: Tool) {
        let slot = &self.slots[tool.slot];
        let value = slot.load(Ordering::Relaxed);
        let next = if value & !COUNT == tool.mark {
            let count = value & COUNT;
            if count >= QUIET_AFTER {
                return;
            }
            tool.mark | (count + 1)
        } else {
            tool.mark | 1
        };
        slot.store(next, Ordering::Relaxed);
    }

    /// A call of `tool` outlived the threshold or sent something before
    /// its response: its next calls carry the token.
    pub(crate) fn stirred(&self, tool: Tool) {
        let slot = &self.slots[tool.slot];
        if slot.load(Ordering::Relaxed) != tool.mark {
            slot.store(tool.mark, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name`'s tool, made quiet in `quiet`.
    fn quieted(quiet: &Quiet, name: &[u8]) -> Tool {
        let tool = quiet.tool(name);
        for _ in 0..QUIET_AFTER {
            quiet.answered(tool);
        }
        assert!(quiet.is_quiet(tool));
        tool
    }

    #[test]
    fn a_tool_is_quiet_after_enough_plain_answers_and_loud_again_once_stirred() {
        let quiet = Quiet::default();
        let tool = quiet.tool(b"greet");
        for _ in 0..QUIET_AFTER {
            assert!(!quiet.is_quiet(tool));
            quiet.answered(tool);
        }
        assert!(quiet.is_quiet(tool));
        quiet.stirred(tool);
        assert!(!quiet.is_quiet(tool));
        quiet.answered(tool);
        assert!(!quiet.is_quiet(tool));
    }

    #[test]
    fn a_tool_never_seen_carries_the_token() {
        let quiet = Quiet::default();
        let greet = quieted(&quiet, b"greet");
        let other = quiet.tool(b"slow_compute");
        assert_ne!(greet, other);
        assert!(!quiet.is_quiet(other));
    }

    #[test]
    fn a_tool_whose_slot_another_took_starts_over() {
        let quiet = Quiet::default();
        let tool = quieted(&quiet, b"greet");
        // Another name in the same slot.
        let other = Tool {
            slot: tool.slot,
            mark: tool.mark ^ ((COUNT + 1) << 1),
        };
        quiet.answered(other);
        assert!(!quiet.is_quiet(tool));
        assert!(!quiet.is_quiet(other));
    }
}
