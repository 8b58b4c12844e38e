//! Text notation for positions and the board picture that names every cell.
//!
//! Notation: `<A's cells>/<B's cells>/<C's cells> <player to move>`, cells by
//! name separated by commas, e.g. the order-2 start `h1,h2,i1/d6,c6,c7/c2,d1,c1 A`.
//! Cell names: rows `a`, `b`, ... from A's goal tip to A's start tip, columns
//! counted from 1 left to right in [`Cc3::board_picture`].

use super::Cc3;
use super::position::Position;
use super::star::PLAYER_NAMES;

/// Why a position text was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotationError {
    /// The text does not have the `cells/cells/cells turn` shape.
    #[error("position {text:?}: expected `A-cells/B-cells/C-cells TURN`, e.g. {example:?}")]
    Shape {
        /// The offending text.
        text: String,
        /// A valid example for this board.
        example: String,
    },
    /// A cell name that is not on this board.
    #[error("position {text:?}: no cell named {cell:?} on this board (see `coordinator board`)")]
    UnknownCell {
        /// The offending text.
        text: String,
        /// The unknown name.
        cell: String,
    },
    /// Wrong number of pieces, overlap, a closed lane, or an unknown player.
    #[error("position {text:?}: {why}")]
    Invalid {
        /// The offending text.
        text: String,
        /// What is wrong.
        why: String,
    },
}

impl Cc3 {
    /// Formats a position in the text notation.
    pub fn format(&self, pos: &Position) -> String {
        let mut parts = Vec::new();
        for p in 0..3 {
            let mut names = Vec::new();
            let mut b = pos.pieces[p];
            while b != 0 {
                names.push(self.star.names[b.trailing_zeros() as usize].clone());
                b &= b - 1;
            }
            parts.push(names.join(","));
        }
        format!("{} {}", parts.join("/"), PLAYER_NAMES[pos.turn as usize])
    }

    /// Parses the text notation, checking piece counts, overlaps and lanes.
    pub fn parse(&self, text: &str) -> Result<Position, NotationError> {
        let shape = || NotationError::Shape { text: text.to_string(), example: self.format(&self.start()) };
        let invalid = |why: String| NotationError::Invalid { text: text.to_string(), why };
        let mut words = text.split_whitespace();
        let (Some(cells), Some(turn), None) = (words.next(), words.next(), words.next()) else {
            return Err(shape());
        };
        let turn = match turn {
            "A" | "a" => 0,
            "B" | "b" => 1,
            "C" | "c" => 2,
            other => return Err(invalid(format!("player to move {other:?} is not A, B or C"))),
        };
        let groups: Vec<&str> = cells.split('/').collect();
        if groups.len() != 3 {
            return Err(shape());
        }
        let mut pieces = [0u128; 3];
        for (p, group) in groups.iter().enumerate() {
            for name in group.split(',').filter(|s| !s.is_empty()) {
                let cell = self
                    .star
                    .cell_by_name(name)
                    .ok_or_else(|| NotationError::UnknownCell { text: text.to_string(), cell: name.to_string() })?;
                let bit = 1u128 << cell;
                if (pieces[0] | pieces[1] | pieces[2]) & bit != 0 {
                    return Err(invalid(format!("cell {name} is used twice")));
                }
                if self.star.lane_mask[p] & bit == 0 {
                    return Err(invalid(format!("cell {name} is in a corner closed to player {}", PLAYER_NAMES[p])));
                }
                pieces[p] |= bit;
            }
            let count = pieces[p].count_ones() as usize;
            if count != self.star.k {
                return Err(invalid(format!(
                    "player {} has {count} pieces, this board needs {}",
                    PLAYER_NAMES[p], self.star.k
                )));
            }
        }
        Ok(Position { pieces, turn })
    }

    /// The board as text: every cell's name at its place (when `pos` is `None`), or
    /// the pieces (`A`, `B`, `C`, `.` for an empty cell). Corners are labelled.
    pub fn board_picture(&self, pos: Option<&Position>) -> String {
        let n = self.star.n as i32;
        let mut out = String::new();
        for x in -2 * n..=2 * n {
            let mut line = vec![b' '; (8 * n as usize + 1) * 2 + 4];
            for (c, &(cx, y, z)) in self.star.cubes.iter().enumerate() {
                if cx != x {
                    continue;
                }
                let col = ((y - z + 4 * n) * 2) as usize;
                let label = match pos {
                    None => self.star.names[c].clone(),
                    Some(p) => (0..3)
                        .find(|&q| p.pieces[q] & (1u128 << c) != 0)
                        .map(|q| PLAYER_NAMES[q].to_string())
                        .unwrap_or_else(|| ".".to_string()),
                };
                for (i, ch) in label.bytes().enumerate() {
                    if col + i < line.len() {
                        line[col + i] = ch;
                    }
                }
            }
            out.push_str(String::from_utf8_lossy(&line).trim_end());
            out.push('\n');
        }
        if let Some(p) = pos {
            out.push_str(&format!("{} to move\n", PLAYER_NAMES[p.turn as usize]));
        } else {
            out.push_str(
                "A starts in the bottom corner and goes to the top one; B starts upper right and goes to lower left;\n\
                 C starts upper left and goes to lower right. Turn order A, B, C.\n",
            );
        }
        out
    }
}
