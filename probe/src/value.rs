//! A tablebase value as a type: what a probe answers, in place of the
//! two-bit code the files store (docs/FORMAT.md).

use retro_engine::tablebase::{VALUE_DRAW, VALUE_ILLEGAL, VALUE_LOSS, VALUE_WIN};
use serde::Serialize;

/// The value of a position for the player a layer asks about. The
/// discriminants are the files' two-bit codes, so `v as usize` indexes a
/// table by value the way the stored byte does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Value {
    /// Neither side can force the question (or it is not decided).
    Draw = VALUE_DRAW,
    /// The player can force it.
    Win = VALUE_WIN,
    /// The others can keep the player from it.
    Loss = VALUE_LOSS,
    /// Not a position of the game (overlapping pieces, two winners).
    Illegal = VALUE_ILLEGAL,
}

impl Value {
    /// The value a file stores as `code` (its low two bits).
    pub const fn from_code(code: u8) -> Value {
        match code & 3 {
            VALUE_DRAW => Value::Draw,
            VALUE_WIN => Value::Win,
            VALUE_LOSS => Value::Loss,
            _ => Value::Illegal,
        }
    }

    /// The two-bit code a file stores for this value.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// `win`, `loss`, `draw` or `illegal`, as summaries and the explorer write it.
    pub const fn word(self) -> &'static str {
        match self {
            Value::Win => "win",
            Value::Loss => "loss",
            Value::Draw => "draw",
            Value::Illegal => "illegal",
        }
    }

    /// The value seen by the other side of a two-player game (win and loss swap).
    pub const fn negate(self) -> Value {
        match self {
            Value::Win => Value::Loss,
            Value::Loss => Value::Win,
            v => v,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    #[test]
    fn codes_round_trip_and_negation_is_an_involution() {
        for code in 0..4u8 {
            let v = Value::from_code(code);
            assert_eq!(v.code(), code);
            assert_eq!(v.negate().negate(), v);
        }
        assert_eq!(Value::Win.negate(), Value::Loss);
        assert_eq!(Value::Draw.negate(), Value::Draw);
        assert_eq!(Value::from_code(retro_engine::tablebase::VALUE_WIN).word(), "win");
    }
}
