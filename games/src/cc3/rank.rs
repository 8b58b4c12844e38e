//! Dense rank/unrank of the lane-restricted position space.
//!
//! A position is split into the player to move `t`, the numbers `a, b, c` of A's,
//! B's and C's pieces in the centre hexagon, the subsets of the centre they hold
//! (A's among all `H` centre cells, B's among the `H - a` left, C's among the
//! `H - a - b` left) and each player's `k - a` (etc.) pieces among its own `2K`
//! corner cells. The rank is `t * P + offset(a, b, c) + mixed-radix(subsets)` with
//! `P` the number of placements; all sizes come from precomputed binomials.

use super::position::Position;
use super::star::Star;
use crate::binom::{Binomials, pdep, pext};

/// Ranking tables for one star order.
pub struct Ranker {
    k: usize,
    h: usize,
    binom: Binomials,
    /// `offsets[(a*(k+1)+b)*(k+1)+c]`: first placement rank of block (a, b, c);
    /// one extra entry holds the placement count.
    offsets: Vec<u128>,
    /// Placements (positions with a fixed player to move).
    placements: u128,
    centre64: u64,
    corner64: u64,
}

impl Ranker {
    /// Builds the tables for `star`.
    pub fn new(star: &Star) -> Ranker {
        let (k, h) = (star.k, star.h);
        let binom = Binomials::new();
        let kk = 2 * k;
        let mut offsets = Vec::with_capacity((k + 1).pow(3) + 1);
        let mut total = 0u128;
        for a in 0..=k {
            for b in 0..=k {
                for c in 0..=k {
                    offsets.push(total);
                    if a + b + c > h {
                        continue;
                    }
                    let centre = binom.get(h, a) * binom.get(h - a, b) * binom.get(h - a - b, c);
                    let corners = binom.get(kk, k - a) * binom.get(kk, k - b) * binom.get(kk, k - c);
                    total += centre * corners;
                }
            }
        }
        offsets.push(total);
        let centre64 = if h == 64 { u64::MAX } else { (1u64 << h) - 1 };
        let corner64 = (1u64 << kk) - 1;
        Ranker { k, h, binom, offsets, placements: total, centre64, corner64 }
    }

    /// Placements of the pieces (positions for one fixed player to move).
    pub fn placements(&self) -> u128 {
        self.placements
    }

    /// All positions: placements times the three players to move.
    pub fn positions(&self) -> u128 {
        self.placements * 3
    }

    /// True when every rank fits in u64, so the space can be solved.
    pub fn fits_u64(&self) -> bool {
        self.positions() <= u64::MAX as u128
    }

    #[inline]
    fn block(&self, a: usize, b: usize, c: usize) -> usize {
        (a * (self.k + 1) + b) * (self.k + 1) + c
    }

    /// Rank of a lane-legal position (every piece inside its player's lanes, `k`
    /// pieces each). Only meaningful when [`Ranker::fits_u64`].
    #[inline]
    pub fn rank(&self, pos: &Position) -> u64 {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let ca = (pos.pieces[0] as u64) & self.centre64;
        let cb = (pos.pieces[1] as u64) & self.centre64;
        let cc = (pos.pieces[2] as u64) & self.centre64;
        let (a, b, c) = (ca.count_ones() as usize, cb.count_ones() as usize, cc.count_ones() as usize);
        let free_b = self.centre64 & !ca;
        let free_c = free_b & !cb;
        let r_ca = self.binom.rank_subset(ca);
        let r_cb = self.binom.rank_subset(pext(cb, free_b));
        let r_cc = self.binom.rank_subset(pext(cc, free_c));
        let corner = |p: usize| ((pos.pieces[p] >> (h + kk * p)) as u64) & self.corner64;
        let r_sa = self.binom.rank_subset(corner(0));
        let r_sb = self.binom.rank_subset(corner(1));
        let r_sc = self.binom.rank_subset(corner(2));
        let b64 = |n: usize, r: usize| self.binom.get64(n, r);
        let mut r = r_ca;
        r = r * b64(h - a, b) + r_cb;
        r = r * b64(h - a - b, c) + r_cc;
        r = r * b64(kk, k - a) + r_sa;
        r = r * b64(kk, k - b) + r_sb;
        r = r * b64(kk, k - c) + r_sc;
        let placement = self.offsets[self.block(a, b, c)] as u64 + r;
        pos.turn as u64 * self.placements as u64 + placement
    }

    /// The player to move at `rank`, without decoding the placement.
    #[inline]
    pub fn turn_of(&self, rank: u64) -> u8 {
        (rank / self.placements as u64) as u8
    }

    /// Inverse of [`Ranker::rank`] for `rank < positions()`.
    pub fn unrank(&self, rank: u64) -> Position {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let p64 = self.placements as u64;
        let turn = (rank / p64) as u8;
        let pr = (rank % p64) as u128;
        // Last block whose offset is <= pr (empty blocks share offsets; take the last).
        let idx = self.offsets.partition_point(|&o| o <= pr) - 1;
        let (a, b, c) = (idx / ((k + 1) * (k + 1)), (idx / (k + 1)) % (k + 1), idx % (k + 1));
        let mut r = (pr - self.offsets[idx]) as u64;
        let b64 = |n: usize, r: usize| self.binom.get64(n, r);
        let mut take = |n: u64| {
            let d = r % n;
            r /= n;
            d
        };
        let r_sc = take(b64(kk, k - c));
        let r_sb = take(b64(kk, k - b));
        let r_sa = take(b64(kk, k - a));
        let r_cc = take(b64(h - a - b, c));
        let r_cb = take(b64(h - a, b));
        let r_ca = r;
        let ca = self.binom.unrank_subset(r_ca, a, h);
        let free_b = self.centre64 & !ca;
        let cb = pdep(self.binom.unrank_subset(r_cb, b, h - a), free_b);
        let free_c = free_b & !cb;
        let cc = pdep(self.binom.unrank_subset(r_cc, c, h - a - b), free_c);
        let corner = |bits: u64, p: usize| (bits as u128) << (h + kk * p);
        let sa = self.binom.unrank_subset(r_sa, k - a, kk);
        let sb = self.binom.unrank_subset(r_sb, k - b, kk);
        let sc = self.binom.unrank_subset(r_sc, k - c, kk);
        Position { pieces: [ca as u128 | corner(sa, 0), cb as u128 | corner(sb, 1), cc as u128 | corner(sc, 2)], turn }
    }
}
