//! Allocation counting: a counter per thread, bumped with a plain load and store. A
//! shared atomic add (`lock xadd`) drains the store buffer at every allocation, CPU the
//! bench would charge to kubesd. Each thread takes a slot of its own at its first allocation, so the plain
//! increment is exact; threads past the last exclusive slot share it atomically.

use std::alloc::{GlobalAlloc, Layout, System as SysAlloc};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Counting;

#[repr(align(64))]
struct Shard(AtomicU64);

const ALLOC_SLOTS: usize = 64;
static ALLOCS: [Shard; ALLOC_SLOTS] = [const { Shard(AtomicU64::new(0)) }; ALLOC_SLOTS];
static NEXT_ALLOC_SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static COUNT_ALLOCS: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// This thread's slot in `ALLOCS` (`usize::MAX` until its first allocation). Const
    /// and without a destructor: usable inside the allocator, even at thread exit.
    static ALLOC_SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

fn count_alloc() {
    if !COUNT_ALLOCS.load(Relaxed) {
        return;
    }
    let shared = ALLOC_SLOTS - 1;
    let slot = ALLOC_SLOT
        .try_with(|cell| {
            if cell.get() == usize::MAX {
                cell.set(NEXT_ALLOC_SLOT.fetch_add(1, Relaxed).min(shared));
            }
            cell.get()
        })
        .unwrap_or(shared);
    let counter = &ALLOCS[slot].0;
    if slot == shared {
        counter.fetch_add(1, Relaxed);
    } else {
        // Only this thread writes this slot.
        counter.store(counter.load(Relaxed) + 1, Relaxed);
    }
}

pub fn allocs() -> u64 {
    ALLOCS.iter().map(|s| s.0.load(Relaxed)).sum()
}

/// Which allocator the bench runs on: mimalloc, as the `kubesd` binary does, unless
/// `KUBESD_BENCH_SYSTEM_ALLOC` is set (to compare with glibc's malloc). Decided at the
/// first allocation, before any thread exists, with `getenv` (which does not allocate).
pub fn use_system() -> bool {
    static CHOICE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    match CHOICE.load(Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: a NUL-terminated name; nothing else touches the environment yet.
            let set = !unsafe { libc::getenv(c"KUBESD_BENCH_SYSTEM_ALLOC".as_ptr()) }.is_null();
            CHOICE.store(if set { 1 } else { 2 }, Relaxed);
            set
        }
    }
}

static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.alloc(layout) }
        } else {
            unsafe { MIMALLOC.alloc(layout) }
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if use_system() {
            unsafe { SysAlloc.dealloc(ptr, layout) }
        } else {
            unsafe { MIMALLOC.dealloc(ptr, layout) }
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.alloc_zeroed(layout) }
        } else {
            unsafe { MIMALLOC.alloc_zeroed(layout) }
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.realloc(ptr, layout, new_size) }
        } else {
            unsafe { MIMALLOC.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
