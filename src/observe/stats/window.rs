//! One tool's [`Window`]: a ring of slots, each the counts of one period of
//! the slot's length, recorded into with atomics and reused as time moves
//! on.
//!
//! | Step | How | Why |
//! |------|-----|-----|
//! | record | the slot of the current period, by its number modulo the ring; counters and the bucket added to atomically | no lock on the way of a call |
//! | a slot's period moves on | the first record of the new period clears it, under the window's own lock, then marks it with the period's number | once per slot and period; records of the period it holds never wait |
//! | a record of a period the slot has left | dropped | the period left the window already |
//! | read | each slot of the window's periods whose mark is that period, read between two looks at the mark | a slot cleared while read is taken as empty: its period has left the window |
//! | a slot's histogram | allocated by the first record the slot ever takes, then reused | a tool called once holds one slot's counts, not the window's |

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::SlotStats;
use super::histogram::{Counts, Summed};

/// The quantiles every slot reports.
const QUANTILES: [f64; 3] = [0.5, 0.95, 0.99];

/// One call, as a window records it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Call {
    pub nanos: u64,
    pub parked: bool,
    pub failed: bool,
}

struct Slot {
    /// The number of the period the slot holds, plus one (0: none yet).
    period: AtomicU64,
    calls: AtomicU64,
    parked: AtomicU64,
    failed: AtomicU64,
    times: OnceLock<Box<Counts>>,
}

impl Slot {
    fn new() -> Self {
        Self {
            period: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            parked: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            times: OnceLock::new(),
        }
    }

    fn clear(&self) {
        for counter in [&self.calls, &self.parked, &self.failed] {
            counter.store(0, Ordering::Relaxed);
        }
        if let Some(times) = self.times.get() {
            times.clear();
        }
    }
}

/// The slots of one tool.
pub(super) struct Window {
    slots: Box<[Slot]>,
    /// Held while a slot is cleared for a new period.
    turning: Mutex<()>,
}

impl Window {
    pub(super) fn new(slots: usize) -> Self {
        Self {
            slots: (0..slots.max(1)).map(|_| Slot::new()).collect(),
            turning: Mutex::new(()),
        }
    }

    fn slot(&self, period: u64) -> &Slot {
        // The remainder is below the slot count, a `usize`.
        &self.slots[(period % self.slots.len() as u64) as usize]
    }

    /// Records `call`, which ended in `period`.
    pub(super) fn record(&self, period: u64, call: Call) {
        let slot = self.slot(period);
        if !self.holds(slot, period + 1) {
            return;
        }
        slot.calls.fetch_add(1, Ordering::Relaxed);
        if call.parked {
            slot.parked.fetch_add(1, Ordering::Relaxed);
        }
        if call.failed {
            slot.failed.fetch_add(1, Ordering::Relaxed);
        }
        slot.times.get_or_init(Counts::new).add(call.nanos);
    }

    /// Whether `slot` holds the period marked `mark`, cleared for it first
    /// if it held an older one; `false` if it holds a newer one.
    fn holds(&self, slot: &Slot, mark: u64) -> bool {
        let held = slot.period.load(Ordering::Acquire);
        if held != mark {
            if held > mark {
                return false;
            }
            // The lock guards no data of its own: a panic while it was held
            // left nothing half done that the next holder could see.
            let _turning = self.turning.lock().unwrap_or_else(PoisonError::into_inner);
            let held = slot.period.load(Ordering::Acquire);
            if held > mark {
                return false;
            }
            if held < mark {
                slot.clear();
                slot.period.store(mark, Ordering::Release);
            }
        }
        true
    }

    /// The stats of the `count` periods up to `last`, oldest first, and
    /// their total.
    pub(super) fn read(&self, last: u64, count: usize) -> (Vec<SlotStats>, SlotStats) {
        let mut slots = Vec::with_capacity(count);
        let mut total = SlotStats::default();
        let mut all = Summed::default();
        for back in (0..count as u64).rev() {
            let read = last
                .checked_sub(back)
                .and_then(|period| self.read_slot(period));
            let Some((mut stats, times)) = read else {
                slots.push(SlotStats::default());
                continue;
            };
            [stats.p50, stats.p95, stats.p99] = times.quantiles(QUANTILES);
            total.calls += stats.calls;
            total.parked += stats.parked;
            total.failed += stats.failed;
            all.add(&times);
            slots.push(stats);
        }
        [total.p50, total.p95, total.p99] = all.quantiles(QUANTILES);
        (slots, total)
    }

    /// The counts of `period`, if its slot holds it and kept it while read.
    fn read_slot(&self, period: u64) -> Option<(SlotStats, Summed)> {
        let slot = self.slot(period);
        let mark = period + 1;
        if slot.period.load(Ordering::Acquire) != mark {
            return None;
        }
        let stats = SlotStats {
            calls: slot.calls.load(Ordering::Relaxed),
            parked: slot.parked.load(Ordering::Relaxed),
            failed: slot.failed.load(Ordering::Relaxed),
            ..SlotStats::default()
        };
        let mut times = Summed::default();
        if let Some(counts) = slot.times.get() {
            counts.read_into(&mut times);
        }
        // Cleared for a newer period meanwhile: this one has left the window.
        (slot.period.load(Ordering::Acquire) == mark).then_some((stats, times))
    }
}

#[cfg(test)]
mod tests {
    use super::super::histogram::MAX_RELATIVE_ERROR;
    use super::*;

    fn call(millis: u64, parked: bool, failed: bool) -> Call {
        Call {
            nanos: millis * 1_000_000,
            parked,
            failed,
        }
    }

    #[test]
    fn each_period_has_its_slot_and_a_reused_slot_starts_empty() {
        let window = Window::new(3);
        window.record(0, call(10, false, false));
        window.record(1, call(20, true, false));
        window.record(1, call(20, true, true));
        window.record(2, call(30, false, true));
        let (slots, total) = window.read(2, 3);
        assert_eq!(slots.iter().map(|s| s.calls).collect::<Vec<_>>(), [1, 2, 1]);
        assert_eq!((total.calls, total.parked, total.failed), (4, 2, 2));
        let p50 = slots[1].p50.expect("two calls").as_secs_f64();
        assert!((p50 - 0.02).abs() / 0.02 <= MAX_RELATIVE_ERROR, "{p50}");

        // Period 3 takes the slot of period 0, which leaves the window.
        window.record(3, call(40, false, false));
        let (slots, total) = window.read(3, 3);
        assert_eq!(slots.iter().map(|s| s.calls).collect::<Vec<_>>(), [2, 1, 1]);
        assert_eq!(total.calls, 4);
        // Long after: everything has left.
        let (slots, total) = window.read(10, 3);
        assert!(slots.iter().all(|slot| *slot == SlotStats::default()));
        assert_eq!(total, SlotStats::default());
    }

    #[test]
    fn a_record_of_a_period_already_left_is_dropped() {
        let window = Window::new(2);
        window.record(5, call(1, false, false));
        window.record(3, call(1, false, false));
        let (slots, total) = window.read(5, 2);
        assert_eq!(slots[1].calls, 1);
        assert_eq!(total.calls, 1);
    }

    #[test]
    fn periods_before_the_first_read_as_empty() {
        let window = Window::new(4);
        window.record(1, call(5, false, false));
        let (slots, _) = window.read(1, 4);
        assert_eq!(
            slots.iter().map(|s| s.calls).collect::<Vec<_>>(),
            [0, 0, 0, 1]
        );
    }
}
