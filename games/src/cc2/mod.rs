//! Two-player Chinese checkers on the m x m diamond (Sturtevant 2019; RULES.md
//! section 2): [`Board`] is the geometry, [`Position`] the move rules, [`Cc2`]
//! the dense rank space as a [`RetroGame`].
//!
//! Rank order: `turn * P + major * K + minor`, where `major` is the colex rank
//! of the waiting player's pieces among all cells (`C(n, p)` values) and `minor`
//! the rank of the mover's pieces among the remaining cells (`K = C(n-p, p)`).
//! Every predecessor of a position keeps the pieces of the player now to move,
//! who waited then, so all predecessors lie in one block of `K` ranks and cost
//! only a minor rank each.
//!
//! Folded by colour symmetry (the default of the plans), the rank space holds
//! only the positions with player 1 to move (`turn = 0`, half the space): a
//! position with player 2 to move is its mirror image ([`Position::mirrored`]),
//! whose value for player 1 is the negation of the original's, so every edge
//! negates ([`RetroGame::edges_negate`]), as in a negamax search.
//!
//! Folded also by the mirror ([`Board::mirror`], on boards whose start areas
//! are symmetric), the blocks are those of the waiting player's placements
//! up to the mirror: the smaller colex rank of a placement and its image
//! stands for both ([`Folding`] says which folds a space uses). A position
//! whose waiting placement is its own mirror image is stored as it is, beside
//! its image.
//!
//! Text notation: `player-1-cells/player-2-cells turn`, cells by name, for
//! example the 7 x 7, 1-piece start `a1/g7 1`.

mod board;
#[cfg(test)]
mod tests;

pub use board::{BadBoard, Blockade, Board, MAX_PIECES, MAX_SIZE, MIN_SIZE, Part2, max_pieces};

use crate::binom::{Binomials, COLEX_K, Colex, Deposit, next_colex};
use crate::fastdiv::FastDiv;
use crate::{Classification, Question, RetroGame};

/// Version of the cc2 rank order (see [`crate::cc3::RANK_ORDER`] for why it is
/// recorded). Bump it whenever the order changes.
pub const RANK_ORDER: u32 = 1;

/// Version of the rank order of a space folded by the mirror (a different
/// order over fewer ranks: a program that knew only [`RANK_ORDER`] would read
/// its files and jobs wrongly, so it must refuse them).
pub const RANK_ORDER_MIRRORED: u32 = 2;

/// The rank order a space folded by `folding` uses.
pub fn rank_order_of(folding: Folding) -> u32 {
    if folding.mirror { RANK_ORDER_MIRRORED } else { RANK_ORDER }
}

/// Names of the two players in notation and summaries.
pub const PLAYER_NAMES: [&str; 2] = ["1", "2"];

/// Largest subset table built for unranking (entries); larger spaces unrank by search.
const MAX_TABLE: u64 = 1 << 23;

/// A placement with the player to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    /// Cells of player 1 (index 0) and player 2 (index 1).
    pub pieces: [u64; 2],
    /// Player to move, 0 or 1.
    pub turn: u8,
}

/// The state of a position before any move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The player to move already meets its win condition: cannot arise.
    Illegal,
    /// The player who just moved has won.
    Won(u8),
    /// Play goes on (a player without a move loses; see [`Cc2::classify`]).
    Ongoing,
}

/// The symmetries that fold a rank space. Neither changes a result; each
/// halves the positions stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Folding {
    /// Colour symmetry: only player 1 to move is stored.
    pub colour: bool,
    /// The mirror ([`Board::mirror`]): a position and its mirror image share
    /// one rank unless the waiting player's placement is symmetric.
    pub mirror: bool,
}

/// A two-player game that cannot be built as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Cc2Error {
    /// The board size or piece count is out of range.
    #[error(transparent)]
    Board(#[from] BadBoard),
    /// The mirror fold was asked for on a board whose rules it does not keep.
    #[error(
        "the {size} x {size} board with {pieces} pieces has no mirror symmetry (its start areas are not \
         symmetric; mirror_symmetry needs 1, 3 or 4 pieces)"
    )]
    NoMirror {
        /// Board side.
        size: u32,
        /// Pieces per player.
        pieces: u32,
    },
}

/// The mirror fold's blocks: the waiting player's placements up to the mirror.
struct MirrorBlocks {
    /// Per colex rank of a placement: the block index of its class, with
    /// [`MirrorBlocks::FLIP`] set when the placement is the mirror image of
    /// the block's own placement.
    index: Vec<u32>,
    /// Per block: its placement is its own mirror image, so it stores each
    /// position and its mirror image apart.
    symmetric: Vec<bool>,
}

impl MirrorBlocks {
    const FLIP: u32 = 1 << 31;

    /// The block index of a placement's class and whether the placement is
    /// the mirror image of the block's.
    #[inline]
    fn lookup(&self, colex: u64) -> (u64, bool) {
        let v = self.index[colex as usize];
        ((v & !Self::FLIP) as u64, v & Self::FLIP != 0)
    }
}

/// Two-player Chinese checkers of one size, with its ranking tables.
pub struct Cc2 {
    /// Board geometry and start areas.
    pub board: Board,
    binom: Binomials,
    /// Positions per side to move, `C(n, p) * C(n - p, p)`.
    per_turn: u64,
    /// Ranks per block (one placement of the waiting player), `C(n - p, p)`.
    block: u64,
    /// Division by `per_turn` and by `block` (unranking runs several times per
    /// decided position in every round; a hardware division is slow).
    per_turn_div: FastDiv,
    block_div: FastDiv,
    /// Every p-subset of the n cells in colex order (when small enough);
    /// folded by the mirror, the block placements (always built).
    major_table: Vec<u64>,
    /// Every p-subset of n - p elements in colex order (when small enough).
    minor_table: Vec<u64>,
    /// Folded by colour symmetry: only player 1 to move is stored.
    folded: bool,
    /// Folded by the mirror: the block tables.
    mirror: Option<MirrorBlocks>,
    /// Colex ranks from the dense table (one lookup per predecessor).
    colex: Colex,
    /// Spreads the mover's packed placement around the waiting pieces (the
    /// CPU's `pdep` where it is fast): once per frontier position and record.
    deposit: Deposit,
}

/// Subset sizes a placement ranks with: up to a placement and one more.
const CHOOSE_K: usize = board::MAX_PIECES as usize + 2;
const _: () = assert!(CHOOSE_K <= COLEX_K);
/// Insertion slots for up to four pieces (every plan's size).
const SMALL_SLOTS: usize = 4;

/// A position text that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("bad position {text:?}: {why} (expected `CELLS/CELLS TURN`, e.g. `a1/g7 1`)")]
pub struct NotationError {
    /// The text.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl Position {
    /// What the position is before any move: illegal, won, or going on.
    #[inline]
    pub fn outcome(&self, board: &Board) -> Outcome {
        let t = self.turn as usize;
        // The part-2 pattern comes before the opponent's win, as in both
        // published solvers (a blockaded position is illegal even then).
        if board.has_won(&self.pieces, t) || board.blockaded(&self.pieces, t) {
            Outcome::Illegal
        } else if board.has_won(&self.pieces, 1 - t) {
            Outcome::Won(1 - t as u8)
        } else {
            Outcome::Ongoing
        }
    }

    /// Colour symmetry: the 180-degree rotation with the colours (and the
    /// player to move) swapped. Player 1's results become player 2's.
    pub fn mirrored(&self, board: &Board) -> Position {
        Position { pieces: [board.rotate(self.pieces[1]), board.rotate(self.pieces[0])], turn: 1 - self.turn }
    }

    /// The mirror image ([`Board::mirror`]), the same player to move.
    pub fn reflected(&self, board: &Board) -> Position {
        Position { pieces: self.pieces.map(|bits| board.reflect(bits)), turn: self.turn }
    }
}

/// The cells the piece on `from` may move to: its destinations, less the one
/// (at most) that would fill the opponent's goal area, since a move into a
/// position where the opponent (then to move) already meets its own win
/// condition does not exist (RULES.md: such positions are illegal). Testing
/// that per destination was about 40 % of the move count pass.
#[inline]
fn legal_destinations(board: &Board, pos: &Position, from: usize) -> u64 {
    let t = pos.turn as usize;
    let others = (pos.pieces[0] | pos.pieces[1]) & !(1u64 << from);
    let mut dests = board.destinations(from, others);
    if board.part2.is_some() {
        dests &= !blockading_destinations(board, pos, from, others);
    }
    let goal = board.goal[1 - t];
    // The opponent's pieces do not move, so one of them stays in its goal.
    if pos.pieces[1 - t] & goal == 0 {
        return dests;
    }
    // After from -> to the goal is full exactly when its empty cells (with
    // `from` vacated) are at most `to`.
    let empty_goal = goal & !others;
    if empty_goal == 0 {
        0
    } else if empty_goal & (empty_goal - 1) == 0 {
        dests & !empty_goal
    } else {
        dests
    }
}

/// Six pieces: the destinations of the piece on `from` whose move would
/// leave the part-2 pattern ([`Board::blockaded`]), with the opponent to move:
/// such positions are illegal, and moves into illegal positions do not exist
/// (as in both published solvers, which skip illegal successors).
#[inline]
fn blockading_destinations(board: &Board, pos: &Position, from: usize, others: u64) -> u64 {
    let Some((blockades, reading)) = &board.part2 else { return 0 };
    let t = pos.turn as usize;
    let o = 1 - t;
    // The opponent, to move next, keeps its pieces: the reading's exemption
    // is decided before the move.
    if *reading == Part2::AsPublished && pos.pieces[o] & (board.start[o] | board.goal[o]) == 0 {
        return 0;
    }
    let mover_left = pos.pieces[t] & !(1u64 << from);
    let mut bad = 0;
    // The opponent's goal: the mover holding its ring after the move, its
    // tip empty (the moving piece may complete the ring, never fill the tip
    // and the ring at once).
    let theirs = blockades[o];
    if others & theirs.tip == 0 {
        let missing = theirs.ring & !mover_left;
        if missing == 0 {
            bad |= !theirs.tip;
        } else if missing & (missing - 1) == 0 {
            bad |= missing;
        }
    }
    // The mover's own goal, ringed by the opponent: only a move onto its tip
    // leaves it unblocked (the move may have vacated the tip).
    let ours = blockades[t];
    if pos.pieces[o] & ours.ring == ours.ring && others & ours.tip == 0 {
        bad |= !ours.tip;
    }
    bad
}

/// Calls `f(from, to)` for every legal move of the player to move.
#[inline]
pub fn for_each_move(board: &Board, pos: &Position, f: &mut impl FnMut(usize, usize)) {
    let mut own = pos.pieces[pos.turn as usize];
    while own != 0 {
        let from = own.trailing_zeros() as usize;
        own &= own - 1;
        let mut dests = legal_destinations(board, pos, from);
        while dests != 0 {
            let to = dests.trailing_zeros() as usize;
            dests &= dests - 1;
            f(from, to);
        }
    }
}

/// The number of legal moves of the player to move (what [`for_each_move`]
/// calls back for), counted a piece at a time: the move count pass runs this
/// once per position of the job.
#[inline]
pub fn move_count(board: &Board, pos: &Position) -> u32 {
    let mut own = pos.pieces[pos.turn as usize];
    let mut n = 0;
    while own != 0 {
        let from = own.trailing_zeros() as usize;
        own &= own - 1;
        n += legal_destinations(board, pos, from).count_ones();
    }
    n
}

/// The children of an ongoing position, one per legal move.
pub fn children(board: &Board, pos: &Position) -> Vec<Position> {
    let mut out = Vec::new();
    for_each_move(board, pos, &mut |from, to| {
        let mut c = *pos;
        c.pieces[pos.turn as usize] ^= (1u64 << from) | (1u64 << to);
        c.turn = 1 - pos.turn;
        out.push(c);
    });
    out
}

impl Cc2 {
    /// Builds the game on the `size` x `size` board with `pieces` per player,
    /// over both sides to move.
    pub fn new(size: u32, pieces: u32) -> Result<Cc2, Cc2Error> {
        Cc2::with_folding(size, pieces, Folding::default())
    }

    /// The game folded by colour symmetry: ranks are the positions with player
    /// 1 to move; the other half are their mirror images.
    pub fn folded(size: u32, pieces: u32) -> Result<Cc2, Cc2Error> {
        Cc2::with_folding(size, pieces, Folding { colour: true, mirror: false })
    }

    /// The game with the rank space folded by the symmetries `folding` names.
    pub fn with_folding(size: u32, pieces: u32, folding: Folding) -> Result<Cc2, Cc2Error> {
        Cc2::with_rules(size, pieces, folding, Part2::Literal)
    }

    /// [`Cc2::with_folding`] under the part-2 reading `part2` (six pieces).
    pub fn with_rules(size: u32, pieces: u32, folding: Folding, part2: Part2) -> Result<Cc2, Cc2Error> {
        let board = Board::with_part2(size, pieces, part2)?;
        if folding.mirror && !board.has_mirror_symmetry() {
            return Err(Cc2Error::NoMirror { size, pieces });
        }
        let binom = Binomials::new();
        let (n, p) = (board.cells, pieces as usize);
        let majors = binom.get64(n, p);
        let block = binom.get64(n - p, p);
        let table = |count: u64, universe: usize| -> Vec<u64> {
            if count > MAX_TABLE {
                return Vec::new();
            }
            (0..count).map(|r| binom.unrank_subset(r, p, universe)).collect()
        };
        let colex = Colex::new();
        let (major_table, mirror) = if folding.mirror {
            let (placements, blocks) = mirror_blocks(&board, &binom, &colex);
            (placements, Some(blocks))
        } else {
            (table(majors, n), None)
        };
        let minor_table = table(block, n - p);
        let per_turn = mirror.as_ref().map_or(majors, |m| m.symmetric.len() as u64) * block;
        Ok(Cc2 {
            per_turn,
            block,
            per_turn_div: FastDiv::new(per_turn),
            block_div: FastDiv::new(block),
            major_table,
            minor_table,
            board,
            colex,
            binom,
            folded: folding.colour,
            mirror,
            deposit: Deposit::new(),
        })
    }

    /// Ranks with one side to move (fewer than its positions when folded by
    /// the mirror).
    pub fn per_turn(&self) -> u64 {
        self.per_turn
    }

    /// Positions with one side to move, whatever the folding:
    /// `C(n, p) * C(n - p, p)`.
    pub fn positions_per_side(&self) -> u64 {
        self.binom.get64(self.board.cells, self.board.pieces as usize) * self.block
    }

    /// Ranks per block: the positions of one placement of the waiting player
    /// (and, folded by the mirror, of its image).
    pub fn block_len(&self) -> u64 {
        self.block
    }

    /// True when the rank space is folded by colour symmetry.
    pub fn is_folded(&self) -> bool {
        self.folded
    }

    /// The version of this space's rank order ([`rank_order_of`]).
    pub fn rank_order(&self) -> u32 {
        rank_order_of(self.folding())
    }

    /// The symmetries that fold the rank space.
    pub fn folding(&self) -> Folding {
        Folding { colour: self.folded, mirror: self.mirror.is_some() }
    }

    /// How many positions with its side to move `rank` stands for: two when
    /// it also stands for its mirror image, otherwise one.
    #[inline]
    pub fn multiplicity(&self, rank: u64) -> u64 {
        match &self.mirror {
            Some(m) => {
                if m.symmetric[self.split(rank).1 as usize] {
                    1
                } else {
                    2
                }
            }
            None => 1,
        }
    }

    /// The rank of `pos`, or of its mirror image when the space is folded and
    /// player 2 is to move; the flag says whether the value there counts
    /// negated (WIN for player 1 there is LOSS here).
    pub fn rank_of(&self, pos: &Position) -> (u64, bool) {
        if self.folded && pos.turn == 1 {
            (self.rank(&pos.mirrored(&self.board)), true)
        } else {
            (self.rank(pos), false)
        }
    }

    /// The start position, player 1 to move.
    pub fn start(&self) -> Position {
        Position { pieces: self.board.start, turn: 0 }
    }

    /// Rank of a position; folded by the mirror, the rank of its class (the
    /// position or its mirror image, whichever is stored).
    #[inline]
    pub fn rank(&self, pos: &Position) -> u64 {
        let t = pos.turn as usize;
        let (mut waiting, mut mover) = (pos.pieces[1 - t], pos.pieces[t]);
        let colex = self.colex.rank(waiting);
        let major = match &self.mirror {
            None => colex,
            Some(m) => {
                let (major, flip) = m.lookup(colex);
                if flip {
                    waiting = self.board.reflect(waiting);
                    mover = self.board.reflect(mover);
                }
                major
            }
        };
        t as u64 * self.per_turn + major * self.block + self.colex.rank_within(mover, self.board.full & !waiting)
    }

    /// Position of a rank.
    #[inline]
    pub fn unrank(&self, rank: u64) -> Position {
        let (t, major, minor) = self.split(rank);
        self.position_at(t, major, minor)
    }

    /// The player to move, the block (the waiting player's placement) and
    /// the rank inside the block of `rank`.
    #[inline]
    fn split(&self, rank: u64) -> (usize, u64, u64) {
        // Folded, every stored position has player 1 to move.
        let (t, rest) = if self.folded { (0, rank) } else { self.per_turn_div.div_rem(rank) };
        let (major, minor) = self.block_div.div_rem(rest);
        (t as usize, major, minor)
    }

    /// The position of [`Cc2::split`]'s parts.
    #[inline]
    fn position_at(&self, t: usize, major: u64, minor: u64) -> Position {
        self.place(t, self.waiting_placement(major), self.packed_minor(minor))
    }

    /// The waiting player's placement of block `major`.
    #[inline]
    fn waiting_placement(&self, major: u64) -> u64 {
        match self.major_table.get(major as usize) {
            Some(&bits) => bits,
            None => self.binom.unrank_subset(major, self.board.pieces as usize, self.board.cells),
        }
    }

    /// The mover's placement of rank `minor` in a block, packed: as a subset
    /// of the cells the waiting player leaves free, numbered from 0.
    #[inline]
    fn packed_minor(&self, minor: u64) -> u64 {
        match self.minor_table.get(minor as usize) {
            Some(&bits) => bits,
            None => {
                let p = self.board.pieces as usize;
                self.binom.unrank_subset(minor, p, self.board.cells - p)
            }
        }
    }

    /// The position with player `t` to move, the waiting player on `waiting`
    /// and the mover on the free cells `packed` names.
    #[inline]
    fn place(&self, t: usize, waiting: u64, packed: u64) -> Position {
        let mut pieces = [0; 2];
        pieces[t] = self.deposit.around(packed, waiting);
        pieces[1 - t] = waiting;
        Position { pieces, turn: t as u8 }
    }

    /// [`RetroGame::classify`] of a position.
    #[inline]
    fn classify_position(&self, pos: &Position) -> Classification {
        match pos.outcome(&self.board) {
            Outcome::Illegal => Classification::Illegal,
            Outcome::Won(p) => Classification::Terminal { winner: p },
            Outcome::Ongoing => {
                let moves = move_count(&self.board, pos);
                if moves == 0 {
                    // A player with no move loses.
                    Classification::Terminal { winner: 1 - pos.turn }
                } else {
                    Classification::Open { children: moves, no_move: false }
                }
            }
        }
    }

    /// Formats a position in the text notation.
    pub fn format(&self, pos: &Position) -> String {
        let cells = |mut bits: u64| {
            let mut names = Vec::new();
            while bits != 0 {
                names.push(self.board.cell_name(bits.trailing_zeros() as usize));
                bits &= bits - 1;
            }
            names.join(",")
        };
        format!("{}/{} {}", cells(pos.pieces[0]), cells(pos.pieces[1]), PLAYER_NAMES[pos.turn as usize])
    }

    /// Parses the text notation (the inverse of [`Cc2::format`]).
    pub fn parse(&self, text: &str) -> Result<Position, NotationError> {
        let err = |why: String| NotationError { text: text.to_string(), why };
        let (cells, turn) = text.trim().rsplit_once(' ').ok_or_else(|| err("no player to move".into()))?;
        let turn =
            PLAYER_NAMES.iter().position(|&p| p == turn.trim()).ok_or_else(|| err(format!("player {turn:?}")))?;
        let (a, b) = cells.split_once('/').ok_or_else(|| err("expected two piece lists".into()))?;
        let mut pieces = [0u64; 2];
        for (i, list) in [a, b].into_iter().enumerate() {
            for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let c = self.board.cell_by_name(name).ok_or_else(|| err(format!("no cell {name:?}")))?;
                if (pieces[0] | pieces[1]) & (1 << c) != 0 {
                    return Err(err(format!("cell {name} is used twice")));
                }
                pieces[i] |= 1 << c;
            }
            if pieces[i].count_ones() != self.board.pieces {
                return Err(err(format!("player {} needs {} pieces", PLAYER_NAMES[i], self.board.pieces)));
            }
        }
        Ok(Position { pieces, turn: turn as u8 })
    }

    /// Parses a question name: `solo(1)` or `solo(2)` (that player plays to win;
    /// three-valued: WIN, LOSS = the other player wins, DRAW).
    pub fn parse_question(name: &str) -> Option<Question> {
        let x = name.strip_prefix("solo(")?.strip_suffix(')')?;
        let p = PLAYER_NAMES.iter().position(|&n| n == x)?;
        Some(Question::solo(p as u8))
    }

    /// The question a space answers: [`Cc2::parse_question`], and only
    /// `solo(1)` when the space is folded by colour symmetry (it stores player 1
    /// to move only; solo(2) is solo(1) negated).
    pub fn question(name: &str, folded: bool) -> Option<Question> {
        Cc2::parse_question(name).filter(|q| !folded || q.target == 0)
    }
}

/// The mirror fold's blocks: the placements of `p` pieces that are the
/// smaller (in colex rank) of themselves and their mirror images, in colex
/// order, and the tables that find a placement's block.
fn mirror_blocks(board: &Board, binom: &Binomials, ranks: &Colex) -> (Vec<u64>, MirrorBlocks) {
    let (n, p) = (board.cells, board.pieces as usize);
    let count = binom.get64(n, p);
    let mut placements = Vec::new();
    let mut blocks = MirrorBlocks { index: Vec::with_capacity(count as usize), symmetric: Vec::new() };
    for rank in 0..count {
        let bits = binom.unrank_subset(rank, p, n);
        let image = ranks.rank(board.reflect(bits));
        if image < rank {
            // The image came first, so its block is already numbered.
            let v = blocks.index[image as usize] | MirrorBlocks::FLIP;
            blocks.index.push(v);
        } else {
            blocks.index.push(placements.len() as u32);
            placements.push(bits);
            blocks.symmetric.push(image == rank);
        }
    }
    (placements, blocks)
}

/// Set in a frontier record whose position names no predecessors
/// ([`PredecessorBase::none`]); ranks stay far below it.
const NO_PREDECESSORS: u64 = 1 << 62;

/// Where the predecessors of a decided position lie (see
/// [`Cc2::predecessor_base`]).
struct PredecessorBase {
    /// The position whose predecessors to enumerate, the one the predecessors
    /// move to (the decided position, or its mirror image).
    pos: Position,
    /// The first rank of their block.
    base: u64,
    /// Enumerate nothing: the decided position's mirror image is stored apart
    /// and its own record reaches the stored predecessors.
    none: bool,
    /// Also count each predecessor's mirror image (it is stored apart, and
    /// its edge into the decided position's class is an edge of its own).
    twins: bool,
}

impl Cc2 {
    /// The position `rank` stands for as the predecessors see it (its mirror
    /// image when folded: the stored predecessors have player 1 to move) and
    /// the first rank of the block all its predecessors lie in.
    ///
    /// Folded by the mirror, each stored position has its own moves (its
    /// count), and the predecessors named are those with an edge into the
    /// positions `rank` stands for, once per edge:
    /// - the predecessors' placement (the mover's, who waited then) is stored
    ///   as it is: its block holds the predecessors of the position itself,
    ///   and when that block is symmetric and `rank` also stands for its
    ///   mirror image, the images of the predecessors too (`twins`);
    /// - otherwise the predecessors of the mirror image are the stored ones;
    ///   when `rank` stands for its image, they are named, and when the image
    ///   is stored apart, its own record names them (`none`).
    #[inline]
    fn predecessor_base(&self, rank: u64) -> PredecessorBase {
        let (t0, stored_major, minor) = self.split(rank);
        let mut pos = self.position_at(t0, stored_major, minor);
        if self.folded {
            pos = pos.mirrored(&self.board);
        }
        let t = pos.turn as usize;
        let prev = 1 - t;
        // The predecessors keep our pieces (we waited), so they share one block.
        let colex = self.colex.rank(pos.pieces[t]);
        let (major, none, twins) = match &self.mirror {
            None => (colex, false, false),
            Some(m) => {
                let stands_for_image = !m.symmetric[stored_major as usize];
                let (major, flip) = m.lookup(colex);
                if flip {
                    pos = pos.reflected(&self.board);
                }
                (major, flip && !stands_for_image, stands_for_image && m.symmetric[major as usize])
            }
        };
        PredecessorBase { pos, base: prev as u64 * self.per_turn + major * self.block, none, twins }
    }

    /// Calls `f` with the rank of every predecessor of `pos` (whose
    /// predecessors' block starts at `base`), and of each one's mirror image
    /// when `twins`.
    #[inline]
    fn predecessors_in_block(&self, pos: &Position, base: u64, twins: bool, f: &mut impl FnMut(u64)) {
        // The slots sized to the pieces that stay (at most p - 1, so p slots
        // do): four up to four pieces, not the seven the largest size takes.
        if self.board.pieces as usize <= SMALL_SLOTS {
            self.predecessors_in_block_sized::<SMALL_SLOTS>(pos, base, twins, f);
        } else {
            self.predecessors_in_block_sized::<CHOOSE_K>(pos, base, twins, f);
        }
    }

    /// [`Cc2::predecessors_in_block`] with `N > p` insertion slots.
    #[inline(always)]
    fn predecessors_in_block_sized<const N: usize>(
        &self,
        pos: &Position,
        base: u64,
        twins: bool,
        f: &mut impl FnMut(u64),
    ) {
        let t = pos.turn as usize;
        let prev = 1 - t;
        let free = self.board.full & !pos.pieces[t];
        let all = pos.pieces[0] | pos.pieces[1];
        let mut own = pos.pieces[prev];
        // Moves are reversible: the piece came from u to v exactly when it can
        // go from v back to u over the same other pieces.
        while own != 0 {
            let v = own.trailing_zeros() as usize;
            own &= own - 1;
            let mut origins = self.board.destinations(v, all & !(1u64 << v));
            if origins == 0 {
                continue;
            }
            // The pieces that stay are ranked once (within `free`): each
            // origin then costs two popcounts and a lookup instead of a rank
            // over every piece.
            let others = pos.pieces[prev] & !(1u64 << v);
            let slot = self.colex.insertion_slots::<N>(others, free);
            while origins != 0 {
                let u = origins.trailing_zeros() as usize;
                origins &= origins - 1;
                let below = (1u64 << u) - 1;
                let s = (others & below).count_ones() as usize;
                let at = (free & below).count_ones() as usize;
                f(base + slot[s] + self.colex.choose(at, s + 1));
                if twins {
                    // `free` is symmetric: the block's placement is.
                    let before = others | (1u64 << u);
                    f(base + self.colex.rank_within(self.board.reflect(before), free));
                }
            }
        }
    }
}

impl RetroGame for Cc2 {
    fn position_count(&self) -> u64 {
        if self.folded { self.per_turn } else { 2 * self.per_turn }
    }

    #[inline]
    fn side_to_move(&self, rank: u64) -> u8 {
        if self.folded { 0 } else { self.per_turn_div.div(rank) as u8 }
    }

    fn edges_negate(&self) -> bool {
        self.folded
    }

    fn max_children(&self) -> u32 {
        let b = &self.board;
        crate::jumps::move_bound(|c| b.steps[c].count_ones(), &b.jumps, b.pieces)
    }

    fn classify(&self, rank: u64) -> Classification {
        self.classify_position(&self.unrank(rank))
    }

    /// Block by block: the waiting placement once per block, the mover's
    /// placements in colex order by bit tricks instead of a division and a
    /// table lookup per rank.
    fn classify_run(&self, first: u64, len: usize, f: &mut impl FnMut(usize, Classification)) {
        let end = first + len as u64;
        let mut next = first;
        while next < end {
            let (t, major, minor) = self.split(next);
            let stop = (next - minor + self.block).min(end);
            let waiting = self.waiting_placement(major);
            let mut packed = self.packed_minor(minor);
            for rank in next..stop {
                f((rank - first) as usize, self.classify_position(&self.place(t, waiting, packed)));
                packed = next_colex(packed);
            }
            next = stop;
        }
    }

    fn for_each_predecessor(&self, rank: u64, f: &mut impl FnMut(u64)) {
        let PredecessorBase { pos, base, none, twins } = self.predecessor_base(rank);
        if !none {
            self.predecessors_in_block(&pos, base, twins, f);
        }
    }

    fn predecessor_block(&self, rank: u64) -> std::ops::Range<u64> {
        let base = self.predecessor_base(rank).base;
        base..base + self.block
    }

    /// The record is the rank of the predecessors' placement itself (the
    /// mover's pieces where they stand, the previous player to move): it lies
    /// in the block, which is then one division away, and one unranking gives
    /// back the position the predecessors move to.
    fn frontier_record_and_block(&self, rank: u64) -> (u64, std::ops::Range<u64>) {
        let PredecessorBase { pos, base, none, .. } = self.predecessor_base(rank);
        let t = pos.turn as usize;
        let minor = self.colex.rank_within(pos.pieces[1 - t], self.board.full & !pos.pieces[t]);
        let flag = if none { NO_PREDECESSORS } else { 0 };
        ((base + minor) | flag, base..base + self.block)
    }

    fn frontier_record(&self, rank: u64) -> u64 {
        self.frontier_record_and_block(rank).0
    }

    #[inline]
    fn record_block(&self, record: u64) -> std::ops::Range<u64> {
        let start = self.block_div.div(record & !NO_PREDECESSORS) * self.block;
        start..start + self.block
    }

    fn for_each_record_predecessor(&self, record: u64, f: &mut impl FnMut(u64)) {
        if record & NO_PREDECESSORS != 0 {
            return;
        }
        let (t, major, minor) = self.split(record);
        let placement = self.position_at(t, major, minor);
        // The decided position: the same pieces, the other player to move.
        let pos = Position { pieces: placement.pieces, turn: 1 - placement.turn };
        let twins = match &self.mirror {
            None => false,
            Some(m) => {
                // The block is symmetric and the decided position's class holds
                // its mirror image (its waiting pieces, the predecessors'
                // movers, are not symmetric); see `predecessor_base`.
                let movers = placement.pieces[t];
                m.symmetric[major as usize] && self.board.reflect(movers) != movers
            }
        };
        self.predecessors_in_block(&pos, record - minor, twins, f);
    }

    fn for_each_child(&self, rank: u64, f: &mut impl FnMut(u64)) {
        for child in children(&self.board, &self.unrank(rank)) {
            f(self.rank_of(&child).0);
        }
    }
}
