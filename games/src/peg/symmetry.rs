//! The 8 symmetries of the square on the 8 x 8 bit layout.
//!
//! Symmetry `s` applies, in this order, a left-right mirror (bit 0 of `s`), a
//! top-bottom mirror (bit 1) and a transpose (bit 2). Because the board sits in
//! rows and columns 0..7 of an 8 x 8 word, each is a few word operations: a
//! byte swap mirrors rows, a per-byte bit reversal mirrors columns, and three
//! delta swaps transpose.

use super::Pegs;

/// Mirrors columns: column c goes to 6 - c.
#[inline]
pub fn mirror_columns(x: Pegs) -> Pegs {
    // reverse_bits + swap_bytes reverses the bits inside each byte (c -> 7 - c);
    // the empty eighth column then sits in column 0, so shift every byte down one.
    x.reverse_bits().swap_bytes() >> 1
}

/// Mirrors rows: row r goes to 6 - r.
#[inline]
pub fn mirror_rows(x: Pegs) -> Pegs {
    x.swap_bytes() >> 8
}

/// Transposes: (row, col) goes to (col, row).
#[inline]
pub fn transpose(mut x: Pegs) -> Pegs {
    const K1: u64 = 0x5500_5500_5500_5500;
    const K2: u64 = 0x3333_0000_3333_0000;
    const K4: u64 = 0x0f0f_0f0f_0000_0000;
    let t = K4 & (x ^ (x << 28));
    x ^= t ^ (t >> 28);
    let t = K2 & (x ^ (x << 14));
    x ^= t ^ (t >> 14);
    let t = K1 & (x ^ (x << 7));
    x ^ t ^ (t >> 7)
}

/// Applies symmetry `s` (0..8).
pub fn apply(s: usize, x: Pegs) -> Pegs {
    let mut y = x;
    if s & 1 != 0 {
        y = mirror_columns(y);
    }
    if s & 2 != 0 {
        y = mirror_rows(y);
    }
    if s & 4 != 0 {
        y = transpose(y);
    }
    y
}

/// All 8 images, indexed like [`apply`].
#[inline]
pub fn images(x: Pegs) -> [Pegs; 8] {
    let h = mirror_columns(x);
    let v = mirror_rows(x);
    let hv = mirror_rows(h);
    [x, h, v, hv, transpose(x), transpose(h), transpose(v), transpose(hv)]
}

/// The representative of `x`'s orbit: the least of its 8 images.
#[inline]
pub fn canonical(x: Pegs) -> Pegs {
    images(x).into_iter().min().unwrap_or(x)
}

/// The number of symmetries that fix `x` (1, 2, 4 or 8).
pub fn stabiliser_size(x: Pegs) -> u32 {
    images(x).into_iter().filter(|&y| y == x).count() as u32
}

/// The number of distinct images of `x`: `8 / stabiliser_size(x)`.
#[inline]
pub fn orbit_size(x: Pegs) -> u32 {
    let all = images(x);
    8 / all.iter().filter(|&&y| y == x).count() as u32
}

/// A subgroup of the 8 symmetries, as a bit mask (bit `s` for [`apply`]'s
/// index `s`). Levels of a start are folded by the symmetries that fix the
/// start and no others: folding by one that moves the start would merge the
/// positions reachable from the start with those reachable from its image,
/// and the counts per position would no longer be the start's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Group(u8);

impl Group {
    /// All 8 symmetries (the start is fixed by all of them, as d4 is).
    pub const ALL: Group = Group(0xff);
    /// The identity alone (the start has no symmetry, as c1 has none).
    pub const TRIVIAL: Group = Group(1);

    /// The symmetries that fix `x`: a subgroup, since the ones fixing a set compose.
    pub fn stabiliser(x: Pegs) -> Group {
        let all = images(x);
        Group((0..8).filter(|&s| all[s] == x).fold(0, |mask, s| mask | 1 << s))
    }

    /// The group with mask `mask`, if `mask` is one (contains the identity and is closed).
    pub fn from_mask(mask: u8) -> Option<Group> {
        let closed = (0..8).filter(|a| mask >> a & 1 == 1).all(|a| {
            (0..8).filter(|b| mask >> b & 1 == 1).all(|b| {
                // The composition a∘b, found by where it sends a position with no symmetry.
                let probe: Pegs = 0b11 | 1 << 8 | 1 << 17;
                let ab = apply(a, apply(b, probe));
                (0..8).any(|c| mask >> c & 1 == 1 && apply(c, probe) == ab)
            })
        });
        (mask & 1 == 1 && closed).then_some(Group(mask))
    }

    /// The mask.
    pub fn mask(self) -> u8 {
        self.0
    }

    /// Whether symmetry `s` belongs to the group.
    #[inline]
    pub fn contains(self, s: usize) -> bool {
        self.0 >> s & 1 == 1
    }

    /// Number of symmetries in the group (1, 2, 4 or 8).
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Never true: every group holds the identity (for clippy's `len` rule).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The representative of `x`'s orbit under the group: the least image.
    #[inline]
    pub fn canonical(self, x: Pegs) -> Pegs {
        if self == Group::ALL {
            return canonical(x);
        }
        let all = images(x);
        (0..8).filter(|&s| self.contains(s)).map(|s| all[s]).min().unwrap_or(x)
    }

    /// The number of distinct images of `x` under the group.
    #[inline]
    pub fn orbit_size(self, x: Pegs) -> u32 {
        if self == Group::ALL {
            return orbit_size(x);
        }
        let all = images(x);
        let fixing = (0..8).filter(|&s| self.contains(s) && all[s] == x).count() as u32;
        self.len() / fixing
    }
}
