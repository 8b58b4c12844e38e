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
