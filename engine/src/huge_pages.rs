//! Big tables on transparent huge pages: a table of gigabytes touched at
//! random misses the TLB on almost every access with 4 KB pages (a page walk
//! before the cache miss itself), and 2 MB pages cut that walk away. Linux
//! gives anonymous memory huge pages only where asked (`madvise`) on most
//! distributions, and only to pages not yet touched, so the table is asked
//! for before it is filled.

/// Tables smaller than this stay on ordinary pages (a huge page is 2 MB).
const WORTH_ASKING: usize = 4 << 20;

/// `n` copies of `value`, on transparent huge pages where the kernel gives
/// them (the same vector as `vec![value; n]` otherwise).
pub(crate) fn filled<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise(v.as_mut_ptr().cast::<u8>(), n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, len: usize) {
    if len < WORTH_ASKING {
        return;
    }
    let start = (ptr as usize).next_multiple_of(4096);
    let end = (ptr as usize + len) & !4095;
    if end > start {
        // SAFETY: [start, end) lies inside the allocation the caller owns and
        // has not initialised; MADV_HUGEPAGE changes only how the kernel backs
        // those pages, never their contents, and a refusal (huge pages off,
        // an old kernel) leaves them as they were, which is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn a_filled_table_holds_its_value_small_or_big() {
        for n in [0, 1, 1000, (8 << 20) / 24 + 7] {
            let v = super::filled(n, (u64::MAX, 3u64, 5u64));
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == (u64::MAX, 3, 5)));
        }
    }
}
