//! Positions as the published European enumeration counts them: a board
//! together with the hole the last jump landed in (J.-C. Meyrignac, 2003).
//! Two jumps that end on the same board are one board but two such states
//! when they land in different holes, so these counts are larger than the
//! level's boards from three jumps on.
//!
//! A state is packed into one `u64` key, [`Landing`], so that the level
//! machinery (sharding, adding up, streams on disk) counts states exactly as it
//! counts boards: the board shifted left by six bits and the landing hole
//! (a bit index, below 64) in the low six. Boards use bits 0..=54, so a key
//! stays below 2^61 and never meets the level tables' free-slot marker.

use super::symmetry::apply;
use super::{DIRECTIONS, Folded, Pegs};

/// A board and the hole the last jump landed in, packed (see the module docs).
pub type Landing = u64;

/// Bits below the board in a [`Landing`].
const HOLE_BITS: u32 = 6;

/// Packs `pegs` and the landing `hole` into one key.
#[inline]
pub fn pack(pegs: Pegs, hole: u8) -> Landing {
    debug_assert!(hole < 64 && pegs >> (64 - HOLE_BITS) == 0);
    pegs << HOLE_BITS | Landing::from(hole)
}

/// The board and landing hole of a packed key.
#[inline]
pub fn unpack(state: Landing) -> (Pegs, u8) {
    (state >> HOLE_BITS, (state & ((1 << HOLE_BITS) - 1)) as u8)
}

/// Where symmetry `s` sends hole `hole`.
#[inline]
fn image_of_hole(s: usize, hole: u8) -> u8 {
    apply(s, 1 << hole).trailing_zeros() as u8
}

impl Folded {
    /// The representative of the state (`pegs`, `hole`) under the group: the
    /// least packed image. A board's own symmetries may move its landing
    /// hole, so this is not the board's representative with the hole carried
    /// along.
    #[inline]
    pub fn canonical_landing(&self, pegs: Pegs, hole: u8) -> Landing {
        (0..8)
            .filter(|&s| self.group.contains(s))
            .map(|s| pack(apply(s, pegs), image_of_hole(s, hole)))
            .min()
            .unwrap_or_else(|| pack(pegs, hole))
    }

    /// Calls `f` with the canonical state every jump out of `pegs` leads to
    /// (the child and the hole the jump lands in), once per jump.
    #[inline]
    pub fn for_each_landing(&self, pegs: Pegs, mut f: impl FnMut(Landing)) {
        let trivial = self.group.len() == 1;
        self.board.for_each_jump_index(pegs, |d, from| {
            let to = (from as i32 + 2 * DIRECTIONS[d]) as u8;
            // The identity image of a jump's mask is the mask itself.
            let child = pegs ^ self.board.images[d][from as usize][0];
            // Without a fold (the c1 start) every state is its own representative.
            f(if trivial { pack(child, to) } else { self.canonical_landing(child, to) });
        });
    }

    /// The number of states a representative stands for: its distinct images
    /// under the group (those symmetries fixing the board and the hole both
    /// leave it in place).
    pub fn landing_orbit_size(&self, state: Landing) -> u32 {
        let (pegs, hole) = unpack(state);
        let fixing = (0..8)
            .filter(|&s| self.group.contains(s) && apply(s, pegs) == pegs && image_of_hole(s, hole) == hole)
            .count();
        self.group.len() / fixing as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peg::symmetry::Group;
    use crate::peg::{Board, BoardKind, parse_hole};
    use std::collections::HashSet;

    #[test]
    fn every_image_of_a_state_has_one_representative_and_the_orbit_counts_them() {
        let board = Board::new(BoardKind::European);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let without = |holes: &[&str]| holes.iter().fold(board.holes(), |p, h| p & !(1 << parse_hole(h).unwrap()));
        // Groups of 8, 4 (two ways), 2 and 1 symmetries: the stabilisers of these.
        let fixed = [&["d4"][..], &["d3", "d5"], &["c3", "e5"], &["d3"], &["c1"]];
        let sizes: Vec<u32> = fixed.iter().map(|h| Group::stabiliser(without(h)).len()).collect();
        assert_eq!(sizes, [8, 4, 4, 2, 1]);
        for holes in fixed {
            let group = Group::stabiliser(without(holes));
            let mask = group.mask();
            let folded = Folded { board: board.clone(), group };
            for _ in 0..2000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let pegs = seed & board.holes();
                let hole = (seed >> 56) as u8 % 64;
                if !board.has_hole(hole) {
                    continue;
                }
                assert_eq!(unpack(pack(pegs, hole)), (pegs, hole));
                let images: HashSet<Landing> = (0..8)
                    .filter(|&s| folded.group.contains(s))
                    .map(|s| pack(apply(s, pegs), image_of_hole(s, hole)))
                    .collect();
                let rep = folded.canonical_landing(pegs, hole);
                assert!(images.contains(&rep));
                for &image in &images {
                    let (p, h) = unpack(image);
                    assert_eq!(folded.canonical_landing(p, h), rep, "mask {mask:#x}");
                }
                assert_eq!(folded.landing_orbit_size(rep) as usize, images.len(), "mask {mask:#x}");
            }
        }
    }

    #[test]
    fn the_states_of_a_jump_are_its_child_and_landing_hole() {
        let board = Board::new(BoardKind::European);
        let start = board.single_vacancy(parse_hole("d3").unwrap());
        let folded = Folded::of_start(board.clone(), start);
        assert_eq!(folded.group.len(), 2, "d3 is fixed by the mirror");
        let mut seen = Vec::new();
        folded.for_each_landing(start, |s| seen.push(s));
        let mut want: Vec<Landing> =
            board.jumps(start).into_iter().map(|j| folded.canonical_landing(start ^ j.mask(), j.to)).collect();
        seen.sort_unstable();
        want.sort_unstable();
        assert_eq!(seen, want);
        assert_eq!(seen.len(), 4, "four jumps into d3");
        // The jumps from b3 and f3 are mirror images: one state up to the fold.
        seen.dedup();
        assert_eq!(seen.len(), 3);
    }
}
