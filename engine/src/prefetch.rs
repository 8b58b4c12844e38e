//! A hint to the CPU to start loading a cache line: the kernels touch state
//! bytes and memo slots at random, and once those outgrow the cache each
//! touch is a miss; asking for the lines early lets the misses overlap.

/// Starts loading the cache line of `x` into every cache level. A no-op on
/// architectures without the instruction wrapped here.
#[inline]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never
        // faults (the reference is valid anyway).
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Starts loading every cache line of `xs` (a block's state bytes: a few
/// lines that the work on the next records will touch).
#[inline]
pub(crate) fn prefetch_all<T>(xs: &[T]) {
    let per_line = (64 / std::mem::size_of::<T>().max(1)).max(1);
    for x in xs.iter().step_by(per_line) {
        prefetch(x);
    }
    // The last line, when the slice ends part-way into one not yet asked for.
    if let Some(last) = xs.last() {
        prefetch(last);
    }
}
