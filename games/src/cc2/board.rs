//! The m x m diamond of two-player Chinese checkers (RULES.md section 2):
//! cells, their numbering, steps, jumps, start and goal areas.

use crate::jumps::{JumpTable, jump_chains, jump_table};

/// Largest board side: the cells must fit one 64-bit board.
pub const MAX_SIZE: u32 = 8;
/// Smallest board side that leaves room between the two start areas.
pub const MIN_SIZE: u32 = 3;
/// Most pieces per player (six take the part-2 rule, [`Part2`]).
pub const MAX_PIECES: u32 = 6;

/// The six-piece game's second illegal pattern (RULES.md section 2): a goal
/// whose tip is empty while the other player holds the four cells next to it
/// (the tip's two neighbours and the two outer cells of the three-cell row),
/// which would let that player keep the goal from ever filling. Two readings,
/// which give different counts on 5 x 5 and larger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part2 {
    /// Every position with the pattern, at either goal, is illegal (the rule
    /// as the paper states it; the public solver jh85/smallgames counts this).
    Literal,
    /// As Sturtevant's own solver applies it (AmiiThinks/benchmarks,
    /// chinese_checkers/): not checked when the player to move has no piece in
    /// its own start area and none in its goal area, so those positions are
    /// ordinary ones. This reproduces the paper's published counts.
    AsPublished,
}

impl Part2 {
    /// The plan's name of the reading.
    pub fn name(self) -> &'static str {
        match self {
            Part2::Literal => "literal",
            Part2::AsPublished => "as-published",
        }
    }

    /// The reading named `name` (`literal` or `as-published`).
    pub fn parse(name: &str) -> Option<Part2> {
        [Part2::Literal, Part2::AsPublished].into_iter().find(|p| p.name() == name)
    }
}

/// One goal's part-2 pattern: its tip, and the four cells next to it that
/// the other player must all hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blockade {
    /// The goal's tip.
    pub tip: u64,
    /// The tip's two neighbours and the two outer cells of the three-cell row.
    pub ring: u64,
}

/// The six neighbour directions as (dx, dy).
const DIRECTIONS: [(i32, i32); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1)];

/// Geometry of one board size and piece count.
#[derive(Clone, Debug)]
pub struct Board {
    /// Side length m.
    pub size: u32,
    /// Pieces per player p.
    pub pieces: u32,
    /// Number of cells, m * m.
    pub cells: usize,
    /// `(x, y)` of each cell, in the numbering order (diagonal rows `x + y`,
    /// x ascending inside a row).
    pub coords: Vec<(u32, u32)>,
    /// Every cell as one bit.
    pub full: u64,
    /// Cells one step away, per cell.
    pub steps: Vec<u64>,
    /// `(jumped cell, landing cell)` per cell and direction.
    pub jumps: Vec<Vec<(u8, u8)>>,
    /// The same jumps as `(jumped cell, landing cell as one bit)`, six per
    /// cell, padded with jumps that land nowhere: [`Board::destinations`]
    /// tests them all without a branch.
    jump_bits: JumpTable,
    /// Start area of each player.
    pub start: [u64; 2],
    /// Goal area of each player (the other player's start).
    pub goal: [u64; 2],
    /// Six pieces: the part-2 pattern of each player's goal, and the reading
    /// in force. `None` for fewer pieces, which have no such rule.
    pub part2: Option<([Blockade; 2], Part2)>,
    /// The cell each cell maps to under the 180-degree rotation.
    pub rotation: Vec<u8>,
    /// The cell each cell maps to under the mirror along the long diagonal
    /// from `a1` to the far corner (x and y swapped). It maps steps and jumps
    /// onto steps and jumps; it keeps the rules when it keeps the start areas
    /// ([`Board::has_mirror_symmetry`]).
    pub mirror: Vec<u8>,
    /// The rotation maps cell `i` to `cells - 1 - i` (true of the numbering
    /// along anti-diagonals), so a set rotates by reversing its bits.
    rotation_reverses: bool,
}

/// A board size or piece count outside what the program supports, or that
/// the board cannot hold: the two start areas would share cells.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", self.describe())]
pub struct BadBoard {
    /// Requested side.
    pub size: u32,
    /// Requested pieces per player.
    pub pieces: u32,
}

impl BadBoard {
    fn describe(&self) -> String {
        let (size, pieces) = (self.size, self.pieces);
        if (MIN_SIZE..=MAX_SIZE).contains(&size) && (1..=MAX_PIECES).contains(&pieces) {
            format!(
                "two-player board {size} x {size} with {pieces} pieces: the two start areas would share cells \
                 (a {size} x {size} board holds at most {} pieces a player)",
                max_pieces(size)
            )
        } else {
            format!(
                "two-player board {size} x {size} with {pieces} pieces is not supported \
                 (size {MIN_SIZE}..={MAX_SIZE}, pieces 1..={MAX_PIECES})"
            )
        }
    }
}

/// The most pieces a player can have on an m x m board: the two start areas
/// (player 2's is the rotation of player 1's) must not share a cell.
pub fn max_pieces(size: u32) -> u32 {
    (1..=MAX_PIECES).take_while(|&p| Board::new(size, p).is_ok()).last().unwrap_or(0)
}

impl Board {
    /// Builds the board of side `size` with `pieces` pieces per player; six
    /// pieces take the literal part-2 rule ([`Board::with_part2`] for the other).
    pub fn new(size: u32, pieces: u32) -> Result<Board, BadBoard> {
        Board::with_part2(size, pieces, Part2::Literal)
    }

    /// [`Board::new`] with the part-2 reading `part2` (which matters for six
    /// pieces only).
    pub fn with_part2(size: u32, pieces: u32, part2: Part2) -> Result<Board, BadBoard> {
        if !(MIN_SIZE..=MAX_SIZE).contains(&size) || !(1..=MAX_PIECES).contains(&pieces) {
            return Err(BadBoard { size, pieces });
        }
        let m = size as i32;
        let mut coords = Vec::new();
        for row in 0..(2 * m - 1) {
            for x in 0..m {
                let y = row - x;
                if (0..m).contains(&y) {
                    coords.push((x as u32, y as u32));
                }
            }
        }
        let cells = coords.len();
        let index = |x: i32, y: i32| -> Option<usize> {
            if (0..m).contains(&x) && (0..m).contains(&y) {
                coords.iter().position(|&c| c == (x as u32, y as u32))
            } else {
                None
            }
        };
        let mut steps = vec![0u64; cells];
        let mut jumps = vec![Vec::new(); cells];
        for (i, &(x, y)) in coords.iter().enumerate() {
            let (x, y) = (x as i32, y as i32);
            for (dx, dy) in DIRECTIONS {
                if let Some(n) = index(x + dx, y + dy) {
                    steps[i] |= 1 << n;
                    if let Some(l) = index(x + 2 * dx, y + 2 * dy) {
                        jumps[i].push((n as u8, l as u8));
                    }
                }
            }
        }
        let jump_bits = jump_table(&jumps);
        let rotation: Vec<u8> = coords
            .iter()
            .map(|&(x, y)| {
                index(m - 1 - x as i32, m - 1 - y as i32).expect("the rotation maps the board onto itself") as u8
            })
            .collect();
        let mirror: Vec<u8> = coords
            .iter()
            .map(|&(x, y)| index(y as i32, x as i32).expect("the mirror maps the board onto itself") as u8)
            .collect();
        // Player 1's start: the first p cells of the numbering, except that
        // four pieces form the rhombus {tip, both cells of row 1, the middle of
        // row 2} (for two pieces the rule's "tip + first cell of row 1" is the
        // first two cells anyway).
        let first: Vec<usize> = if pieces == 4 {
            vec![index(0, 0), index(0, 1), index(1, 0), index(1, 1)].into_iter().map(|c| c.expect("on board")).collect()
        } else {
            (0..pieces as usize).collect()
        };
        let start0: u64 = first.iter().map(|&c| 1u64 << c).sum();
        let start1 = rotate_bits(&rotation, start0);
        if start0 & start1 != 0 {
            // 3 x 3 with 4 or 5 pieces: a cell would start with both players'
            // pieces, and the rank space (which counts the second player's
            // placements among the cells the first leaves) would be empty.
            return Err(BadBoard { size, pieces });
        }
        let full = if cells == 64 { u64::MAX } else { (1u64 << cells) - 1 };
        // Player 1's start in the numbering: the tip (cell 0), row 1 (cells
        // 1, 2), row 2 (cells 3, 4, 5); player 2's goal. Player 1's goal is
        // its rotation.
        let part2 = (pieces == 6).then(|| {
            let start_blockade = Blockade { tip: 1, ring: (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) };
            let rotated =
                |b: Blockade| Blockade { tip: rotate_bits(&rotation, b.tip), ring: rotate_bits(&rotation, b.ring) };
            ([rotated(start_blockade), start_blockade], part2)
        });
        let rotation_reverses = rotation.iter().enumerate().all(|(i, &r)| r as usize == cells - 1 - i);
        Ok(Board {
            size,
            pieces,
            cells,
            coords,
            full,
            steps,
            jumps,
            jump_bits,
            start: [start0, start1],
            goal: [start1, start0],
            part2,
            rotation,
            mirror,
            rotation_reverses,
        })
    }

    /// Name of a cell: column letter from x, row number from y (`a1` is the
    /// tip of player 1's start).
    pub fn cell_name(&self, cell: usize) -> String {
        let (x, y) = self.coords[cell];
        format!("{}{}", (b'a' + x as u8) as char, y + 1)
    }

    /// The cell with this name.
    pub fn cell_by_name(&self, name: &str) -> Option<usize> {
        (0..self.cells).find(|&c| self.cell_name(c) == name)
    }

    /// Every cell reachable by the piece on `from` in one move: steps onto empty
    /// cells and jump chains over single pieces, stopping anywhere. `occupied`
    /// holds every other piece; `from` itself counts as empty (a chain may cross
    /// it) but is never a destination.
    #[inline]
    pub fn destinations(&self, from: usize, occupied: u64) -> u64 {
        jump_chains(&self.jump_bits, from, occupied, !occupied) | (self.steps[from] & !occupied)
    }

    /// True when player `p` meets its win condition: its goal area completely
    /// filled with pieces of either colour, at least one of them its own.
    #[inline]
    pub fn has_won(&self, pieces: &[u64; 2], p: usize) -> bool {
        let goal = self.goal[p];
        goal & !(pieces[0] | pieces[1]) == 0 && pieces[p] & goal != 0
    }

    /// True when the position (`pieces`, `turn` to move) has the part-2
    /// pattern under the board's reading: always false below six pieces.
    #[inline]
    pub fn blockaded(&self, pieces: &[u64; 2], turn: usize) -> bool {
        let Some((blockades, reading)) = &self.part2 else { return false };
        if *reading == Part2::AsPublished && pieces[turn] & (self.start[turn] | self.goal[turn]) == 0 {
            return false;
        }
        let occupied = pieces[0] | pieces[1];
        (0..2).any(|p| {
            let b = blockades[p];
            occupied & b.tip == 0 && pieces[1 - p] & b.ring == b.ring
        })
    }

    /// The 180-degree image of a set of cells.
    #[inline]
    pub fn rotate(&self, bits: u64) -> u64 {
        if self.rotation_reverses {
            // The mirror image runs once per decided position in every round.
            bits.reverse_bits() >> (64 - self.cells)
        } else {
            rotate_bits(&self.rotation, bits)
        }
    }

    /// The mirror image of a set of cells (see [`Board::mirror`]).
    #[inline]
    pub fn reflect(&self, bits: u64) -> u64 {
        rotate_bits(&self.mirror, bits)
    }

    /// True when the mirror keeps both start areas, so it maps the rules onto
    /// themselves (steps, jumps and goals): 1, 3 and 4 pieces. Two and five
    /// pieces fill row 1 or row 2 from one side only.
    pub fn has_mirror_symmetry(&self) -> bool {
        self.reflect(self.start[0]) == self.start[0] && self.reflect(self.start[1]) == self.start[1]
    }
}

/// The image of `bits` under the cell permutation `map`.
fn rotate_bits(map: &[u8], mut bits: u64) -> u64 {
    let mut out = 0;
    while bits != 0 {
        out |= 1u64 << map[bits.trailing_zeros() as usize];
        bits &= bits - 1;
    }
    out
}
