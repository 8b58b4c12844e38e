//! The ranked game (docs/RANKED.md): play goes on after the first player
//! fills its goal, that player's turns are skipped, and the first of the
//! other two to fill its goal takes second place, which ends the game.
//!
//! The rank space is [`Cc3`]'s (every lane-restricted placement with a player
//! to move); only the classification and the edges differ:
//! - no goal full: the stage game, unchanged;
//! - one goal full (its owner finished first): live when one of the other two
//!   is to move (the owner to move is illegal); a move alternates between
//!   those two, except a move that fills the mover's goal, whose child is the
//!   placement with two full goals and the mover named as the player to move;
//! - two goals full: terminal when the player-to-move field names one of
//!   them, who is then the second finisher, the other the first; illegal
//!   when it names the third player. Three full goals are illegal.
//!
//! [`Ranked`] is that graph for one objective, `top2(X)`: X finishes first or
//! second. X's question is decided the moment X fills its goal (first or
//! second, whatever the other two play after), so every position where X has
//! finished is a terminal won by X, and the two-finisher terminals without X
//! name another winner: the stage's forcing question `solo(X)` on this graph
//! is `top2(X)`. Restricted to the positions where Z finished first, it is
//! the race for second place between X and the third player. The game as it
//! is played, objective aside, is [`Ranked::standing`] and
//! [`Ranked::for_each_move_of`].

use super::{Cc3, Position, destinations, for_each_move, move_count};
use crate::{Classification, RetroGame};

/// Where a position stands in the ranked game (whatever the objective).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// No position of the ranked game (a finished player to move, or three goals full).
    Illegal,
    /// Nobody, or one player, has finished, and another is to move.
    Live,
    /// Two players have finished: the game is over.
    Over {
        /// The first finisher (1st place).
        first: u8,
        /// The second (2nd place; the third player is last).
        second: u8,
    },
}

/// What a cc3 job's terminals are: the first finisher wins (the stage
/// game), or play goes on for second place (this module's game).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// The stage game: the first to fill its goal wins and the game ends.
    #[default]
    FirstWinner,
    /// The ranked game: play goes on until a second player has finished.
    Ranked,
}

impl Objective {
    /// The plan's name of the objective.
    pub fn name(self) -> &'static str {
        match self {
            Objective::FirstWinner => "first-winner",
            Objective::Ranked => "ranked",
        }
    }

    /// The objective a plan names, if it is one.
    pub fn parse(name: &str) -> Option<Objective> {
        [Objective::FirstWinner, Objective::Ranked].into_iter().find(|o| o.name() == name)
    }

    /// True for the stage game (what specs and plans that do not name an
    /// objective mean, so that their bytes and hashes stay as they were).
    pub fn is_first_winner(&self) -> bool {
        *self == Objective::FirstWinner
    }
}

/// The one layer a ranked job computes: top2(A). top2(B) and top2(C) are
/// its values at the rotated ranks, and every race value is a top2 value.
pub const RANKED_QUESTION: &str = "top2(A)";

/// The ranked game of one star order, for the objective of one player.
pub struct Ranked {
    /// The stage game whose rank space and moves this one uses.
    pub cc3: Cc3,
    /// The player whose finish in the first two is the terminals' win.
    pub objective: u8,
}

impl Ranked {
    /// The ranked game of star order `n` for `top2(objective)`.
    pub fn new(n: u32, objective: u8) -> Result<Ranked, super::BadOrder> {
        assert!(objective < 3, "a player is 0, 1 or 2");
        Ok(Ranked { cc3: Cc3::new(n)?, objective })
    }

    /// The players whose goal is full, as bits.
    #[inline]
    pub fn finished(&self, pos: &Position) -> u8 {
        let star = &self.cc3.star;
        (0..3).filter(|&p| pos.pieces[p] & star.goal_mask[p] == star.goal_mask[p]).fold(0, |acc, p| acc | 1 << p)
    }

    /// Where a position stands in the ranked game, whatever the objective.
    pub fn standing(&self, pos: &Position) -> Standing {
        Ranked::standing_of(self.finished(pos), pos.turn)
    }

    /// [`Ranked::standing`] of a position whose finished players are `done`
    /// (bits, [`Ranked::finished`]) with `mover` to move: nothing else of the
    /// placement decides it.
    pub fn standing_of(done: u8, mover: u8) -> Standing {
        if Ranked::is_live(done, mover) {
            return Standing::Live;
        }
        match done.count_ones() {
            2 if done & (1 << mover) != 0 => {
                Standing::Over { first: (done & !(1 << mover)).trailing_zeros() as u8, second: mover }
            }
            _ => Standing::Illegal,
        }
    }

    /// Classification of one position for top2(objective) (see the module
    /// docs): once the objective's player has finished, first or second, its
    /// question is decided whatever the others still play.
    pub fn classify_position(&self, pos: &Position) -> Classification {
        let objective = self.objective;
        match self.standing(pos) {
            Standing::Illegal => Classification::Illegal,
            Standing::Over { first, second } => {
                let placed = first == objective || second == objective;
                Classification::Terminal { winner: if placed { objective } else { second } }
            }
            Standing::Live if self.finished(pos) & (1 << objective) != 0 => {
                Classification::Terminal { winner: objective }
            }
            Standing::Live => self.open(pos),
        }
    }

    /// True when the objective's player has finished: its question is
    /// decided, and the position has no children in [`Ranked`]'s graph.
    #[inline]
    fn objective_done(&self, done: u8) -> bool {
        done & (1 << self.objective) != 0
    }

    /// True when the position whose finished players are `done` is live
    /// with `mover` to move: nobody finished, or one did and another moves.
    #[inline]
    fn is_live(done: u8, mover: u8) -> bool {
        done == 0 || (done.count_ones() == 1 && done & (1 << mover) == 0)
    }

    /// A live position: one child per move, or the pass.
    fn open(&self, pos: &Position) -> Classification {
        let moves = move_count(&self.cc3.star, &pos.pieces, pos.turn as usize);
        Classification::Open { children: moves.max(1), no_move: moves == 0 }
    }

    /// The player who moves after `mover` when the players in `done` have
    /// finished (one at most is finished in a live position).
    #[inline]
    fn next_after(mover: u8, done: u8) -> u8 {
        let next = (mover + 1) % 3;
        if done & (1 << next) != 0 { (next + 1) % 3 } else { next }
    }

    /// Calls `f` with every child of an open position of top2(objective)'s
    /// graph: [`Ranked::for_each_move_of`], except where the objective's
    /// player has finished (decided, no children).
    pub fn for_each_child_of(&self, pos: &Position, f: &mut impl FnMut(Position)) {
        if !self.objective_done(self.finished(pos)) {
            self.for_each_move_of(pos, f);
        }
    }

    /// Calls `f` with the position after each move of a live position of the
    /// ranked game (or its pass), whatever the objective: the game as it is
    /// played, which a search from the start follows.
    pub fn for_each_move_of(&self, pos: &Position, f: &mut impl FnMut(Position)) {
        let (done, mover) = (self.finished(pos), pos.turn);
        if !Ranked::is_live(done, mover) {
            return;
        }
        let star = &self.cc3.star;
        let next = Ranked::next_after(mover, done);
        let m = mover as usize;
        let mut moved = false;
        for_each_move(star, &pos.pieces, m, &mut |from, to| {
            moved = true;
            let mut pieces = pos.pieces;
            pieces[m] ^= (1u128 << from) | (1u128 << to);
            // A move that fills the mover's goal after another finished ends
            // the game: the mover, second, is named to move.
            let filled = pieces[m] & star.goal_mask[m] == star.goal_mask[m];
            let turn = if done != 0 && filled { mover } else { next };
            f(Position { pieces, turn });
        });
        if !moved {
            f(Position { pieces: pos.pieces, turn: next });
        }
    }

    /// Calls `f` with every position that has an edge into `pos` (each edge
    /// once). Moves are reversible: a piece moved from u to v exactly when,
    /// in `pos`, it can move from v back to u.
    pub fn for_each_predecessor_of(&self, pos: &Position, f: &mut impl FnMut(Position)) {
        let done = self.finished(pos);
        let mover = pos.turn;
        let mover_done = done & (1 << mover) != 0;
        match (done.count_ones(), mover_done) {
            // The stage game: the previous player moved or passed.
            (0, _) => self.unmoves(pos, (mover + 2) % 3, 0, true, f),
            (1, false) => {
                let first = done.trailing_zeros() as u8;
                // The other player still racing moved (or passed) ...
                let other = 3 - first - mover;
                self.unmoves(pos, other, done, true, f);
                // ... or the first finisher has just filled its goal, when it
                // is the player before the mover.
                if (mover + 2) % 3 == first {
                    self.unmoves(pos, first, 0, false, f);
                }
            }
            // The second finisher's filling move.
            (2, true) => self.unmoves(pos, mover, done & !(1 << mover), false, f),
            _ => {}
        }
    }

    /// The positions where `player` was to move, its goal was not yet full,
    /// the finished players were those of `before_done`, and one of its
    /// moves (or, when `pass`, its pass) gave `pos`.
    fn unmoves(&self, pos: &Position, player: u8, before_done: u8, pass: bool, f: &mut impl FnMut(Position)) {
        // A position where the objective's player has finished is decided:
        // it has no edge to anything.
        if self.objective_done(before_done) {
            return;
        }
        let star = &self.cc3.star;
        let p = player as usize;
        let occupied = pos.occupied();
        let mut own = pos.pieces[p];
        let mut moved = false;
        while own != 0 {
            let v = own.trailing_zeros() as usize;
            own &= own - 1;
            let mut origins = destinations(star, p, occupied, v);
            moved |= origins != 0;
            while origins != 0 {
                let u = origins.trailing_zeros() as usize;
                origins &= origins - 1;
                let mut pieces = pos.pieces;
                pieces[p] ^= (1u128 << u) | (1u128 << v);
                let before = Position { pieces, turn: player };
                if self.finished(&before) == before_done {
                    f(before);
                }
            }
        }
        // The pass: the same placement, when the player had no move there.
        if pass && !moved && self.finished(pos) == before_done {
            f(Position { pieces: pos.pieces, turn: player });
        }
    }

    /// Calls `f(record, block)` once for each predecessor block of `pos`
    /// (docs/RANKED.md, "Predecessor blocks"): the record is the rank of the
    /// same placement with the block's player to move, the one who moved
    /// last. Positions with one finisher, the player after it to move, have
    /// two: the other racer moved, or the finisher has just filled its goal.
    #[inline]
    fn records_of(&self, pos: &Position, f: &mut impl FnMut(u64, std::ops::Range<u64>)) {
        let ranker = &self.cc3.ranker;
        let mut send = |mover: u8| {
            let block = ranker.block(pos, mover as usize);
            let record = ranker.minor(&block, pos.pieces[mover as usize]);
            f(record, block.base..block.base + ranker.block_len(&block));
        };
        let (done, turn) = (self.finished(pos), pos.turn);
        let previous = (turn + 2) % 3;
        match done.count_ones() {
            0 => send(previous),
            1 if done & (1 << turn) == 0 => {
                let first = done.trailing_zeros() as u8;
                send(3 - first - turn);
                if previous == first {
                    send(first);
                }
            }
            2 if done & (1 << turn) != 0 => send(turn),
            // Illegal: never decided, so never a frontier position.
            _ => {}
        }
    }

    /// The predecessors named by a record (see [`Ranked::records_of`]):
    /// `before` is the record's position, its player to move the one who
    /// moved, and every predecessor lies in `block`. That player's goal was
    /// not full before its move; when the record's placement has it
    /// unfinished and at most one finisher, a pass into it is one more.
    #[inline]
    fn record_predecessors(&self, before: &Position, block: &super::PredecessorBlock, f: &mut impl FnMut(u64)) {
        let star = &self.cc3.star;
        let p = before.turn as usize;
        let goal = star.goal_mask[p];
        let done = self.finished(before);
        // The other players keep their pieces: when the objective's player is
        // one of them and has finished, every predecessor is decided.
        if p != self.objective as usize && self.objective_done(done) {
            return;
        }
        let occupied = before.occupied();
        let mut own = before.pieces[p];
        let mut moved = false;
        while own != 0 {
            let v = own.trailing_zeros() as usize;
            own &= own - 1;
            let mut origins = destinations(star, p, occupied, v);
            moved |= origins != 0;
            // The goal cells the player lacks once the piece on v is lifted:
            // none, and every origin had its goal full; one, and that origin did.
            let missing = goal & !(before.pieces[p] & !(1u128 << v));
            if missing == 0 {
                continue;
            }
            if missing & (missing - 1) == 0 {
                origins &= !missing;
            }
            if origins != 0 {
                self.cc3.ranker.for_each_moved(block, before.pieces[p], v, origins, f);
            }
        }
        if !moved && done & (1 << p) == 0 && done.count_ones() <= 1 {
            f(self.cc3.ranker.minor(block, before.pieces[p]));
        }
    }

    /// Rank of the rotated position (players relabelled A->B->C->A,
    /// [`Cc3::rotate_rank`]): top2(A) at a rank is top2(B) at its image.
    pub fn rotate_rank(&self, rank: u64) -> u64 {
        self.cc3.rotate_rank(rank)
    }
}

impl RetroGame for Ranked {
    fn position_count(&self) -> u64 {
        self.cc3.position_count()
    }

    #[inline]
    fn side_to_move(&self, rank: u64) -> u8 {
        self.cc3.side_to_move(rank)
    }

    fn classify(&self, rank: u64) -> Classification {
        self.classify_position(&self.cc3.unrank(rank))
    }

    fn classify_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, Classification)) {
        self.cc3.for_each_position_in_run(first, len, &mut |i, pos| f(i, self.classify_position(pos)));
    }

    fn for_each_predecessor(&self, rank: u64, f: &mut impl FnMut(u64)) {
        self.for_each_predecessor_of(&self.cc3.unrank(rank), &mut |p| f(self.cc3.rank(&p)));
    }

    /// The first of the position's records ([`Ranked::records_of`]); only
    /// [`RetroGame::frontier_records`], which the routed round uses, names
    /// the second block of a position that has two.
    fn frontier_record(&self, rank: u64) -> u64 {
        self.frontier_record_and_block(rank).0
    }

    fn record_block(&self, record: u64) -> std::ops::Range<u64> {
        self.cc3.ranker.block_range_of(record)
    }

    fn frontier_record_and_block(&self, rank: u64) -> (u64, std::ops::Range<u64>) {
        let mut first = None;
        self.records_of(&self.cc3.unrank(rank), &mut |record, block| {
            first.get_or_insert((record, block));
        });
        first.unwrap_or((rank, rank..rank + 1))
    }

    fn frontier_records(&self, ranks: &[u64], f: &mut impl FnMut(usize, u64, std::ops::Range<u64>)) {
        self.cc3.decode_in_blocks(ranks, |i, pos, _| self.records_of(pos, &mut |record, block| f(i, record, block)));
    }

    fn for_each_record_predecessor(&self, record: u64, f: &mut impl FnMut(u64)) {
        let (before, block) = self.cc3.ranker.unrank_in_block(record);
        self.record_predecessors(&before, &block, f);
    }

    fn records_share_decoding(&self) -> bool {
        true
    }

    /// The stage game's moves: the same bound.
    fn max_children(&self) -> u32 {
        self.cc3.max_children()
    }

    fn for_each_records_predecessor<C>(
        &self,
        records: &[u64],
        on_record: &mut impl FnMut(usize, u8) -> C,
        on_predecessor: &mut impl FnMut(&C, u64),
    ) {
        self.cc3.decode_in_blocks(records, |i, before, block| {
            let context = on_record(i, before.turn);
            self.record_predecessors(before, block, &mut |p| on_predecessor(&context, p));
        });
    }

    fn for_each_child(&self, rank: u64, f: &mut impl FnMut(u64)) {
        self.for_each_child_of(&self.cc3.unrank(rank), &mut |c| f(self.cc3.rank(&c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every edge the children name is named once by the predecessors, and
    /// no other: the counters of the kernel reach zero exactly when they
    /// should. And the child count is the classification's.
    #[test]
    fn predecessors_are_exactly_the_reversed_children() {
        for objective in 0..3 {
            let g = Ranked::new(1, objective).unwrap();
            let n = g.position_count();
            let mut forward = Vec::new();
            for r in 0..n {
                let mut count = 0;
                g.for_each_child(r, &mut |c| {
                    forward.push((r, c));
                    count += 1;
                });
                match g.classify(r) {
                    Classification::Open { children, .. } => assert_eq!(children, count, "rank {r}"),
                    _ => assert_eq!(count, 0, "rank {r}"),
                }
            }
            let mut backward = Vec::new();
            for c in 0..n {
                g.for_each_predecessor(c, &mut |p| backward.push((p, c)));
            }
            forward.sort_unstable();
            backward.sort_unstable();
            assert_eq!(forward, backward);
            // The ranked graph has edges the stage game lacks: out of the
            // positions with one finisher.
            let with_one_finisher =
                forward.iter().filter(|&&(p, _)| g.finished(&g.cc3.unrank(p)).count_ones() == 1).count();
            assert!(with_one_finisher > 0);
        }
    }

    /// The records a decided position sends name, together, exactly its
    /// predecessors, each within the record's block: the routed round's
    /// path and the plain one agree.
    #[test]
    fn records_name_exactly_the_predecessors() {
        for (n, objective) in [(1, 0), (1, 1), (1, 2), (2, 0)] {
            let g = Ranked::new(n, objective).unwrap();
            let count = g.position_count();
            let step = if n == 1 { 1 } else { 9_973 };
            let mut two_blocks = 0;
            for r in (0..count).step_by(step) {
                let mut plain = Vec::new();
                g.for_each_predecessor(r, &mut |p| plain.push(p));
                let mut routed = Vec::new();
                let mut blocks = 0;
                g.frontier_records(&[r], &mut |_, record, block| {
                    blocks += 1;
                    assert_eq!(g.record_block(record), block, "rank {r}");
                    g.for_each_record_predecessor(record, &mut |p| {
                        assert!(block.contains(&p), "rank {r}: predecessor {p} outside its block");
                        routed.push(p);
                    });
                });
                two_blocks += usize::from(blocks == 2);
                plain.sort_unstable();
                routed.sort_unstable();
                if matches!(g.classify(r), Classification::Illegal) {
                    continue;
                }
                assert_eq!(plain, routed, "rank {r}");
            }
            assert!(two_blocks > 0, "order {n}: no position with two blocks was sampled");
        }
    }

    /// The block-by-block classification is the rank-by-rank one.
    #[test]
    fn the_classification_run_is_the_classification() {
        let g = Ranked::new(1, 2).unwrap();
        let n = g.position_count();
        let mut run = Vec::new();
        g.classify_run(0, n as usize, &mut |_, c| run.push(c));
        let each: Vec<_> = (0..n).map(|r| g.classify(r)).collect();
        assert_eq!(run, each);
    }

    /// The game with no goal full is the stage game: the same children.
    #[test]
    fn before_the_first_finish_it_is_the_stage_game() {
        let g = Ranked::new(1, 0).unwrap();
        for r in 0..g.position_count() {
            let pos = g.cc3.unrank(r);
            if g.finished(&pos) != 0 {
                continue;
            }
            let (mut ours, mut stage) = (Vec::new(), Vec::new());
            g.for_each_child(r, &mut |c| ours.push(c));
            g.cc3.for_each_child(r, &mut |c| stage.push(c));
            assert_eq!(ours, stage, "rank {r}");
        }
    }
}
