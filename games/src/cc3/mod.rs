//! Three-player Chinese checkers on the star of order n (RULES.md section 1).
//!
//! [`Star`] is the geometry, [`Position`] and [`destinations`] the move rules,
//! [`Ranker`] the dense rank space, and [`Cc3`] ties them into a [`RetroGame`].
//! The text notation is `A-cells/B-cells/C-cells turn`, cells by name
//! (see [`Cc3::board_picture`]), for example the order-1 start `e1/b4/b1 A`, as
//! printed by [`Cc3::format`].

mod notation;
mod position;
mod rank;
pub mod ranked;
mod star;

pub use notation::NotationError;
pub use position::{Outcome, Position, children, destinations, for_each_move, move_count};
pub use rank::{BlockDecoder, PredecessorBlock, Ranker};
pub use ranked::{Objective, RANKED_QUESTION, Ranked, Standing};
pub use star::{Cube, PLAYER_NAMES, Star};

use crate::{Classification, RetroGame};

/// Version of the cc3 rank order ([`Ranker`]). Tablebases, checkpoints and
/// workers record it: files written under another order would be read as a
/// silent permutation of the right values. Bump it whenever the order changes.
pub const RANK_ORDER: u32 = 2;

/// Three-player Chinese checkers of one star order, with its ranking tables.
pub struct Cc3 {
    /// Board geometry.
    pub star: Star,
    /// Rank/unrank tables.
    pub ranker: Ranker,
}

/// Error for a star order the program does not know.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("star order {0} is not supported (use 1, 2, 3 or 4)")]
pub struct BadOrder(pub u32);

impl Cc3 {
    /// Builds the game for star order `n` in 1..=4.
    pub fn new(n: u32) -> Result<Cc3, BadOrder> {
        if !(1..=4).contains(&n) {
            return Err(BadOrder(n));
        }
        let star = Star::new(n);
        let ranker = Ranker::new(&star);
        Ok(Cc3 { star, ranker })
    }

    /// The start position, A to move.
    pub fn start(&self) -> Position {
        Position::start(&self.star)
    }

    /// Rank of a position.
    #[inline]
    pub fn rank(&self, pos: &Position) -> u64 {
        self.ranker.rank(pos)
    }

    /// Position of a rank.
    #[inline]
    pub fn unrank(&self, rank: u64) -> Position {
        self.ranker.unrank(rank)
    }

    /// Rank of the rotated position (players relabelled A->B->C->A).
    pub fn rotate_rank(&self, rank: u64) -> u64 {
        self.rank(&self.unrank(rank).rotated(&self.star))
    }
}

impl RetroGame for Cc3 {
    fn position_count(&self) -> u64 {
        assert!(self.ranker.fits_u64(), "this order is too large to solve");
        self.ranker.positions() as u64
    }

    #[inline]
    fn side_to_move(&self, rank: u64) -> u8 {
        self.ranker.turn_of(rank)
    }

    fn classify(&self, rank: u64) -> Classification {
        self.classify_position(&self.unrank(rank))
    }

    /// Block by block: one unranking per block, then each position of the
    /// block from the mover's placements in rank order.
    fn classify_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, Classification)) {
        self.for_each_position_in_run(first, len, &mut |i, pos| f(i, self.classify_position(pos)));
    }

    fn for_each_predecessor(&self, rank: u64, f: &mut impl FnMut(u64)) {
        let pos = self.unrank(rank);
        let prev = (pos.turn + 2) % 3;
        let block = self.ranker.block(&pos, prev as usize);
        self.predecessors_in(&Position { pieces: pos.pieces, turn: prev }, &block, f);
    }

    /// The same placement with the previous player to move. It lies in the
    /// predecessor block (it is the rank of the pass, when there is one), and
    /// unranking it gives the block as well, so the owner of the block decodes
    /// one rank per record instead of unranking and computing the block.
    fn frontier_record(&self, rank: u64) -> u64 {
        self.frontier_record_and_block(rank).0
    }

    fn record_block(&self, record: u64) -> std::ops::Range<u64> {
        self.ranker.block_range_of(record)
    }

    fn frontier_record_and_block(&self, rank: u64) -> (u64, std::ops::Range<u64>) {
        self.record_of(&self.unrank(rank))
    }

    /// Consecutive frontier ranks often share their block (the other two
    /// players' pieces), so the block's decoding is kept and only the
    /// mover's pieces are decoded again.
    fn frontier_records(&self, ranks: &[u64], f: &mut impl FnMut(usize, u64, std::ops::Range<u64>)) {
        self.decode_in_blocks(ranks, |i, pos, _| {
            let (record, block) = self.record_of(pos);
            f(i, record, block);
        });
    }

    fn for_each_record_predecessor(&self, record: u64, f: &mut impl FnMut(u64)) {
        let (before, block) = self.ranker.unrank_in_block(record);
        self.predecessors_in(&before, &block, f);
    }

    fn records_share_decoding(&self) -> bool {
        true
    }

    fn max_children(&self) -> u32 {
        let s = &self.star;
        crate::jumps::move_bound(
            |c| s.neighbour[c].iter().filter(|&&n| n != star::NONE).count() as u32,
            &s.jumps,
            s.k as u32,
        )
    }

    /// Records of one block share the other two players' pieces: decoded
    /// as the scan's frontier ranks are ([`Cc3::decode_in_blocks`]).
    fn for_each_records_predecessor<C>(
        &self,
        records: &[u64],
        on_record: &mut impl FnMut(usize, u8) -> C,
        on_predecessor: &mut impl FnMut(&C, u64),
    ) {
        // `before` has the predecessors' player to move (the block's mover).
        self.decode_in_blocks(records, |i, before, block| {
            let context = on_record(i, before.turn);
            self.predecessors_in(before, block, &mut |p| on_predecessor(&context, p));
        });
    }

    fn predecessor_block(&self, rank: u64) -> std::ops::Range<u64> {
        self.frontier_record_and_block(rank).1
    }

    fn for_each_child(&self, rank: u64, f: &mut impl FnMut(u64)) {
        self.for_each_child_of(&self.unrank(rank), f);
    }
}

impl Cc3 {
    /// Calls `f(i, position)` for the ranks `first + i`, `i < len`, in
    /// order, block by block: one unranking per block, then each position of
    /// the block from the mover's placements in rank order (what the move
    /// count pass of any game on this rank space walks).
    pub fn for_each_position_in_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, &Position)) {
        let end = first + len as u64;
        let mut next = first;
        let mut centres = Vec::new();
        while next < end {
            let (pos, block) = self.ranker.unrank_in_block(next);
            let turn = pos.turn as usize;
            self.ranker.for_each_in_block(&block, &mut centres, |rank, mover| {
                if (next..end).contains(&rank) {
                    let mut at = pos;
                    at.pieces[turn] = mover;
                    f((rank - first) as usize, &at);
                }
            });
            next = block.base + self.ranker.block_len(&block);
        }
    }

    /// Calls `f` with the rank of each child of `pos`, in [`children`]'s
    /// order: the children differ from `pos` only in the mover's pieces, so
    /// each costs only that part of a rank (no position built, nothing
    /// allocated).
    #[inline]
    pub fn for_each_child_of(&self, pos: &Position, mut f: impl FnMut(u64)) {
        if pos.outcome(&self.star) != Outcome::Ongoing {
            return;
        }
        let p = pos.turn as usize;
        let ctx = self.ranker.child_context(pos);
        let mut moved = false;
        for_each_move(&self.star, &pos.pieces, p, &mut |from, to| {
            moved = true;
            f(self.ranker.child_rank(&ctx, pos.pieces[p] ^ ((1u128 << from) | (1u128 << to))));
        });
        // The pass: the same placement, the next player to move.
        if !moved {
            f(self.ranker.child_rank(&ctx, pos.pieces[p]));
        }
    }

    /// Calls `f(i, position, block)` for each of `ranks`, keeping a block's
    /// decoding while consecutive ranks lie in it (the other two players'
    /// pieces) and decoding only the mover's pieces again.
    fn decode_in_blocks(&self, ranks: &[u64], mut f: impl FnMut(usize, &Position, &rank::PredecessorBlock)) {
        let mut decoder = BlockDecoder::default();
        for (i, &rank) in ranks.iter().enumerate() {
            let (pos, block) = decoder.decode(&self.ranker, rank);
            f(i, &pos, block);
        }
    }

    /// The frontier record of a position and its predecessors' block.
    #[inline]
    fn record_of(&self, pos: &Position) -> (u64, std::ops::Range<u64>) {
        let prev = (pos.turn as usize + 2) % 3;
        let block = self.ranker.block(pos, prev);
        let record = self.ranker.minor(&block, pos.pieces[prev]);
        (record, block.base..block.base + self.ranker.block_len(&block))
    }

    /// [`RetroGame::classify`] of a position.
    #[inline]
    fn classify_position(&self, pos: &Position) -> Classification {
        match pos.outcome(&self.star) {
            Outcome::Illegal => Classification::Illegal,
            Outcome::Won(p) => Classification::Terminal { winner: p },
            Outcome::Ongoing => {
                let moves = move_count(&self.star, &pos.pieces, pos.turn as usize);
                // A player with no move passes: one child.
                Classification::Open { children: moves.max(1), no_move: moves == 0 }
            }
        }
    }

    /// The predecessors of the position whose placement is `before`'s with the
    /// next player to move: `before.turn` moved last. All lie in `block`.
    #[inline]
    fn predecessors_in(&self, before: &Position, block: &rank::PredecessorBlock, f: &mut impl FnMut(u64)) {
        let p = before.turn as usize;
        // Moves are reversible: the previous player's piece moved from u to v
        // exactly when, here, it can move from v back to u. Every predecessor
        // keeps the other two players' pieces, so only the mover's part is
        // ranked per move, and of that only the moved piece.
        let occupied = before.occupied();
        let mut own = before.pieces[p];
        let mut moved = false;
        while own != 0 {
            let v = own.trailing_zeros() as usize;
            own &= own - 1;
            let origins = destinations(&self.star, p, occupied, v);
            if origins != 0 {
                moved = true;
                self.ranker.for_each_moved(block, before.pieces[p], v, origins, f);
            }
        }
        // The pass: the same placement with the previous player to move, when
        // that player had no move there and the game was not over.
        if !moved && before.outcome(&self.star) == Outcome::Ongoing {
            f(self.ranker.minor(block, before.pieces[p]));
        }
    }
}

/// Parses a question name: `solo(X)` or `enable(X>Y)`, X and Y in A, B, C,
/// or for the ranked game `top2(X)` (its `solo(X)`, [`Ranked`]).
pub fn parse_question(name: &str) -> Option<crate::Question> {
    let player = |c: &str| PLAYER_NAMES.iter().position(|p| c.len() == 1 && c.starts_with(*p)).map(|p| p as u8);
    if let Some(x) = name.strip_prefix("top2(").and_then(|s| s.strip_suffix(')')) {
        return Some(crate::Question::solo(player(x)?));
    }
    if let Some(x) = name.strip_prefix("solo(").and_then(|s| s.strip_suffix(')')) {
        let x = player(x)?;
        return Some(crate::Question::solo(x));
    }
    let inner = name.strip_prefix("enable(")?.strip_suffix(')')?;
    let (x, y) = inner.split_once('>')?;
    let (x, y) = (player(x)?, player(y)?);
    (x != y).then_some(crate::Question::enable(x, y))
}

#[cfg(test)]
mod tests;
