//! De Bruijn's position class: two sums in GF(4) that no jump changes.
//!
//! GF(4) = {0, 1, p, p^2} with p^2 = p + 1. Written over GF(2) in the basis
//! (1, p), addition is xor on two bits: 1 = 0b01, p = 0b10, p^2 = 0b11, and
//! p^3 = 1. A peg at row r, column c adds p^(r+c) to sum A and p^(r-c) to sum
//! B. A jump removes pegs worth p^k and p^(k+1) and adds one worth p^(k+2);
//! since 1 + p + p^2 = 0 the sums stay put.

use super::Pegs;

/// A position class: `(A, B)`, each a GF(4) element in two bits; 16 classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PositionClass {
    /// Sum of p^(row + col).
    pub a: u8,
    /// Sum of p^(row - col).
    pub b: u8,
}

/// p^k for k mod 3 = 0, 1, 2, in the two-bit encoding.
const POWER: [u8; 3] = [0b01, 0b10, 0b11];

/// The class of a set of pegs.
pub fn class_of(pegs: Pegs) -> PositionClass {
    let (mut a, mut b) = (0u8, 0u8);
    let mut rest = pegs;
    while rest != 0 {
        let hole = rest.trailing_zeros() as i32;
        rest &= rest - 1;
        let (row, col) = (hole / 8, hole % 8);
        a ^= POWER[(row + col).rem_euclid(3) as usize];
        b ^= POWER[(row - col).rem_euclid(3) as usize];
    }
    PositionClass { a, b }
}

/// The class of a lone peg on `hole`.
pub fn class_of_hole(hole: u8) -> PositionClass {
    class_of(1 << hole)
}

/// True when a jump sequence from `start` to a lone peg on `finish` is not
/// ruled out by the class invariant.
pub fn feasible(start: Pegs, finish: u8) -> bool {
    class_of(start) == class_of_hole(finish)
}
