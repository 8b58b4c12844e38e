//! The two-player view's data: the diamond, a position's value from the
//! `solo(1)` tablebase (folded by colour symmetry or not) and every move's.

use super::ApiError;
use super::depth::{Forcing, plies_to_end};
use super::limits::Stop;
use retro_games::GameKind;
use retro_games::cc2::{Outcome, PLAYER_NAMES, Position, children};
use retro_probe::Value as ProbeValue;
use retro_probe::{Plies, ProbeError};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// Positions one depth search may visit (see the three-player view).
const DEPTH_BUDGET: u64 = 100_000;

/// The layer a two-player job computes.
pub use retro_probe::cc2::LAYER;

/// The explorer over a two-player job's tablebase.
pub struct Cc2Explorer {
    /// The game and its tablebase.
    pub prober: retro_probe::cc2::Prober,
}

/// A position's value, as the page shows it (the probe library's report).
pub use retro_probe::cc2::Report as Cc2Report;

/// A move and its child.
pub use retro_probe::cc2::Move as Cc2Move;

/// A position with its moves.
#[derive(Clone, Debug, Serialize)]
pub struct Cc2View {
    /// Always `cc2`.
    pub kind: GameKind,
    /// The position.
    pub position: Cc2Report,
    /// Each player's cells.
    pub pieces: BTreeMap<String, Vec<String>>,
    /// Plies to the end when the winner hurries and the loser delays (absent
    /// for a draw, or when the search gave up: see `depth_note`).
    pub plies: Option<u32>,
    /// Why `plies` is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth_note: Option<String>,
    /// Every legal move with its child.
    pub moves: Vec<Cc2Move>,
}

impl Cc2Explorer {
    /// Opens `solo_1.tb` in `dir`.
    pub fn open(dir: &Path) -> Result<Cc2Explorer, ProbeError> {
        let prober = retro_probe::cc2::Prober::open(dir)?;
        Ok(Cc2Explorer { prober })
    }

    /// The board and the game, for `/api/info`.
    pub fn info(&self) -> Value {
        let b = &self.prober.game.board;
        let cells: Vec<Value> = (0..b.cells)
            .map(|c| {
                let (x, y) = (b.coords[c].0 as i64, b.coords[c].1 as i64);
                let bit = 1u64 << c;
                // Each corner is one player's goal and the other's start; the
                // page marks it by the goal, where its owner has to go.
                let (zone, owner) = match (0..2).find(|&p| b.goal[p] & bit != 0) {
                    Some(p) => ("goal", Some(PLAYER_NAMES[p])),
                    None => ("centre", None),
                };
                // The diamond stands on player 1's tip: rows x + y run down the
                // screen and x - y across, in half-cell units as in the star.
                json!({ "name": b.cell_name(c), "u": x - y, "v": x + y, "zone": zone, "owner": owner })
            })
            .collect();
        json!({
            "kind": GameKind::Cc2,
            "title": format!(
                "Two-player Chinese checkers, {0} x {0} diamond, {1} piece{2} each",
                b.size, b.pieces, if b.pieces == 1 { "" } else { "s" }
            ),
            "size": b.size,
            "pieces": b.pieces,
            "colour_symmetry": self.prober.game.is_folded(),
            "mirror_symmetry": self.prober.game.folding().mirror,
            "positions": 2 * self.prober.game.positions_per_side(),
            "players": PLAYER_NAMES,
            "start": self.prober.game.format(&self.prober.game.start()),
            "cells": cells,
            "witnesses": Vec::<String>::new(),
        })
    }

    /// Parses a position (the start when `text` is absent).
    pub fn parse(&self, text: Option<&str>) -> Result<Position, ApiError> {
        let pos = match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => return Ok(self.prober.game.start()),
            Some(t) => self.prober.game.parse(t).map_err(|e| ApiError::bad_request(e.to_string()))?,
        };
        if pos.outcome(&self.prober.game.board) == Outcome::Illegal {
            return Err(ApiError::not_found(format!(
                "position {:?} cannot arise in play (the player to move has already filled its goal): \
                 the tablebase holds no value for it",
                self.prober.game.format(&pos)
            )));
        }
        Ok(pos)
    }

    /// The value for player 1 at `pos`.
    fn value(&self, pos: &Position) -> Result<ProbeValue, ProbeError> {
        self.prober.value(pos)
    }

    /// A position with its value, depth and moves (the depth search stops
    /// when `stop` says so, and says why).
    pub fn position(&mut self, text: Option<&str>, stop: &Stop) -> Result<Cc2View, ApiError> {
        let pos = self.parse(text)?;
        let position = self.prober.report(&pos).map_err(|e| ApiError::internal(e.to_string()))?;
        let b = &self.prober.game.board;
        let pieces = (0..2)
            .map(|p| {
                let cells = (0..b.cells).filter(|&c| pos.pieces[p] >> c & 1 == 1).map(|c| b.cell_name(c)).collect();
                (PLAYER_NAMES[p].to_string(), cells)
            })
            .collect();
        let moves = self.prober.moves(&pos).map_err(|e| ApiError::internal(e.to_string()))?;
        let v = self.value(&pos).map_err(ApiError::internal)?;
        let recorded = self.prober.plies(&pos).map_err(ApiError::internal)?;
        let (plies, depth_note) = if let Plies::Known(p) = recorded {
            (Some(p), None)
        } else if v == ProbeValue::Win || v == ProbeValue::Loss {
            let mut f = Cc2Forcing { ex: self, target: v };
            let mut budget = DEPTH_BUDGET;
            match plies_to_end(&mut f, pos, &mut budget, stop).map_err(ApiError::internal)? {
                Some(p) => (Some(p), None),
                None => match stop.check() {
                    Some(halt) => (None, Some(format!("not searched to the end: {}", stop.describe(halt)))),
                    None => (None, Some(format!("deeper than a search of {DEPTH_BUDGET} positions reaches"))),
                },
            }
        } else {
            (None, None)
        };
        Ok(Cc2View { kind: GameKind::Cc2, position, pieces, plies, depth_note, moves })
    }
}

/// The tablebase as a [`Forcing`] game for the winner: player 1 when the
/// value is WIN, player 2 when it is LOSS.
struct Cc2Forcing<'a> {
    ex: &'a mut Cc2Explorer,
    target: ProbeValue,
}

impl Forcing for Cc2Forcing<'_> {
    type Pos = Position;

    fn children(&self, pos: &Position) -> Vec<Position> {
        if pos.outcome(&self.ex.prober.game.board) != Outcome::Ongoing {
            return Vec::new();
        }
        children(&self.ex.prober.game.board, pos)
    }

    fn forcer_moves(&self, pos: &Position) -> bool {
        (pos.turn == 0) == (self.target == ProbeValue::Win)
    }

    fn forced(&mut self, pos: &Position) -> Result<bool, ProbeError> {
        Ok(self.ex.value(pos)? == self.target)
    }

    fn finished(&self, pos: &Position) -> bool {
        // A player without a move loses: that ends the game too.
        pos.outcome(&self.ex.prober.game.board) != Outcome::Ongoing
            || children(&self.ex.prober.game.board, pos).is_empty()
    }
}
