//! One interface over every kind of tablebase directory, by position text
//! and rank: what `coordinator probe` prints and what the Python package
//! (`python/`) returns, from one place.

use crate::{ProbeError, Tablebases, cc2};

impl Tablebases {
    /// The kind of game: `cc3` (three-player, first winner), `cc2`
    /// (two-player) or `ranked` (three-player, second place counts).
    pub fn kind(&self) -> &'static str {
        match self {
            Tablebases::ThreePlayer(_) => "cc3",
            Tablebases::TwoPlayer(_) => "cc2",
            Tablebases::Ranked(_) => "ranked",
        }
    }

    /// Ranks in one layer file (the rank space; ranks run from 0 to this).
    pub fn positions(&self) -> u64 {
        match self {
            Tablebases::ThreePlayer(p) => p.layer_positions(),
            Tablebases::TwoPlayer(p) => p.layer_positions(),
            Tablebases::Ranked(p) => p.layer_positions(),
        }
    }

    /// The start position's text.
    pub fn start_text(&self) -> String {
        match self {
            Tablebases::ThreePlayer(p) => p.game.format(&p.game.start()),
            Tablebases::TwoPlayer(p) => p.game.format(&p.game.start()),
            Tablebases::Ranked(p) => p.game.cc3.format(&p.game.cc3.start()),
        }
    }

    /// The rank of the position `text` names: where its values are stored
    /// (two-player boards folded by the mirror store a position with player 2
    /// to move at its mirror image's rank).
    pub fn rank_of_text(&self, text: &str) -> Result<u64, ProbeError> {
        Ok(match self {
            Tablebases::ThreePlayer(p) => p.game.rank(&p.parse(text)?),
            Tablebases::TwoPlayer(p) => p.game.rank_of(&p.parse(text)?).0,
            Tablebases::Ranked(p) => p.game.cc3.rank(&p.parse(text)?),
        })
    }

    /// The text of the position stored at `rank`.
    pub fn text_of_rank(&self, rank: u64) -> Result<String, ProbeError> {
        let positions = self.positions();
        if rank >= positions {
            return Err(ProbeError::Notation(format!("rank {rank} is past the last position ({positions} positions)")));
        }
        Ok(match self {
            Tablebases::ThreePlayer(p) => p.game.format(&p.game.unrank(rank)),
            Tablebases::TwoPlayer(p) => p.game.format(&p.game.unrank(rank)),
            Tablebases::Ranked(p) => p.game.cc3.format(&p.game.cc3.unrank(rank)),
        })
    }

    /// The values of the position `text` names (the start without one) and
    /// every move with its child's values: as JSON (`position`, `moves`; the
    /// document `coordinator probe --json` prints) and as plain text.
    pub fn probe_text(&self, text: Option<&str>) -> Result<(serde_json::Value, String), ProbeError> {
        match self {
            Tablebases::ThreePlayer(p) => {
                let pos = match text {
                    Some(t) => p.parse(t)?,
                    None => p.game.start(),
                };
                let r = p.probe(&pos)?;
                Ok((serde_json::to_value(&r)?, crate::cc3::text(&r)))
            }
            Tablebases::TwoPlayer(p) => {
                let pos = match text {
                    Some(t) => p.parse(t)?,
                    None => p.game.start(),
                };
                let position = p.report(&pos)?;
                let moves = p.moves(&pos)?;
                let text = two_player_text(&position, &moves);
                Ok((serde_json::json!({ "position": position, "moves": moves }), text))
            }
            Tablebases::Ranked(p) => {
                let pos = match text {
                    Some(t) => p.parse(t)?,
                    None => p.game.cc3.start(),
                };
                let r = p.probe(&pos)?;
                Ok((serde_json::to_value(&r)?, crate::ranked::text(&r)))
            }
        }
    }
}

/// A two-player position and its moves as plain text.
fn two_player_text(r: &cc2::Report, moves: &[cc2::Move]) -> String {
    let mut out = format!(
        "position {} (rank {}), {} to move, {}\nvalue for 1: {}; for the player to move: {}\n",
        r.position, r.rank, r.to_move, r.outcome, r.value, r.for_mover
    );
    if moves.is_empty() {
        out.push_str("no moves\n");
    } else {
        out.push_str(&format!("{} moves:\n", moves.len()));
        for m in moves {
            out.push_str(&format!("  {:<8} -> {} value for 1: {}\n", m.mv, m.child.position, m.child.value));
        }
    }
    out
}
