//! A global allocator that counts live heap bytes, for the memory figures
//! of the benches (`LIVE`: bytes allocated and not yet freed), and live
//! allocations by size (`by_size`), to tell which ones a change added.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Live heap bytes of the whole process.
pub static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Size classes of 16 bytes up to 8 KiB; the last class holds the rest.
const CLASSES: usize = 513;

/// Live allocations per size class.
static BY_SIZE: [AtomicIsize; CLASSES] = [const { AtomicIsize::new(0) }; CLASSES];

fn class(size: usize) -> usize {
    size.div_ceil(16).min(CLASSES - 1)
}

/// Live allocations per size class now: entry `i` counts the allocations of
/// `16 * (i - 1) + 1` to `16 * i` bytes (the last, every larger one).
#[allow(dead_code)]
pub fn by_size() -> Vec<isize> {
    BY_SIZE.iter().map(|n| n.load(Ordering::Relaxed)).collect()
}

/// The largest size of class `i`, for printing.
#[allow(dead_code)]
pub fn class_bytes(i: usize) -> usize {
    i * 16
}

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        BY_SIZE[class(layout.size())].fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        BY_SIZE[class(layout.size())].fetch_sub(1, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
