//! Jump chains on a board of at most 64 cells, shared by the two- and
//! three-player games: the cells a piece reaches by a chain of jumps over
//! single pieces, stopping anywhere.

/// The jumps of each cell: (jumped cell, landing bit), padded to six with
/// (0, 0), so a cell's jumps are tested without a branch.
pub(crate) type JumpTable = Vec<[(u8, u64); 6]>;

/// Builds a [`JumpTable`] from each cell's `(jumped cell, landing cell)` pairs.
pub(crate) fn jump_table(jumps: &[Vec<(u8, u8)>]) -> JumpTable {
    jumps
        .iter()
        .map(|row| {
            let mut bits = [(0u8, 0u64); 6];
            for (slot, &(over, land)) in bits.iter_mut().zip(row) {
                *slot = (over, 1u64 << land);
            }
            bits
        })
        .collect()
}

/// Every cell a chain of jumps from `from` can end on: each jump goes over a
/// cell of `occupied` and lands on a cell of `landable` not reached before.
/// `from` itself is never in the result.
#[inline]
pub(crate) fn jump_chains(table: &[[(u8, u64); 6]], from: usize, occupied: u64, landable: u64) -> u64 {
    let mut reached = 1u64 << from;
    let mut todo = reached;
    while todo != 0 {
        let c = todo.trailing_zeros() as usize;
        todo &= todo - 1;
        // Every jump of the cell at once, without a branch: whether the
        // jumped cell holds a piece is a coin toss a predictor cannot learn,
        // and this loop runs for every piece of every move count and
        // predecessor.
        let mut landed = 0;
        for &(over, land) in &table[c] {
            landed |= land & (occupied >> over & 1).wrapping_neg();
        }
        landed &= landable & !reached;
        reached |= landed;
        todo |= landed;
    }
    reached & !(1u64 << from)
}
