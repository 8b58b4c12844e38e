//! What the brute-force solvers of the test files share: their value type
//! and the reading of the engine's value bytes in its terms (nothing of the
//! rules, moves or ranking, which each solver writes on its own).

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
