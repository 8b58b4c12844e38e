//! Jump chains on a board of at most 64 cells, shared by the two- and
//! three-player games: the cells a piece reaches by a chain of jumps over
//! single pieces, stopping anywhere.

/// Each cell's jumps, in two forms: a row of (jumped cell, landing bit)
/// padded to six, tested without a branch; and, where the CPU extracts bits
/// quickly (BMI2's `pext`), the landings of every pattern of occupied jumped
/// cells, found with one extraction and one load.
#[derive(Clone, Debug, Default)]
pub(crate) struct JumpTable {
    padded: Vec<[(u8, u64); 6]>,
    /// Per cell: the cells it can jump over.
    over: Vec<u64>,
    /// Per cell: for each pattern of occupied cells of `over` (bit k for its
    /// k-th lowest cell), the cells the jumps over them land on.
    landings: Vec<[u64; 64]>,
    /// Whether [`jump_chains`] uses `over` and `landings` (see [`fast_pext`]).
    pext: bool,
}

impl JumpTable {
    /// Whether the table has no cells (the board did not fit 64 bits).
    pub(crate) fn is_empty(&self) -> bool {
        self.padded.is_empty()
    }
}

/// Whether this CPU has a fast `pext`: BMI2, except AMD's Zen 1 and 2
/// (family 17h), which run it in microcode at dozens of cycles.
pub(crate) fn fast_pext() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if !std::arch::is_x86_feature_detected!("bmi2") {
            return false;
        }
        // CPUID leaves 0 (vendor) and 1 (family) exist on every x86-64 CPU.
        let (vendor, signature) = (std::arch::x86_64::__cpuid(0), std::arch::x86_64::__cpuid(1));
        let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
        let family = ((signature.eax >> 8) & 0xf) + ((signature.eax >> 20) & 0xff);
        !(amd && family == 0x17)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Builds a [`JumpTable`] from each cell's `(jumped cell, landing cell)` pairs
/// (at most six per cell, as on a hexagonal grid).
pub(crate) fn jump_table(jumps: &[Vec<(u8, u8)>]) -> JumpTable {
    jump_table_with(jumps, fast_pext())
}

/// [`jump_table`], choosing the form [`jump_chains`] uses (`pext` only where
/// the CPU has BMI2).
fn jump_table_with(jumps: &[Vec<(u8, u8)>], pext: bool) -> JumpTable {
    let padded = jumps
        .iter()
        .map(|row| {
            let mut bits = [(0u8, 0u64); 6];
            for (slot, &(over, land)) in bits.iter_mut().zip(row) {
                *slot = (over, 1u64 << land);
            }
            bits
        })
        .collect();
    let over: Vec<u64> = jumps.iter().map(|row| row.iter().fold(0, |m, &(o, _)| m | 1u64 << o)).collect();
    let landings = jumps
        .iter()
        .zip(&over)
        .map(|(row, &mask)| {
            let mut table = [0u64; 64];
            for (pattern, landed) in table.iter_mut().enumerate() {
                for &(o, land) in row {
                    // Bit k of a pattern stands for the k-th lowest cell of `mask`.
                    let k = (mask & ((1u64 << o) - 1)).count_ones();
                    if pattern >> k & 1 == 1 {
                        *landed |= 1u64 << land;
                    }
                }
            }
            table
        })
        .collect();
    JumpTable { padded, over, landings, pext }
}

/// Every cell a chain of jumps from `from` can end on: each jump goes over a
/// cell of `occupied` and lands on a cell of `landable` not reached before.
/// `from` itself is never in the result.
#[inline]
pub(crate) fn jump_chains(table: &JumpTable, from: usize, occupied: u64, landable: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if table.pext {
        // SAFETY: `pext` is set only where the CPU has BMI2 (`fast_pext`).
        return unsafe { pext_chains(table, from, occupied, landable) };
    }
    chains(from, landable, |cell| {
        // Every jump at once, without a branch: whether the jumped cell holds
        // a piece is a coin toss a predictor cannot learn, and this runs for
        // every piece of every move count and predecessor.
        let mut landed = 0;
        for &(over, land) in &table.padded[cell] {
            landed |= land & (occupied >> over & 1).wrapping_neg();
        }
        landed
    })
}

/// [`jump_chains`] by pattern lookup. A build for a CPU with BMI2 inlines it
/// into its callers; a portable build calls it once per piece.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
#[inline]
unsafe fn pext_chains(table: &JumpTable, from: usize, occupied: u64, landable: u64) -> u64 {
    chains(from, landable, |cell| {
        table.landings[cell][std::arch::x86_64::_pext_u64(occupied, table.over[cell]) as usize]
    })
}

/// The chain search itself, given the landings of each cell's jumps.
#[inline(always)]
fn chains(from: usize, landable: u64, landings: impl Fn(usize) -> u64) -> u64 {
    let mut reached = 1u64 << from;
    let mut todo = reached;
    while todo != 0 {
        let c = todo.trailing_zeros() as usize;
        todo &= todo - 1;
        let landed = landings(c) & landable & !reached;
        reached |= landed;
        todo |= landed;
    }
    reached & !(1u64 << from)
}

/// An upper bound on the moves of a player with `pieces` pieces, on a board
/// whose cell `c` has `steps(c)` neighbours and the jumps `jumps[c]` (jumped
/// cell, landing cell): a piece on `c` moves to a neighbour or to a cell a
/// chain of jumps from `c` can reach on a board whose every jumped cell is
/// occupied, so a position's moves number at most the sum of the `pieces`
/// largest of those per-cell counts. Positions of the game count their
/// children under it ([`crate::RetroGame::max_children`]).
pub fn move_bound(steps: impl Fn(usize) -> u32, jumps: &[Vec<(u8, u8)>], pieces: u32) -> u32 {
    let mut per_cell: Vec<u32> = (0..jumps.len())
        .map(|c| {
            let mut seen = vec![false; jumps.len()];
            seen[c] = true;
            let (mut todo, mut reached) = (vec![c], 0u32);
            while let Some(at) = todo.pop() {
                for &(_, land) in &jumps[at] {
                    let land = land as usize;
                    if !seen[land] {
                        seen[land] = true;
                        reached += 1;
                        todo.push(land);
                    }
                }
            }
            steps(c) + reached
        })
        .collect();
    per_cell.sort_unstable_by(|a, b| b.cmp(a));
    per_cell.iter().take(pieces as usize).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::XorShift;

    /// A 7 x 7 rhombus with the six hexagonal directions.
    fn rhombus_jumps(m: i32) -> Vec<Vec<(u8, u8)>> {
        let dirs = [(0, 1), (1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1)];
        (0..m * m)
            .map(|c| {
                let (r, q) = (c / m, c % m);
                dirs.iter()
                    .filter_map(|&(dr, dq)| {
                        let (r2, q2) = (r + 2 * dr, q + 2 * dq);
                        ((0..m).contains(&r2) && (0..m).contains(&q2))
                            .then(|| (((r + dr) * m + q + dq) as u8, (r2 * m + q2) as u8))
                    })
                    .collect()
            })
            .collect()
    }

    /// Chains by a plain search over the jump list.
    fn plain_chains(jumps: &[Vec<(u8, u8)>], from: usize, occupied: u64, landable: u64) -> u64 {
        let mut reached = 1u64 << from;
        let mut stack = vec![from];
        while let Some(c) = stack.pop() {
            for &(o, l) in &jumps[c] {
                if occupied >> o & 1 == 1 && landable >> l & 1 == 1 && reached >> l & 1 == 0 {
                    reached |= 1 << l;
                    stack.push(l as usize);
                }
            }
        }
        reached & !(1u64 << from)
    }

    #[test]
    fn both_forms_of_the_table_find_every_chain() {
        let jumps = rhombus_jumps(7);
        let padded = jump_table_with(&jumps, false);
        // The lookup form only where this CPU can run it.
        let pext = fast_pext().then(|| jump_table_with(&jumps, true));
        let mut rng = XorShift(0x7ab1e);
        for _ in 0..100_000 {
            let occupied = rng.next_u64() & rng.next_u64() & ((1u64 << 49) - 1);
            let from = (rng.next_u64() % 49) as usize;
            let landable = !occupied & (rng.next_u64() | rng.next_u64());
            let expect = plain_chains(&jumps, from, occupied, landable);
            assert_eq!(jump_chains(&padded, from, occupied, landable), expect);
            if let Some(t) = &pext {
                assert_eq!(jump_chains(t, from, occupied, landable), expect);
            }
        }
    }
}
