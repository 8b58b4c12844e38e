//! Dense rank/unrank of the lane-restricted position space, in an order built
//! for the retrograde kernel: all predecessors of a position lie in one small
//! block of the rank space.
//!
//! With `t` the player to move and `o1 = t+1`, `o2 = t+2` the others, a rank is
//!
//! ```text
//! t * P + offset(b, c) + major * M(b, c) + minor
//! ```
//!
//! where `b`, `c` are the numbers of o1's and o2's pieces in the centre hexagon,
//! `major` encodes o1's and o2's pieces (centre subsets and corner subsets) and
//! `minor` the mover's pieces: `a` of them among the `H - b - c` centre cells the
//! others leave free, and `k - a` among its own `2K` corner cells. A predecessor of
//! a position differs from it only in the previous player's pieces, and in the
//! predecessor that player is the mover: so every predecessor of a position has
//! the same turn, `b`, `c` and major, and they all fall in one block of `M(b, c)`
//! consecutive ranks (at most 2,300 at order 2), which stays in cache while the
//! kernel updates it. All sizes come from precomputed binomials.

use super::position::Position;
use super::star::Star;
use crate::binom::{Binomials, COLEX_K, Colex, Deposit, next_colex, pdep};
use crate::fastdiv::FastDiv;

/// Ranking tables for one star order.
pub struct Ranker {
    k: usize,
    h: usize,
    binom: Binomials,
    /// Colex ranks from a dense table (every predecessor is ranked with it).
    colex: Colex,
    /// `bc_offset[b*(k+1)+c]`: first rank (within a turn) of the (b, c) section;
    /// one extra entry holds the placement count.
    bc_offset: Vec<u128>,
    /// [`Ranker::bc_offset`] in u64 (saturated), for finding a rank's section
    /// without a u128 comparison.
    bc_offset64: Vec<u64>,
    /// `(b, c)` of each section (a division by `k + 1` at run time is slow).
    section_bc: Vec<(u8, u8)>,
    /// `minor_size[b*(k+1)+c]`: positions of the mover for fixed others.
    minor_size: Vec<u64>,
    /// `minor_offset[(b*(k+1)+c)*(k+1)+a]`: first minor index with `a` mover pieces in the centre.
    minor_offset: Vec<u64>,
    /// Placements (positions with a fixed player to move).
    placements: u128,
    centre64: u64,
    corner64: u64,
    /// Divisions of unranking by multiplication (see [`FastDiv`]): by the
    /// placements, by each section's minor size, and by `C(n, r)` at
    /// `binom_div[n * (k + 1) + r]`.
    placements_div: FastDiv,
    minor_div: Vec<FastDiv>,
    binom_div: Vec<FastDiv>,
    /// Spreads the centre pieces around the other players' (`pdep` where fast).
    deposit: Deposit,
}

/// Insertion slots enough for orders 1 and 2 (at most three pieces a player).
const SMALL_SLOTS: usize = 4;

/// Where the predecessors of a position lie: the block shared by all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredecessorBlock {
    /// Rank of the block's first position.
    pub base: u64,
    /// Centre cells free of the two other players (the mover's centre universe).
    pub free: u64,
    /// Index of the (b, c) section, for [`Ranker::minor`].
    pub section: usize,
    /// The player to move in the predecessors.
    pub mover: usize,
}

impl Ranker {
    /// Builds the tables for `star`.
    pub fn new(star: &Star) -> Ranker {
        let (k, h) = (star.k, star.h);
        let binom = Binomials::new();
        let kk = 2 * k;
        let mut bc_offset = Vec::with_capacity((k + 1) * (k + 1) + 1);
        let mut minor_size = Vec::with_capacity((k + 1) * (k + 1));
        let mut minor_offset = Vec::with_capacity((k + 1).pow(3));
        let mut total = 0u128;
        for b in 0..=k {
            for c in 0..=k {
                bc_offset.push(total);
                let mut minor = 0u128;
                for a in 0..=k {
                    minor_offset.push(minor as u64);
                    if a + b + c <= h {
                        minor += binom.get(kk, k - a) * binom.get(h - b - c, a);
                    }
                }
                minor_size.push(minor.min(u64::MAX as u128) as u64);
                if b + c <= h {
                    let major = binom.get(h, b) * binom.get(h - b, c) * binom.get(kk, k - b) * binom.get(kk, k - c);
                    total += major * minor;
                }
            }
        }
        bc_offset.push(total);
        let centre64 = if h == 64 { u64::MAX } else { (1u64 << h) - 1 };
        let corner64 = (1u64 << kk) - 1;
        let placements_div = FastDiv::new(u64::try_from(total).unwrap_or(1).max(1));
        let minor_div = minor_size.iter().map(|&m| FastDiv::new(m.max(1))).collect();
        let binom_div = (0..=h.max(kk))
            .flat_map(|n| (0..=k).map(move |r| (n, r)))
            .map(|(n, r)| FastDiv::new(binom.get(n, r).clamp(1, u64::MAX as u128) as u64))
            .collect();
        Ranker {
            k,
            h,
            binom,
            colex: Colex::new(),
            section_bc: (0..=k).flat_map(|b| (0..=k).map(move |c| (b as u8, c as u8))).collect(),
            bc_offset64: bc_offset.iter().map(|&o| o.min(u64::MAX as u128) as u64).collect(),
            bc_offset,
            minor_size,
            minor_offset,
            placements: total,
            centre64,
            corner64,
            placements_div,
            minor_div,
            binom_div,
            deposit: Deposit::new(),
        }
    }

    /// Division by `C(n, r)`.
    #[inline]
    fn binom_div(&self, n: usize, r: usize) -> &FastDiv {
        &self.binom_div[n * (self.k + 1) + r]
    }

    /// The (b, c) section of a rank within its player to move: the last one
    /// whose offset is at most `within` (empty sections share offsets).
    #[inline]
    fn section_of(&self, within: u64) -> usize {
        last_at_most(&self.bc_offset64, within)
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
    fn centre(&self, pieces: u128) -> u64 {
        (pieces as u64) & self.centre64
    }

    #[inline]
    fn corner(&self, pieces: u128, p: usize) -> u64 {
        ((pieces >> (self.h + 2 * self.k * p)) as u64) & self.corner64
    }

    /// The block holding every position whose player to move is `mover` and
    /// whose other two players are placed as in `pos` (the mover's own pieces
    /// in `pos` are ignored). Only meaningful when [`Ranker::fits_u64`].
    #[inline]
    pub fn block(&self, pos: &Position, mover: usize) -> PredecessorBlock {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let (o1, o2) = ((mover + 1) % 3, (mover + 2) % 3);
        let cb = self.centre(pos.pieces[o1]);
        let cc = self.centre(pos.pieces[o2]);
        let (b, c) = (cb.count_ones() as usize, cc.count_ones() as usize);
        let free_c = self.centre64 & !cb;
        let b64 = |n: usize, r: usize| self.colex.choose(n, r);
        let mut major = self.colex.rank(cb);
        major = major * b64(h - b, c) + self.colex.rank_within(cc, free_c);
        major = major * b64(kk, k - b) + self.colex.rank(self.corner(pos.pieces[o1], o1));
        major = major * b64(kk, k - c) + self.colex.rank(self.corner(pos.pieces[o2], o2));
        let section = b * (k + 1) + c;
        let base =
            mover as u64 * self.placements as u64 + self.bc_offset[section] as u64 + major * self.minor_size[section];
        PredecessorBlock { base, free: free_c & !cc, section, mover }
    }

    /// Rank of the position in `block` where the mover's pieces are `mover_pieces`.
    #[inline]
    pub fn minor(&self, block: &PredecessorBlock, mover_pieces: u128) -> u64 {
        let k = self.k;
        let ca = self.centre(mover_pieces);
        let a = ca.count_ones() as usize;
        let free_count = block.free.count_ones() as usize;
        let corner = self.colex.rank(self.corner(mover_pieces, block.mover));
        let centre = self.colex.rank_within(ca, block.free);
        block.base + self.minor_offset[block.section * (k + 1) + a] + corner * self.colex.choose(free_count, a) + centre
    }

    /// Calls `f` with the rank in `block` of each placement of the mover
    /// that is `pieces` with the piece on cell `v` standing on a cell of
    /// `origins` instead (empty cells of the mover's lanes): what
    /// [`Ranker::minor`] gives for each, at a fraction of its cost: the
    /// pieces that stay are ranked once ([`Colex::insertion_slots`], for the
    /// centre and for the corner), so an origin costs two popcounts and a
    /// lookup.
    #[inline]
    pub fn for_each_moved(
        &self,
        block: &PredecessorBlock,
        pieces: u128,
        v: usize,
        origins: u128,
        f: &mut impl FnMut(u64),
    ) {
        // The slots sized to the pieces that stay (at most k - 1, so k slots):
        // at orders 1 and 2 four, not the twelve the largest order needs, which
        // saves zeroing and summing eight unused slots twice per moved piece.
        if self.k < SMALL_SLOTS {
            self.for_each_moved_sized::<SMALL_SLOTS>(block, pieces, v, origins, f);
        } else {
            self.for_each_moved_sized::<COLEX_K>(block, pieces, v, origins, f);
        }
    }

    /// [`Ranker::for_each_moved`] with `N > k` insertion slots.
    #[inline(always)]
    fn for_each_moved_sized<const N: usize>(
        &self,
        block: &PredecessorBlock,
        pieces: u128,
        v: usize,
        origins: u128,
        f: &mut impl FnMut(u64),
    ) {
        let k = self.k;
        let others = pieces & !(1u128 << v);
        let centre = self.centre(others);
        let corner = self.corner(others, block.mover);
        let a = centre.count_ones() as usize;
        let free = block.free;
        let free_count = free.count_ones() as usize;
        let offsets = &self.minor_offset[block.section * (k + 1)..(block.section + 1) * (k + 1)];
        // Centre origins and corner origins in two loops, each part's slots
        // computed only when it has origins: which part an origin lies in is
        // a coin toss for the branch predictor, and many pieces have origins
        // in one part only. The order of the calls is unchanged (the centre's
        // cells are the low bits).
        let centre_origins = self.centre(origins);
        if centre_origins != 0 {
            // An origin in the centre adds a centre piece (the corner part stays).
            let slot = self.colex.insertion_slots::<N>(centre, free);
            let from = block.base + offsets[a + 1] + self.colex.rank(corner) * self.colex.choose(free_count, a + 1);
            let mut rest = centre_origins;
            while rest != 0 {
                let below = (rest & rest.wrapping_neg()) - 1;
                rest &= rest - 1;
                let s = (centre & below).count_ones() as usize;
                let at = (free & below).count_ones() as usize;
                f(from + slot[s] + self.colex.choose(at, s + 1));
            }
        }
        let corner_origins = self.corner(origins, block.mover);
        if corner_origins != 0 {
            // One in the corner keeps the centre part.
            let slot = self.colex.insertion_slots::<N>(corner, self.corner64);
            let from = block.base + offsets[a] + self.colex.rank_within(centre, free);
            let weight = self.colex.choose(free_count, a);
            let mut rest = corner_origins;
            while rest != 0 {
                let at = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let s = (corner & ((1u64 << at) - 1)).count_ones() as usize;
                f(from + (slot[s] + self.colex.choose(at, s + 1)) * weight);
            }
        }
    }

    /// Rank of a lane-legal position (every piece inside its player's lanes, `k`
    /// pieces each). Only meaningful when [`Ranker::fits_u64`].
    #[inline]
    pub fn rank(&self, pos: &Position) -> u64 {
        let mover = pos.turn as usize;
        self.minor(&self.block(pos, mover), pos.pieces[mover])
    }

    /// The player to move at `rank`, without decoding the placement.
    #[inline]
    pub fn turn_of(&self, rank: u64) -> u8 {
        self.placements_div.div(rank) as u8
    }

    /// Inverse of [`Ranker::rank`] for `rank < positions()`.
    #[inline]
    pub fn unrank(&self, rank: u64) -> Position {
        self.unrank_in_block(rank).0
    }

    /// The rank range of the block `rank` lies in (the positions with its
    /// player to move and its other two players' pieces), from the rank alone:
    /// two divisions by multiplication, no unranking.
    #[inline]
    pub fn block_range_of(&self, rank: u64) -> std::ops::Range<u64> {
        let within = self.placements_div.div_rem(rank).1;
        let section = self.section_of(within);
        let rest = within - self.bc_offset64[section];
        let base = rank - self.minor_div[section].div_rem(rest).1;
        base..base + self.minor_size[section]
    }

    /// [`Ranker::unrank`], and the block the rank lies in (what
    /// [`Ranker::block`] of the position for its own player to move gives),
    /// which unranking finds on the way.
    pub fn unrank_in_block(&self, rank: u64) -> (Position, PredecessorBlock) {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let (turn, within) = self.placements_div.div_rem(rank);
        let turn = turn as usize;
        let section = self.section_of(within);
        let (b, c) = self.section_bc[section];
        let (b, c) = (b as usize, c as usize);
        let rest = within - self.bc_offset64[section];
        let (mut major, minor) = self.minor_div[section].div_rem(rest);
        let base = rank - minor;
        let mut take = |n: &FastDiv| {
            let (q, d) = n.div_rem(major);
            major = q;
            d
        };
        let r_o2k = take(self.binom_div(kk, k - c));
        let r_o1k = take(self.binom_div(kk, k - b));
        let r_o2c = take(self.binom_div(h - b, c));
        let r_o1c = major;
        let cb = self.binom.unrank_subset(r_o1c, b, h);
        let free_c = self.centre64 & !cb;
        // The centre cells free of o1 (of o1 and o2) are the centre less a
        // few holes: spreading around the holes beats walking the free cells.
        let cc = self.deposit.around(self.binom.unrank_subset(r_o2c, c, h - b), cb);
        let free = free_c & !cc;
        let block = PredecessorBlock { base, free, section, mover: turn };
        let corner = |bits: u64, p: usize| (bits as u128) << (h + kk * p);
        let (o1, o2) = ((turn + 1) % 3, (turn + 2) % 3);
        let mut pieces = [0u128; 3];
        pieces[turn] = self.mover_in_block(&block, minor);
        pieces[o1] = cb as u128 | corner(self.binom.unrank_subset(r_o1k, k - b, kk), o1);
        pieces[o2] = cc as u128 | corner(self.binom.unrank_subset(r_o2k, k - c, kk), o2);
        (Position { pieces, turn: turn as u8 }, block)
    }

    /// The mover's pieces at position `minor` (counted from the block's first
    /// rank) of `block`: the part of unranking that differs between the
    /// positions of one block.
    #[inline]
    pub fn mover_in_block(&self, block: &PredecessorBlock, minor: u64) -> u128 {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let offsets = &self.minor_offset[block.section * (k + 1)..(block.section + 1) * (k + 1)];
        let a = last_at_most(offsets, minor);
        let free_count = block.free.count_ones() as usize;
        let (corner_a, centre_a) = self.binom_div(free_count, a).div_rem(minor - offsets[a]);
        // The free centre cells are the centre less the other players' few pieces.
        let ca = self.deposit.around(self.binom.unrank_subset(centre_a, a, free_count), self.centre64 & !block.free);
        ca as u128 | (self.binom.unrank_subset(corner_a, k - a, kk) as u128) << (h + kk * block.mover)
    }
}

/// Unranks positions that often share their block, as a scan in rank order
/// finds them: the last block's decoding is kept, and a rank in the same
/// block costs only the mover's pieces ([`Ranker::mover_in_block`]) instead
/// of a whole [`Ranker::unrank_in_block`].
#[derive(Clone, Debug, Default)]
pub struct BlockDecoder {
    /// The last position decoded, its block, and the block's rank range.
    last: Option<(Position, PredecessorBlock, std::ops::Range<u64>)>,
}

impl BlockDecoder {
    /// The position at `rank` and the block it lies in (as
    /// [`Ranker::unrank_in_block`] gives them).
    #[inline]
    pub fn decode(&mut self, ranker: &Ranker, rank: u64) -> (Position, &PredecessorBlock) {
        match &mut self.last {
            Some((pos, block, range)) if range.contains(&rank) => {
                pos.pieces[block.mover] = ranker.mover_in_block(block, rank - block.base);
            }
            last => {
                let (pos, block) = ranker.unrank_in_block(rank);
                *last = Some((pos, block, block.base..block.base + ranker.block_len(&block)));
            }
        }
        let (pos, block, _) = self.last.as_ref().expect("set above");
        (*pos, block)
    }
}

/// What the ranks of a position's children share: the child's player to move
/// and the player after it keep their pieces, only the player who moved
/// changes. [`Ranker::child_rank`] ranks a child from this in a little over
/// half the work of a full [`Ranker::rank`].
#[derive(Clone, Copy, Debug)]
pub struct ChildContext {
    /// The child's player to move.
    mover: usize,
    /// The player who just moved (the child's second other player).
    moved: usize,
    /// Centre cells of the child's first other player (the one after its mover).
    cb: u64,
    /// Its colex rank, its count, and the rank of its corner cells.
    cb_rank: u64,
    b: usize,
    o1_corner_rank: u64,
    /// Centre cells of the child's mover, their count and the rank of its corner cells.
    ca: u64,
    a: usize,
    mover_corner_rank: u64,
}

impl Ranker {
    /// Number of positions in `block` (they have consecutive ranks from `block.base`).
    #[inline]
    pub fn block_len(&self, block: &PredecessorBlock) -> u64 {
        self.minor_size[block.section]
    }

    /// Calls `f(rank, mover_pieces)` for every position of `block`, in rank
    /// order: the mover's pieces enumerated without dividing or unranking
    /// (colex order of a subset is the numeric order of its bitmask).
    /// `centres` is scratch space, kept by callers that walk many blocks.
    pub fn for_each_in_block(&self, block: &PredecessorBlock, centres: &mut Vec<u128>, mut f: impl FnMut(u64, u128)) {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let free = block.free;
        let free_count = free.count_ones() as usize;
        let corner_shift = h + kk * block.mover;
        let mut rank = block.base;
        for a in 0..=k.min(free_count) {
            // The centre subsets of size a, spread onto the free cells, once per a.
            centres.clear();
            for_each_subset(a, free_count, |bits| centres.push(pdep(bits, free) as u128));
            for_each_subset(k - a, kk, |corner| {
                let corner = (corner as u128) << corner_shift;
                for &c in centres.iter() {
                    f(rank, c | corner);
                    rank += 1;
                }
            });
        }
        debug_assert_eq!(rank, block.base + self.block_len(block));
    }

    /// The shared part of the ranks of `pos`'s children (the player to move in
    /// `pos` moves; the child has the next player to move).
    #[inline]
    pub fn child_context(&self, pos: &Position) -> ChildContext {
        let moved = pos.turn as usize;
        let mover = (moved + 1) % 3;
        let o1 = (moved + 2) % 3;
        let cb = self.centre(pos.pieces[o1]);
        let ca = self.centre(pos.pieces[mover]);
        ChildContext {
            mover,
            moved,
            cb,
            cb_rank: self.colex.rank(cb),
            b: cb.count_ones() as usize,
            o1_corner_rank: self.colex.rank(self.corner(pos.pieces[o1], o1)),
            ca,
            a: ca.count_ones() as usize,
            mover_corner_rank: self.colex.rank(self.corner(pos.pieces[mover], mover)),
        }
    }

    /// Rank of the child of `ctx`'s position in which the player who moved has
    /// the pieces `moved_pieces` (equal to [`Ranker::rank`] of that child).
    #[inline]
    pub fn child_rank(&self, ctx: &ChildContext, moved_pieces: u128) -> u64 {
        let (k, h) = (self.k, self.h);
        let kk = 2 * k;
        let b = ctx.b;
        let cc = self.centre(moved_pieces);
        let c = cc.count_ones() as usize;
        let free_c = self.centre64 & !ctx.cb;
        let free = free_c & !cc;
        let b64 = |n: usize, r: usize| self.colex.choose(n, r);
        let mut major = ctx.cb_rank;
        major = major * b64(h - b, c) + self.colex.rank_within(cc, free_c);
        major = major * b64(kk, k - b) + ctx.o1_corner_rank;
        major = major * b64(kk, k - c) + self.colex.rank(self.corner(moved_pieces, ctx.moved));
        let section = b * (k + 1) + c;
        let free_count = free.count_ones() as usize;
        ctx.mover as u64 * self.placements as u64
            + self.bc_offset[section] as u64
            + major * self.minor_size[section]
            + self.minor_offset[section * (k + 1) + ctx.a]
            + ctx.mover_corner_rank * b64(free_count, ctx.a)
            + self.colex.rank_within(ctx.ca, free)
    }
}

/// The index of the last entry of the sorted `offsets` that is at most `x`
/// (`offsets[0] <= x`), found by counting rather than by a binary search:
/// a rank's section is a coin toss for the branch predictor, and the tables
/// are short.
#[inline]
fn last_at_most(offsets: &[u64], x: u64) -> usize {
    offsets.iter().map(|&o| usize::from(o <= x)).sum::<usize>() - 1
}

/// Calls `f` with every `size`-subset of `0..universe` as a bitmask, in
/// increasing numeric order (Gosper's hack), which is colex order.
#[inline]
fn for_each_subset(size: usize, universe: usize, mut f: impl FnMut(u64)) {
    if size > universe {
        return;
    }
    if size == 0 {
        f(0);
        return;
    }
    let limit = 1u64 << universe;
    let mut s = (1u64 << size) - 1;
    while s < limit {
        f(s);
        s = next_colex(s);
    }
}

#[cfg(test)]
mod block_tests {
    use crate::cc3::{Cc3, children};
    use crate::sample::XorShift;

    /// Every block, enumerated, gives the ranks and positions that rank/unrank give.
    fn check_blocks(g: &Cc3, starts: impl Iterator<Item = u64>) {
        for r in starts {
            let pos = g.unrank(r);
            let block = g.ranker.block(&pos, pos.turn as usize);
            let len = g.ranker.block_len(&block);
            assert!(block.base <= r && r < block.base + len, "rank {r} outside its block");
            let mut expect = block.base;
            g.ranker.for_each_in_block(&block, &mut Vec::new(), |rank, mover| {
                assert_eq!(rank, expect);
                let mut p = pos;
                p.pieces[pos.turn as usize] = mover;
                assert_eq!(g.unrank(rank), p, "rank {rank}");
                expect += 1;
            });
            assert_eq!(expect, block.base + len);
        }
    }

    #[test]
    fn blocks_enumerate_in_rank_order() {
        let g = Cc3::new(1).unwrap();
        check_blocks(&g, 0..g.ranker.positions() as u64);
        let g = Cc3::new(2).unwrap();
        let n = g.ranker.positions() as u64;
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        check_blocks(&g, (0..200).map(|_| rng.next_u64() % n));
    }

    #[test]
    fn child_rank_equals_rank() {
        for order in [1, 2] {
            let g = Cc3::new(order).unwrap();
            let n = g.ranker.positions() as u64;
            let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
            for _ in 0..20_000 {
                let pos = g.unrank(rng.next_u64() % n);
                let ctx = g.ranker.child_context(&pos);
                for child in children(&g.star, &pos) {
                    assert_eq!(g.ranker.child_rank(&ctx, child.pieces[pos.turn as usize]), g.rank(&child));
                }
            }
        }
    }
}
