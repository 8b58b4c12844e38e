//! What the brute-force solvers of the test files share: their value type,
//! the reading of the engine's value bytes in its terms, and the placements
//! of pieces on a set of cells (nothing of the rules, moves or ranking,
//! which each solver writes on its own).

use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN};
use retro_engine::values::tablebase_value;

/// A value of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Win,
    Loss,
    Draw,
    Illegal,
}

/// The engine's value in a solved state byte; `what` names the position in
/// the panic if the byte holds no value.
pub fn engine_value(byte: u8, what: &dyn std::fmt::Display) -> Value {
    match tablebase_value(byte) {
        VALUE_WIN => Value::Win,
        VALUE_LOSS => Value::Loss,
        VALUE_DRAW => Value::Draw,
        VALUE_ILLEGAL => Value::Illegal,
        other => panic!("{what}: value byte {other}"),
    }
}

/// Every placement of `k` pieces on the cells of `free` (sets of cells in
/// increasing order, by the next set with as many bits).
pub fn placements(free: u32, k: u32) -> Vec<u32> {
    let cells: Vec<u32> = (0..32).filter(|c| free & (1 << c) != 0).collect();
    let n = cells.len() as u32;
    let mut out = Vec::new();
    let mut s: u64 = (1 << k) - 1;
    while s < 1 << n {
        out.push(cells.iter().enumerate().filter(|&(i, _)| s & (1 << i) != 0).fold(0, |acc, (_, &c)| acc | 1 << c));
        let low = s & s.wrapping_neg();
        let ripple = s + low;
        s = ripple | (((s ^ ripple) >> 2) / low);
    }
    out
}
