//! Two-player Chinese checkers: a position's value from the `solo(1)`
//! tablebase (folded by colour symmetry or not) and every move's.

use crate::{Layer, Plies, ProbeError, Value, check_rank_order};
use retro_engine::tablebase::{TablebaseReader, layer_file_name};
use retro_games::GameKind;
use retro_games::RetroGame;
use retro_games::cc2::{Cc2, Folding, Outcome, PLAYER_NAMES, Part2, Position, children, for_each_move};
use serde::Serialize;
use std::path::Path;

/// The layer a two-player job computes: player 1 forces a win.
pub const LAYER: &str = "solo(1)";

/// A two-player job's tablebase, opened for probing (`&self` throughout).
pub struct Prober {
    /// The game, from the file's header.
    pub game: Cc2,
    layer: Layer,
}

/// A position's value, in words.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The position in the text notation.
    pub position: String,
    /// Its rank in the file (the rank of its colour-swapped twin when the
    /// file is folded and player 2 is to move).
    pub rank: u64,
    /// Player to move, `1` or `2`.
    pub to_move: String,
    /// `ongoing`, `won by 1`, `won by 2` (the player to move has no move or
    /// the other has filled its goal), or `illegal`.
    pub outcome: String,
    /// For player 1: `win`, `loss` or `draw`.
    pub value: String,
    /// For the player to move: `win`, `loss` or `draw`.
    pub for_mover: String,
    /// Plies to the end under best play (the winner hurrying, the loser
    /// delaying), where the layer's depth file keeps them; absent for a draw
    /// or a depth not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plies: Option<u32>,
}

/// A move and its child.
#[derive(Clone, Debug, Serialize)]
pub struct Move {
    /// `from-to` by cell names.
    #[serde(rename = "move")]
    pub mv: String,
    /// The moving piece's cell.
    pub from: String,
    /// Where it lands.
    pub to: String,
    /// The child.
    pub child: Report,
}

impl Prober {
    /// Opens `solo_1.tb` in `dir` and checks that it is a two-player file of
    /// this program's rank order.
    pub fn open(dir: &Path) -> Result<Prober, ProbeError> {
        let path = dir.join(layer_file_name(LAYER));
        let reader = TablebaseReader::open(&path)?;
        let h = reader.header().clone();
        if h.game != GameKind::Cc2.as_str() || h.layer != LAYER {
            return Err(ProbeError::Mismatch(format!(
                "{}: header says game {} layer {}, expected cc2 {LAYER}",
                path.display(),
                h.game,
                h.layer
            )));
        }
        let num = |k: &str| {
            h.params
                .get(k)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| ProbeError::Mismatch(format!("{}: the header has no {k}", path.display())))
        };
        let (size, pieces) = (num("size")? as u32, num("pieces")? as u32);
        let flag = |k: &str| h.params.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
        let folding = Folding { colour: flag("colour_symmetry"), mirror: flag("mirror_symmetry") };
        check_rank_order(&reader, retro_games::cc2::rank_order_of(folding))?;
        let part2 = match h.params.get("part2").and_then(|v| v.as_str()) {
            None => Part2::Literal,
            Some(name) => Part2::parse(name).ok_or_else(|| {
                ProbeError::Mismatch(format!("{}: unknown part-2 reading {name:?} in the header", path.display()))
            })?,
        };
        let game = Cc2::with_rules(size, pieces, folding, part2)
            .map_err(|e| ProbeError::Mismatch(format!("{}: {e}", path.display())))?;
        if game.position_count() != h.positions {
            return Err(ProbeError::Mismatch(format!(
                "{}: holds {} positions, the game has {}",
                path.display(),
                h.positions,
                game.position_count()
            )));
        }
        let depth = dir.join(retro_engine::tablebase::depth_file_name(LAYER));
        Ok(Prober { game, layer: Layer::with_depth_at(reader, &depth)? })
    }

    /// Ranks in the layer file (its header's positions).
    pub fn layer_positions(&self) -> u64 {
        self.layer.reader().header().positions
    }

    /// A position from its text notation.
    pub fn parse(&self, text: &str) -> Result<Position, ProbeError> {
        self.game.parse(text).map_err(|e| ProbeError::Notation(e.to_string()))
    }

    /// The value for player 1 at `pos`.
    pub fn value(&self, pos: &Position) -> Result<Value, ProbeError> {
        let (rank, negated) = self.game.rank_of(pos);
        let v = self.layer.value(rank)?;
        Ok(if negated { v.negate() } else { v })
    }

    /// The plies to the end of `pos` under best play, from the depth file
    /// ([`Plies::Unknown`] without one).
    pub fn plies(&self, pos: &Position) -> Result<Plies, ProbeError> {
        self.layer.plies(self.game.rank_of(pos).0)
    }

    /// The value stored at `rank` of the file (for player 1 when the file is
    /// not folded; for the player to move's colour-swapped view otherwise).
    pub fn value_at_rank(&self, rank: u64) -> Result<Value, ProbeError> {
        self.layer.value(rank)
    }

    /// Describes one position.
    pub fn report(&self, pos: &Position) -> Result<Report, ProbeError> {
        let (rank, negated) = self.game.rank_of(pos);
        let stored = self.layer.value(rank)?;
        let v = if negated { stored.negate() } else { stored };
        let mover = if pos.turn == 1 { v.negate() } else { v };
        let outcome = match pos.outcome(&self.game.board) {
            Outcome::Won(p) => format!("won by {}", PLAYER_NAMES[p as usize]),
            Outcome::Illegal => "illegal".into(),
            Outcome::Ongoing if children(&self.game.board, pos).is_empty() => {
                format!("won by {} (the player to move has no move)", PLAYER_NAMES[1 - pos.turn as usize])
            }
            Outcome::Ongoing => "ongoing".into(),
        };
        Ok(Report {
            position: self.game.format(pos),
            rank,
            to_move: PLAYER_NAMES[pos.turn as usize].into(),
            outcome,
            value: v.word().into(),
            for_mover: mover.word().into(),
            plies: match self.layer.plies(rank)? {
                Plies::Known(p) => Some(p),
                _ => None,
            },
        })
    }

    /// Every legal move of `pos` with its child's value (none once the game is over).
    pub fn moves(&self, pos: &Position) -> Result<Vec<Move>, ProbeError> {
        let b = &self.game.board;
        let mut moves = Vec::new();
        if pos.outcome(b) != Outcome::Ongoing {
            return Ok(moves);
        }
        let t = pos.turn as usize;
        let mut list = Vec::new();
        for_each_move(b, pos, &mut |from, to| list.push((from, to)));
        for (from, to) in list {
            let mut child = *pos;
            child.pieces[t] ^= (1u64 << from) | (1u64 << to);
            child.turn = 1 - pos.turn;
            let (from, to) = (b.cell_name(from), b.cell_name(to));
            moves.push(Move { mv: format!("{from}-{to}"), from, to, child: self.report(&child)? });
        }
        Ok(moves)
    }
}
