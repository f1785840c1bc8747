//! Asking memory ahead: a prefetch hint to the CPU's caches for data a loop will read a few
//! iterations later (x86-64; elsewhere nothing). Used where a pass over a thousand devices
//! reads state scattered over the heap that the pass before evicted (issue 37's cost).
//! Imports only: nothing.

/// The first `lines` cache lines of `x` (at most those it spans) asked of memory.
pub fn prefetch<T>(x: &T, lines: usize) {
    ask((x as *const T).cast(), std::mem::size_of::<T>(), lines);
}

/// The first `lines` cache lines of the elements of `xs` asked of memory.
pub fn prefetch_slice<T>(xs: &[T], lines: usize) {
    ask(xs.as_ptr().cast(), std::mem::size_of_val(xs), lines);
}

/// The first `lines` cache lines of the `bytes` at `p`: memory its owner describes by
/// address and size (analysis::learned's `json_heap`).
pub fn prefetch_at(p: *const u8, bytes: usize, lines: usize) {
    ask(p.cast(), bytes, lines);
}

/// The first `lines` cache lines of the `bytes` at `p` (x86-64; elsewhere nothing).
fn ask(p: *const i8, bytes: usize, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..bytes.div_ceil(64).min(lines) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint to the cache: it never faults and reads or writes
        // nothing architecturally, whatever the address (here one inside the value).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes, lines);
}
