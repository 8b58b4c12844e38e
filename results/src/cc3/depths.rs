//! Where each position was first reached from the start, kept in four bits,
//! so that the categories per breadth-first depth come from one pass over the
//! rotation orbits instead of from each depth's frontier.
//!
//! Counting a depth's frontier position by position costs an unranking and
//! nine layer reads at ranks that jump from block to block (a compressed
//! chunk decoded again for a few positions); the orbit pass
//! ([`crate::cc3::analysis::count_orbits`]) reads the layers block by block at
//! a fraction of that cost, and needs only each position's depth beside it.
//! Every move passes the turn on, so the positions of depth `d` all have
//! player `d mod 3` to move: per third of the rank space the depth is
//! `3 * code - 3 + third`, with code 0 for a position never reached.

/// Deepest ply a [`DepthMap`] can record (code 15 in the third of player 2).
pub const MAX_DEPTH: u32 = 3 * 15 - 1;

/// Four bits per position: 0 when not reached, else `depth / 3 + 1` (the
/// third, that is the player to move, gives `depth mod 3`).
pub struct DepthMap {
    /// Positions per third.
    third: u64,
    /// Per third, two positions a byte (the lower index in the low nibble).
    /// Allocated zeroed, so the pages of a short search stay untouched.
    nibbles: [Vec<u8>; 3],
}

impl DepthMap {
    /// An empty map (nothing reached) over three thirds of `third` positions.
    pub fn new(third: u64) -> DepthMap {
        let bytes = third.div_ceil(2) as usize;
        DepthMap { third, nibbles: [0, 1, 2].map(|_| vec![0u8; bytes]) }
    }

    /// Bytes a map over thirds of `third` positions holds.
    pub fn bytes_for(third: u64) -> u64 {
        3 * third.div_ceil(2)
    }

    /// Positions per third.
    pub fn third(&self) -> u64 {
        self.third
    }

    /// The depth at which position `index` of third `turn` was first
    /// reached, if it was.
    #[inline]
    pub fn depth(&self, turn: usize, index: u64) -> Option<u32> {
        let byte = self.nibbles[turn][(index / 2) as usize];
        let code = (byte >> (4 * (index % 2))) & 0xf;
        (code != 0).then(|| 3 * (code as u32 - 1) + turn as u32)
    }

    /// Records `depth` for every set bit of `words` (bit `i` of word `w` is
    /// position `64 w + i` of third `depth mod 3`), on `threads` threads. A
    /// bit of a position already recorded overwrites it: the search records
    /// each position once, at the depth it first reaches it.
    ///
    /// # Panics
    /// When `depth` exceeds [`MAX_DEPTH`], or `words` covers more than a third.
    pub fn record(&mut self, depth: u32, words: &[u64], threads: usize) {
        assert!(depth <= MAX_DEPTH, "depth {depth} does not fit a depth map (at most {MAX_DEPTH})");
        assert!(words.len() as u64 <= self.third.div_ceil(64), "more words than positions");
        let code = (depth / 3 + 1) as u8;
        let nibbles = &mut self.nibbles[(depth % 3) as usize];
        // A word's 64 positions are 32 bytes of the map: threads take
        // contiguous runs of words and the bytes beside them.
        let per = words.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|s| {
            let mut rest: &mut [u8] = nibbles;
            for run in words.chunks(per) {
                let take = (run.len() * 32).min(rest.len());
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(take);
                rest = tail;
                s.spawn(move || {
                    for (w, &bits) in run.iter().enumerate() {
                        let mut bits = bits;
                        while bits != 0 {
                            let i = w * 64 + bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            let shift = 4 * (i % 2);
                            let byte = &mut mine[i / 2];
                            *byte = (*byte & !(0xf << shift)) | (code << shift);
                        }
                    }
                });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_read_back_as_recorded_per_third() {
        let third = 1000;
        let mut map = DepthMap::new(third);
        let mut words = vec![0u64; third.div_ceil(64) as usize];
        // Positions 0, 63, 64 and 999 of the third of player 1, at depth 7.
        for i in [0u64, 63, 64, 999] {
            words[(i / 64) as usize] |= 1 << (i % 64);
        }
        for threads in [1, 3] {
            map.record(7, &words, threads);
            for i in 0..third {
                let want = [0, 63, 64, 999].contains(&i).then_some(7);
                assert_eq!(map.depth(1, i), want, "position {i}, {threads} threads");
                assert_eq!(map.depth(0, i), None);
                assert_eq!(map.depth(2, i), None);
            }
        }
        // The deepest depth of each third, beside a neighbour in the same byte.
        let mut one = vec![0u64; words.len()];
        one[0] = 0b10;
        for depth in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH] {
            map.record(depth, &one, 2);
            assert_eq!(map.depth((depth % 3) as usize, 1), Some(depth));
        }
        assert_eq!(map.depth(1, 0), Some(7), "the low nibble kept its depth");
        assert_eq!(DepthMap::bytes_for(third), 1500);
    }

    #[test]
    #[should_panic(expected = "does not fit a depth map")]
    fn a_depth_past_the_codes_is_refused() {
        DepthMap::new(10).record(MAX_DEPTH + 1, &[1], 1);
    }
}
