//! The text picture of a position: seven lines, row 7 first, `o` for a peg,
//! `.` for an empty hole, a space off the board.

use super::{Board, Pegs};

/// Why a picture could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotationError {
    /// A character other than `o`, `.`, whitespace or `/`.
    #[error("unexpected character {0:?} in a peg picture (use 'o' for a peg, '.' for a hole)")]
    BadCharacter(char),
    /// The picture does not have one mark per hole.
    #[error("a {board} position needs {expected} marks (one per hole, row 7 first), found {found}")]
    WrongLength {
        /// The board's name.
        board: &'static str,
        /// Holes on the board.
        expected: u32,
        /// Marks found.
        found: usize,
    },
}

impl Board {
    /// The seven-line picture of `pegs`.
    pub fn picture(&self, pegs: Pegs) -> String {
        let mut out = String::with_capacity(64);
        for row in (0..7).rev() {
            let line: String = (0..7)
                .map(|col| {
                    let hole = row * 8 + col;
                    if !self.has_hole(hole) {
                        ' '
                    } else if pegs >> hole & 1 == 1 {
                        'o'
                    } else {
                        '.'
                    }
                })
                .collect();
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The picture on one line, rows separated by `/` (for command lines and URLs).
    pub fn picture_line(&self, pegs: Pegs) -> String {
        self.picture(pegs).split('\n').filter(|l| !l.is_empty()).map(str::trim).collect::<Vec<_>>().join("/")
    }

    /// Reads a picture: the marks of the holes in reading order (row 7 first,
    /// column a first); whitespace and `/` are ignored, so both the
    /// seven-line form and the one-line form are accepted.
    pub fn parse_picture(&self, text: &str) -> Result<Pegs, NotationError> {
        let mut marks = Vec::with_capacity(37);
        for ch in text.chars() {
            match ch {
                'o' | 'O' | 'x' | 'X' => marks.push(true),
                '.' | '_' => marks.push(false),
                c if c.is_whitespace() || c == '/' => {}
                c => return Err(NotationError::BadCharacter(c)),
            }
        }
        if marks.len() != self.hole_count() as usize {
            return Err(NotationError::WrongLength {
                board: self.kind().name(),
                expected: self.hole_count(),
                found: marks.len(),
            });
        }
        let mut pegs = 0;
        let mut next = marks.into_iter();
        for row in (0..7u8).rev() {
            for col in 0..7u8 {
                let hole = row * 8 + col;
                if self.has_hole(hole) && next.next() == Some(true) {
                    pegs |= 1 << hole;
                }
            }
        }
        Ok(pegs)
    }
}
