//! Game rules for the retrograde engine: boards, moves, ranking and symmetry.
//!
//! This crate is pure: no I/O, no threads. The engine sees a game only through
//! [`RetroGame`], a dense rank space `0..position_count()` where every rank can be
//! classified (illegal, terminal, or open with a move count) and where the
//! predecessors of a rank can be enumerated. Three-player Chinese checkers
//! lives in [`cc3`], two-player Chinese checkers in [`cc2`], and [`AnyGame`]
//! picks one at run time; [`binom`] holds the combinatorial tables the rankers share.
//! [`sylver`] holds Sylver coinage, which is solved by memoised search instead
//! (`retro_engine::sylver`). [`GameKind`] names the kinds of game.

mod any;
pub mod binom;
pub mod cc2;
pub mod cc3;
pub mod fastdiv;
mod jumps;
pub mod kind;
pub mod peg;
pub mod sample;
pub mod sylver;

pub use any::AnyGame;
pub use kind::{GameKind, JobKind};

/// What the init pass needs to know about one position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classification {
    /// A placement that cannot arise in play; it gets no value.
    Illegal,
    /// The game is over; `winner` is the player whose objective holds.
    Terminal {
        /// Index of the winning player.
        winner: u8,
    },
    /// The game goes on; `children` is the number of distinct successor positions
    /// (a forced pass counts as one child).
    Open {
        /// Number of distinct successors.
        children: u32,
        /// True when the player to move has no move and must pass (the one child
        /// is the pass).
        no_move: bool,
    },
}

/// A game the wavefront kernel can solve: a dense rank space with predecessors.
///
/// Implementations must guarantee that `for_each_predecessor(c)` yields every
/// `p` with an edge `p -> c` exactly once per edge, and that the number of edges
/// out of an open `p` equals its `children` count, so counters reach zero exactly
/// when every child is decided. A space folded by a symmetry may name an edge
/// `p -> c` from the predecessors of another rank `c'` instead, provided `c'`
/// has the same value as `c` and is decided in the same round (its symmetric
/// image, stored apart); each edge is still named exactly once (see
/// [`cc2::Cc2`]'s mirror fold).
pub trait RetroGame: Sync {
    /// Number of ranks; every rank in `0..position_count()` is a position.
    fn position_count(&self) -> u64;
    /// The player to move at `rank`.
    fn side_to_move(&self, rank: u64) -> u8;
    /// Illegal, terminal (and who won) or open (and how many children).
    fn classify(&self, rank: u64) -> Classification;
    /// Calls `f(i, classification)` for the ranks `first + i`, `i < len`, in
    /// order: what the move count pass runs over every rank. The default
    /// classifies each rank on its own; a game whose ranks come in blocks
    /// decodes each block once and walks its positions.
    fn classify_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, Classification)) {
        for i in 0..len {
            f(i, self.classify(first + i as u64));
        }
    }
    /// Calls `f` once for every edge into `rank`, with the predecessor's rank.
    /// Predecessors may be terminal or illegal; the kernel ignores decided ones.
    fn for_each_predecessor(&self, rank: u64, f: &mut impl FnMut(u64));
    /// The rank range that holds every predecessor of `rank`: its predecessor
    /// block. Blocks tile the rank space (two ranks' blocks are equal or
    /// disjoint), so a kernel can route a decided position to the owner of its
    /// block and apply different blocks on different threads without locks.
    /// The default, one block for the whole space, is correct for any game and
    /// gives no locality.
    fn predecessor_block(&self, _rank: u64) -> std::ops::Range<u64> {
        0..self.position_count()
    }
    /// What a decided position `rank` sends to the owner of its predecessor
    /// block: a value below 2^63 from which [`RetroGame::record_block`] and
    /// [`RetroGame::for_each_record_predecessor`] give the block and the
    /// predecessors of `rank`. A game can pick a record that is cheaper to
    /// decode than the rank (cc3 sends a rank inside the block); the default
    /// is the rank itself.
    fn frontier_record(&self, rank: u64) -> u64 {
        rank
    }
    /// The predecessor block of the position `record` stands for.
    fn record_block(&self, record: u64) -> std::ops::Range<u64> {
        self.predecessor_block(record)
    }
    /// [`RetroGame::frontier_record`] of `rank` and its
    /// [`RetroGame::record_block`], for a game that finds both at once.
    fn frontier_record_and_block(&self, rank: u64) -> (u64, std::ops::Range<u64>) {
        let record = self.frontier_record(rank);
        (record, self.record_block(record))
    }
    /// [`RetroGame::frontier_record_and_block`] of each of `ranks` (in
    /// increasing order, as a scan of the state finds them), as
    /// `f(i, record, block)` for `ranks[i]`. A game whose position can have
    /// predecessors in two blocks (the ranked game: the other racer moved, or
    /// the first finisher has just filled its goal) calls `f` once per block,
    /// each record naming the predecessors in its own block. A game whose consecutive ranks
    /// share most of their decoding (cc3: the other two players' pieces)
    /// keeps it from one rank to the next.
    fn frontier_records(&self, ranks: &[u64], f: &mut impl FnMut(usize, u64, std::ops::Range<u64>)) {
        for (i, &rank) in ranks.iter().enumerate() {
            let (record, block) = self.frontier_record_and_block(rank);
            f(i, record, block);
        }
    }
    /// [`RetroGame::for_each_predecessor`] of the position `record` stands for.
    fn for_each_record_predecessor(&self, record: u64, f: &mut impl FnMut(u64)) {
        self.for_each_predecessor(record, f)
    }
    /// [`RetroGame::for_each_record_predecessor`] of each of `records`, record
    /// after record in the order given: `on_record(i, mover)` first (`mover`:
    /// the player to move at every predecessor of `records[i]`, which share a
    /// block), then `on_predecessor(&context, p)` for each predecessor `p` of
    /// `records[i]`, with the `context` that call returned. The routed apply
    /// hands over a region's records sorted, so records of one block come
    /// together, and a game whose records in one block share most of their
    /// decoding (cc3: the other two players' pieces) keeps it from one record
    /// to the next. Two callbacks rather than one taking the record's index:
    /// what is done once a record stays out of the per-predecessor call, which
    /// stays small enough for the compiler to inline into the generation loop.
    fn for_each_records_predecessor<C>(
        &self,
        records: &[u64],
        on_record: &mut impl FnMut(usize, u8) -> C,
        on_predecessor: &mut impl FnMut(&C, u64),
    ) {
        for (i, &record) in records.iter().enumerate() {
            let context = on_record(i, self.side_to_move(self.record_block(record).start));
            self.for_each_record_predecessor(record, &mut |p| on_predecessor(&context, p));
        }
    }
    /// Whether [`RetroGame::for_each_records_predecessor`] gains from records
    /// sorted, so that the routed apply sorts each region's records first
    /// (cc3: 1.33x on a stage-2 slice). Sorting costs a cc2 round about 3 %
    /// for nothing, so the default is no.
    fn records_share_decoding(&self) -> bool {
        false
    }
    /// Calls `f` once per child of `rank` (none when terminal or illegal).
    fn for_each_child(&self, rank: u64, f: &mut impl FnMut(u64));
    /// True when every edge joins positions seen from opposite sides: a game
    /// folded by a symmetry that swaps the players stores every position with
    /// the same player to move, so a child's value counts for its parent
    /// negated (WIN as LOSS). Such a game needs three-valued questions.
    fn edges_negate(&self) -> bool {
        false
    }
    /// An upper bound on the children of any open position (the move count
    /// pass fails on a position with more). The kernel counts children in
    /// the codes up to it and gives the codes above to the rounds, so a tight
    /// bound keeps the depth of more rounds. The default knows no bound.
    fn max_children(&self) -> u32 {
        u32::MAX
    }
}

/// One two-sided question on a game graph: the players in `max_side` try to reach
/// a terminal won by `target`; everybody else opposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Question {
    /// Bit `p` set when player `p` is on the MAX side.
    pub max_side: u8,
    /// The player whose win is MAX's objective.
    pub target: u8,
    /// Three-valued (WIN / LOSS / DRAW) when set; otherwise two-valued (WIN or
    /// not): only WIN propagates, terminal positions without the objective are
    /// LOSS, and every other position that is not WIN stays undecided. The forced
    /// set is the same either way; two-valued needs far fewer updates.
    pub three_valued: bool,
}

impl Question {
    /// solo(X): player `x` alone, three-valued.
    pub fn solo(x: u8) -> Question {
        Question { max_side: 1 << x, target: x, three_valued: true }
    }

    /// enable(X>Y): `x` and `y` together for `y`'s win, two-valued.
    pub fn enable(x: u8, y: u8) -> Question {
        Question { max_side: (1 << x) | (1 << y), target: y, three_valued: false }
    }

    /// True when player `p` plays for MAX.
    pub fn is_max(&self, p: u8) -> bool {
        self.max_side & (1 << p) != 0
    }
}
