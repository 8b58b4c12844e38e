//! The ranked game's view data (docs/RANKED.md): a position's top2 values,
//! after a first finish the race for second, and its moves with their
//! children's values, each marked when it keeps what the mover has
//! (through [`RankedProber`], the code behind `coordinator probe`).

use super::ApiError;
use retro_games::GameKind;
use retro_games::cc3::Position;
use retro_probe::ranked::{RankedProber, RankedReport};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The explorer over a ranked job's tablebase.
pub struct RankedExplorer {
    /// The opened layer (the `coordinator probe` code).
    pub prober: RankedProber,
}

/// A move with its child's values, as the page shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RankedMoveView {
    /// `from-to` by cell names, or `pass`.
    #[serde(rename = "move")]
    pub mv: String,
    /// The moving piece's cell (absent for a pass).
    pub from: Option<String>,
    /// Where it lands (absent for a pass).
    pub to: Option<String>,
    /// True when the move keeps the mover's top2 value (and so, after a
    /// finish, its race value): the page highlights these.
    pub keeps: bool,
    /// The child.
    pub child: RankedReport,
}

/// A position as the page shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RankedView {
    /// Always `cc3`.
    pub kind: GameKind,
    /// Always `ranked`.
    pub objective: &'static str,
    /// The top2 values, the race and the outcome.
    pub position: RankedReport,
    /// Each player's cells.
    pub pieces: BTreeMap<String, Vec<String>>,
    /// Nothing: the ranked view searches no depths.
    pub depth: Vec<Value>,
    /// Every legal move (or the pass) with its child.
    pub moves: Vec<RankedMoveView>,
}

impl RankedExplorer {
    /// Wraps an opened prober.
    pub fn new(prober: RankedProber) -> RankedExplorer {
        RankedExplorer { prober }
    }

    /// The board and the game, for `/api/info`.
    pub fn info(&self) -> Value {
        let mut info = super::cc3::board_info(&self.prober.game.cc3);
        info["objective"] = "ranked".into();
        info["title"] =
            format!("{}, ranked: play goes on for second place", info["title"].as_str().unwrap_or_default()).into();
        info["witnesses"] = Value::Array(Vec::new());
        info
    }

    /// Parses a position (the start when `text` is absent).
    fn parse(&self, text: Option<&str>) -> Result<Position, ApiError> {
        match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => Ok(self.prober.game.cc3.start()),
            Some(t) => self.prober.parse(t).map_err(|e| ApiError::bad_request(e.to_string())),
        }
    }

    /// A position with its values and moves.
    pub fn position(&self, text: Option<&str>) -> Result<RankedView, ApiError> {
        let pos = self.parse(text)?;
        let probe = self.prober.probe(&pos).map_err(ApiError::internal)?;
        if probe.position.outcome == "illegal" {
            return Err(ApiError::not_found(format!(
                "position {:?} cannot arise in the ranked game (a finished player to move, or three goals full)",
                probe.position.position
            )));
        }
        let pieces = super::cc3::pieces_of(&self.prober.game.cc3.star, &pos);
        let moves = probe
            .moves
            .into_iter()
            .map(|m| {
                let (from, to) = super::cc3::move_cells(&m.mv);
                RankedMoveView { mv: m.mv, from, to, keeps: m.keeps, child: m.child }
            })
            .collect();
        Ok(RankedView {
            kind: GameKind::Cc3,
            objective: "ranked",
            position: probe.position,
            pieces,
            depth: Vec::new(),
            moves,
        })
    }
}
