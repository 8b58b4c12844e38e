//! How a dense rank space is cut into shards, tablebase blocks and undo chunks.

use retro_games::fastdiv::FastDiv;
use std::ops::Range;

/// Shards are contiguous rank ranges; every shard boundary is a multiple of
/// the tablebase block size, so each worker can compress whole blocks of its
/// own shards and the merged file does not depend on who owned what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Positions in the space.
    pub positions: u64,
    /// Positions per shard (the last shard may be shorter).
    pub shard_len: u64,
    /// Number of shards.
    pub shards: u32,
    /// Positions per tablebase block.
    pub block_positions: u64,
    /// Bytes per undo/checksum chunk inside a shard file.
    pub chunk_len: u64,
    /// Division by `shard_len` and by `chunk_len`: the frontier scan finds
    /// the shard and the chunk of every decided position, and a hardware
    /// division costs tens of cycles.
    shard_div: FastDiv,
    chunk_div: FastDiv,
}

impl Layout {
    /// Cuts `positions` into at most `shards` shards aligned to `block_positions`.
    /// Fewer shards result when the space is too small to give each one a block.
    pub fn new(positions: u64, shards: u32, block_positions: u64, chunk_len: u64) -> Layout {
        let shards = shards.max(1) as u64;
        let block_positions = block_positions.max(1);
        let blocks = positions.div_ceil(block_positions).max(1);
        let blocks_per_shard = blocks.div_ceil(shards);
        let shard_len = blocks_per_shard * block_positions;
        let shards = positions.div_ceil(shard_len).max(1) as u32;
        let chunk_len = chunk_len.max(1);
        Layout {
            positions,
            shard_len,
            shards,
            block_positions,
            chunk_len,
            shard_div: FastDiv::new(shard_len),
            chunk_div: FastDiv::new(chunk_len),
        }
    }

    /// Rank range of shard `s`.
    pub fn range(&self, s: u32) -> Range<u64> {
        let start = s as u64 * self.shard_len;
        start..(start + self.shard_len).min(self.positions)
    }

    /// The shard that holds `rank`.
    #[inline]
    pub fn shard_of(&self, rank: u64) -> u32 {
        self.shard_div.div(rank) as u32
    }

    /// The chunk that holds `offset` (counted from its shard's start).
    #[inline]
    pub fn chunk_of(&self, offset: u64) -> u64 {
        self.chunk_div.div(offset)
    }

    /// Number of tablebase blocks in the whole space.
    pub fn blocks(&self) -> u64 {
        self.positions.div_ceil(self.block_positions)
    }

    /// Number of chunks in shard `s`.
    pub fn chunks(&self, s: u32) -> u64 {
        let r = self.range(s);
        (r.end - r.start).div_ceil(self.chunk_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_space_on_block_boundaries() {
        for (n, s, b) in [(1662, 6, 64), (1662, 1, 1 << 20), (10, 4, 4), (100, 200, 1), (1, 3, 8)] {
            let l = Layout::new(n, s, b, 16);
            let mut next = 0;
            for i in 0..l.shards {
                let r = l.range(i);
                assert_eq!(r.start, next);
                assert!(r.end > r.start);
                assert_eq!(r.start % b, 0);
                for rank in [r.start, r.end - 1] {
                    assert_eq!(l.shard_of(rank), i);
                }
                for offset in 0..r.end - r.start {
                    assert_eq!(l.chunk_of(offset), offset / 16);
                }
                next = r.end;
            }
            assert_eq!(next, n);
            assert!(l.shards <= s.max(1));
        }
    }
}
