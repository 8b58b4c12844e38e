//! A set of ranks as one bit per position, written by many threads at once.
//!
//! It carries what one layer learns from the layers solved before it (the
//! positions [`crate::kernel::init_with_known_losses`] starts from): at order 2
//! one bit per position is 1.9 GB, a byte per position would be 14.8 GB.

use std::sync::atomic::{AtomicU64, Ordering};

/// A set of ranks below a fixed bound.
pub struct RankSet {
    words: Vec<AtomicU64>,
    len: u64,
}

impl RankSet {
    /// An empty set of ranks below `len`.
    pub fn new(len: u64) -> RankSet {
        RankSet { words: (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(), len }
    }

    /// The bound the ranks lie below.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the bound is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `rank` (any thread). Panics when `rank` is not below [`RankSet::len`].
    #[inline]
    pub fn insert(&self, rank: u64) {
        assert!(rank < self.len, "rank {rank} outside a set of {} ranks", self.len);
        self.words[(rank / 64) as usize].fetch_or(1 << (rank % 64), Ordering::Relaxed);
    }

    /// True when `rank` is in the set (false for ranks beyond the bound).
    #[inline]
    pub fn contains(&self, rank: u64) -> bool {
        rank < self.len && self.words[(rank / 64) as usize].load(Ordering::Relaxed) >> (rank % 64) & 1 == 1
    }

    /// Number of ranks in the set.
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum()
    }

    /// Bytes the set holds.
    pub fn bytes(&self) -> u64 {
        8 * self.words.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_what_was_inserted() {
        let s = RankSet::new(200);
        assert!(!s.is_empty() && s.len() == 200);
        for r in [0u64, 1, 63, 64, 65, 127, 199] {
            s.insert(r);
        }
        s.insert(129);
        s.insert(131);
        let want = [0u64, 1, 63, 64, 65, 127, 129, 131, 199];
        for r in 0..210 {
            assert_eq!(s.contains(r), want.contains(&r), "rank {r}");
        }
        assert_eq!(s.count(), want.len() as u64);
        assert_eq!(s.bytes(), 32);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_rank_beyond_the_bound_is_refused() {
        RankSet::new(10).insert(10);
    }
}
