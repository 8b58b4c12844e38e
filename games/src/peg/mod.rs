//! Peg solitaire on the English (33-hole) and European (37-hole) boards.
//!
//! A position is a [`Pegs`] bitboard: bit `row * 8 + col` (row 0 = row 1 of
//! the notation, col 0 = column a) is set where a peg stands. The eighth
//! column and row stay empty, which is what makes every symmetry a handful of
//! word operations ([`symmetry`]) and keeps shifted jump masks from wrapping
//! into the next row. Rules, symmetry, position classes and the complement
//! duality are in `RULES.md` section 3.

pub mod class;
pub mod landing;
mod notation;
pub mod search;
pub mod symmetry;
#[cfg(test)]
mod tests;

pub use notation::NotationError;

/// A set of pegs, one bit per hole (`row * 8 + col`).
pub type Pegs = u64;

/// The four jump directions as bit offsets: right, left, up, down.
const DIRECTIONS: [i32; 4] = [1, -1, 8, -8];

/// Which board is played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoardKind {
    /// The 33-hole cross.
    English,
    /// The 37-hole French board: the English board plus b2, f2, b6, f6.
    European,
}

impl BoardKind {
    /// The board's name as used in plans and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BoardKind::English => "english",
            BoardKind::European => "european",
        }
    }

    /// Parses `english` or `european` (also `french`).
    pub fn parse(text: &str) -> Option<BoardKind> {
        match text.to_ascii_lowercase().as_str() {
            "english" => Some(BoardKind::English),
            "european" | "french" => Some(BoardKind::European),
            _ => None,
        }
    }
}

/// One jump: a peg on `from` jumps over `over` into the empty `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jump {
    /// The hole the jumping peg leaves.
    pub from: u8,
    /// The hole whose peg is removed.
    pub over: u8,
    /// The hole the peg lands in.
    pub to: u8,
}

impl Jump {
    /// The three holes the jump touches, as a mask: applying the jump is an xor.
    pub fn mask(self) -> Pegs {
        (1 << self.from) | (1 << self.over) | (1 << self.to)
    }
}

/// A board with its precomputed jump tables.
#[derive(Clone, Debug)]
pub struct Board {
    kind: BoardKind,
    holes: Pegs,
    /// `images[d][x]`: for the jump from hole `x` in direction `d`, its mask
    /// under each of the 8 symmetries (index as in [`symmetry::apply`]). A child's
    /// 8 images are the parent's images xor these, so canonicalising a child
    /// costs 8 xors and a minimum instead of 8 board transforms.
    images: Box<[[[Pegs; 8]; 64]; 4]>,
    jump_count: usize,
}

/// A board with the symmetry group its levels are folded by: the stabiliser
/// of the start ([`Folded::of_start`]), so that every count of a level is the
/// start's own (see [`symmetry::Group`]).
#[derive(Clone, Debug)]
pub struct Folded {
    /// The board.
    pub board: Board,
    /// The symmetries positions are folded by.
    pub group: symmetry::Group,
}

impl Folded {
    /// `board` folded by the symmetries that fix `start`.
    pub fn of_start(board: Board, start: Pegs) -> Folded {
        Folded { group: symmetry::Group::stabiliser(start), board }
    }

    /// The representative of `pegs` under the group.
    #[inline]
    pub fn canonical(&self, pegs: Pegs) -> Pegs {
        self.group.canonical(pegs)
    }

    /// The number of positions `pegs` stands for (its orbit under the group).
    #[inline]
    pub fn orbit_size(&self, pegs: Pegs) -> u32 {
        self.group.orbit_size(pegs)
    }
}

/// Names a hole `a1`..`g7` (column letter, row number from the bottom).
pub fn hole_name(hole: u8) -> String {
    let (row, col) = (hole / 8, hole % 8);
    format!("{}{}", (b'a' + col) as char, row + 1)
}

/// Parses a hole name `a1`..`g7` into its bit index (does not check the board).
pub fn parse_hole(text: &str) -> Option<u8> {
    let bytes = text.trim().as_bytes();
    if bytes.len() != 2 {
        return None;
    }
    let col = bytes[0].to_ascii_lowercase().checked_sub(b'a')?;
    let row = bytes[1].checked_sub(b'1')?;
    // Compare before multiplying: "zz" must be refused, not overflow.
    (col < 7 && row < 7).then(|| row * 8 + col)
}

impl Board {
    /// Builds the board and its jump tables.
    pub fn new(kind: BoardKind) -> Board {
        let mut holes: Pegs = 0;
        for row in 0..7u32 {
            for col in 0..7u32 {
                let arm = (2..=4).contains(&row) || (2..=4).contains(&col);
                let european_extra = kind == BoardKind::European && (row == 1 || row == 5) && (col == 1 || col == 5);
                if arm || european_extra {
                    holes |= 1 << (row * 8 + col);
                }
            }
        }
        let mut images = Box::new([[[0; 8]; 64]; 4]);
        let mut jump_count = 0;
        for (d, &step) in DIRECTIONS.iter().enumerate() {
            for from in 0..64i32 {
                let (over, to) = (from + step, from + 2 * step);
                let inside = |x: i32| (0..64).contains(&x) && holes >> x & 1 == 1;
                if inside(from) && inside(over) && inside(to) {
                    let jump = Jump { from: from as u8, over: over as u8, to: to as u8 };
                    for s in 0..8 {
                        images[d][from as usize][s] = symmetry::apply(s, jump.mask());
                    }
                    jump_count += 1;
                }
            }
        }
        Board { kind, holes, images, jump_count }
    }

    /// Which board this is.
    pub fn kind(&self) -> BoardKind {
        self.kind
    }

    /// Every hole of the board.
    pub fn holes(&self) -> Pegs {
        self.holes
    }

    /// Number of holes (33 or 37).
    pub fn hole_count(&self) -> u32 {
        self.holes.count_ones()
    }

    /// Number of distinct jumps on the board (76 or 92).
    pub fn jump_count(&self) -> usize {
        self.jump_count
    }

    /// True when `hole` (a bit index) is on the board.
    pub fn has_hole(&self, hole: u8) -> bool {
        hole < 64 && self.holes >> hole & 1 == 1
    }

    /// The full board with one hole empty.
    pub fn single_vacancy(&self, hole: u8) -> Pegs {
        self.holes & !(1 << hole)
    }

    /// The holes that are empty in `pegs` filled and vice versa.
    pub fn complement(&self, pegs: Pegs) -> Pegs {
        self.holes ^ pegs
    }

    /// Calls `f(d, from)` for every legal jump in `pegs`: direction index `d`
    /// (into the internal tables) and the hole the jumping peg leaves.
    #[inline]
    fn for_each_jump_index(&self, pegs: Pegs, mut f: impl FnMut(usize, u32)) {
        let empty = self.holes & !pegs;
        // A jump from x in direction +s needs pegs at x and x+s and a hole at
        // x+2s; shifting the masks lines all three up on bit x. The empty
        // eighth column and row make out-of-board targets read as "no hole".
        let right = pegs & (pegs >> 1) & (empty >> 2);
        let left = pegs & (pegs << 1) & (empty << 2);
        let up = pegs & (pegs >> 8) & (empty >> 16);
        let down = pegs & (pegs << 8) & (empty << 16);
        for (d, mut set) in [right, left, up, down].into_iter().enumerate() {
            while set != 0 {
                f(d, set.trailing_zeros());
                set &= set - 1;
            }
        }
    }

    /// Every legal jump in `pegs`.
    pub fn jumps(&self, pegs: Pegs) -> Vec<Jump> {
        let mut out = Vec::new();
        self.for_each_jump_index(pegs, |d, from| {
            let step = DIRECTIONS[d];
            let from = from as i32;
            out.push(Jump { from: from as u8, over: (from + step) as u8, to: (from + 2 * step) as u8 });
        });
        out
    }

    /// True when no jump is possible.
    pub fn is_dead_end(&self, pegs: Pegs) -> bool {
        let empty = self.holes & !pegs;
        (pegs & (pegs >> 1) & (empty >> 2))
            | (pegs & (pegs << 1) & (empty << 2))
            | (pegs & (pegs >> 8) & (empty >> 16))
            | (pegs & (pegs << 8) & (empty << 16))
            == 0
    }

    /// The jump from `from` to `to` (two holes apart in a line) if it is legal in `pegs`.
    pub fn jump_between(&self, pegs: Pegs, from: u8, to: u8) -> Option<Jump> {
        self.jumps(pegs).into_iter().find(|j| j.from == from && j.to == to)
    }

    /// Calls `f(child)` for every jump out of `pegs`, with the child in
    /// canonical form under `group` (the least of its images under the group's
    /// symmetries). Children reached by several jumps are reported once per jump.
    #[inline]
    pub fn for_each_child_in(&self, group: symmetry::Group, pegs: Pegs, mut f: impl FnMut(Pegs)) {
        if group == symmetry::Group::ALL {
            return self.for_each_canonical_child(pegs, f);
        }
        if group == symmetry::Group::TRIVIAL {
            // The identity image of a jump's mask is the mask itself.
            return self.for_each_jump_index(pegs, |d, from| f(pegs ^ self.images[d][from as usize][0]));
        }
        // Only the group's own images of the parent (two for the mirror of
        // d2 and d3, not all eight), each child's images its mask's xor.
        let (mut members, mut parent, mut m) = ([0usize; 8], [0 as Pegs; 8], 0);
        for s in (0..8).filter(|&s| group.contains(s)) {
            (members[m], parent[m]) = (s, symmetry::apply(s, pegs));
            m += 1;
        }
        self.for_each_jump_index(pegs, |d, from| {
            let masks = &self.images[d][from as usize];
            let mut least = Pegs::MAX;
            for i in 0..m {
                least = least.min(parent[i] ^ masks[members[i]]);
            }
            f(least);
        });
    }

    /// Calls `f(child_canonical)` for every jump out of `pegs`, with the child
    /// already in canonical form (the least of its 8 images). Children reached
    /// by several jumps are reported once per jump.
    #[inline]
    pub fn for_each_canonical_child(&self, pegs: Pegs, mut f: impl FnMut(Pegs)) {
        let parent = symmetry::images(pegs);
        self.for_each_jump_index(pegs, |d, from| {
            let masks = &self.images[d][from as usize];
            let mut least = u64::MAX;
            for s in 0..8 {
                least = least.min(parent[s] ^ masks[s]);
            }
            f(least);
        });
    }
}
