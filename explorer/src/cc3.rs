//! The three-player view's data: the star, a position's 12 answers and its
//! moves (through [`Prober`], the code behind `coordinator probe`), the plies
//! to the end of each decided answer, and the witnesses.

use super::ApiError;
use super::depth::{Forcing, plies_to_end};
use super::limits::Stop;
use clap::ValueEnum;
use retro_games::GameKind;
use retro_games::cc3::{Outcome, PLAYER_NAMES, Position, children};
use retro_probe::Value as ProbeValue;
use retro_probe::cc3::{PositionReport, Prober};
use retro_probe::{Plies, ProbeError};
use retro_results::cc3::analysis::{self, ENABLE_NAMES, ENABLE_PAIRS};
use retro_results::cc3::witness::{self, WitnessKind};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// Positions one depth search may visit: every stage-1 answer fits many times
/// over; deep stage-2 answers are reported as unknown rather than keeping the
/// page waiting.
const DEPTH_BUDGET: u64 = 100_000;

/// Positions all the depth searches of one position may visit together (up
/// to nine answers are decided), which bounds a stage-2 page's wait.
const DEPTH_BUDGET_PER_POSITION: u64 = 300_000;

/// The explorer over a three-player job's tablebases.
pub struct Cc3Explorer {
    /// The opened layers (the `coordinator probe` code).
    pub prober: Prober,
    /// Witnesses found so far, by kind (a search can take long on stage 2).
    witnesses: HashMap<&'static str, Value>,
}

/// One decided answer and how far its end is.
#[derive(Clone, Debug, Serialize)]
pub struct DepthLine {
    /// `solo(X)` or `enable(X>Y)`.
    pub question: String,
    /// `win`, `loss` (solo) or `forced` (enable).
    pub value: String,
    /// Who forces it.
    pub forcer: String,
    /// Plies to the end when the forcer hurries and the others delay; absent
    /// when the search gave up (see `note`).
    pub plies: Option<u32>,
    /// Why `plies` is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A move with its child's answers, as the page shows it.
#[derive(Clone, Debug, Serialize)]
pub struct MoveView {
    /// `from-to` by cell names, or `pass`.
    #[serde(rename = "move")]
    pub mv: String,
    /// The moving piece's cell (absent for a pass).
    pub from: Option<String>,
    /// Where it lands (absent for a pass).
    pub to: Option<String>,
    /// The players with a forced solo win in the child: a kingmaker's choice
    /// reads "this move hands the win to B".
    pub forced_win: Vec<String>,
    /// The child.
    pub child: PositionReport,
}

/// A position as the page shows it.
#[derive(Clone, Debug, Serialize)]
pub struct PositionView {
    /// Always `cc3`.
    pub kind: GameKind,
    /// The 12 answers, category and outcome.
    pub position: PositionReport,
    /// Each player's cells.
    pub pieces: BTreeMap<String, Vec<String>>,
    /// Plies to the end of each decided answer.
    pub depth: Vec<DepthLine>,
    /// Every legal move (or the pass) with its child.
    pub moves: Vec<MoveView>,
}

impl Cc3Explorer {
    /// Wraps an opened prober.
    pub fn new(prober: Prober) -> Cc3Explorer {
        Cc3Explorer { prober, witnesses: HashMap::new() }
    }

    /// The board and the game, for `/api/info`.
    pub fn info(&self) -> Value {
        let mut info = board_info(&self.prober.game);
        info["witnesses"] = WitnessKind::value_variants().iter().map(|k| k.name()).collect::<Vec<_>>().into();
        info
    }

    /// Parses a position (the start when `text` is absent).
    pub fn parse(&self, text: Option<&str>) -> Result<Position, ApiError> {
        let g = &self.prober.game;
        let pos = match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => return Ok(g.start()),
            Some(t) => g.parse(t).map_err(|e| ApiError::bad_request(e.to_string()))?,
        };
        if pos.outcome(&g.star) == Outcome::Illegal {
            return Err(ApiError::not_found(format!(
                "position {:?} cannot arise in play (two goals are full): the tablebases hold no value for it",
                g.format(&pos)
            )));
        }
        Ok(pos)
    }

    /// A position with its answers, depths and moves (depth searches stop
    /// when `stop` says so, and say why).
    pub fn position(&mut self, text: Option<&str>, stop: &Stop) -> Result<PositionView, ApiError> {
        let pos = self.parse(text)?;
        let probe = self.prober.probe(&pos).map_err(ApiError::internal)?;
        let pieces = pieces_of(&self.prober.game.star, &pos);
        let moves = probe
            .moves
            .into_iter()
            .map(|m| {
                let (from, to) = move_cells(&m.mv);
                let forced_win = m.child.solo.iter().filter(|(_, v)| *v == "win").map(|(p, _)| p.clone()).collect();
                MoveView { mv: m.mv, from, to, forced_win, child: m.child }
            })
            .collect();
        let depth = self.depths(&pos, stop)?;
        Ok(PositionView { kind: GameKind::Cc3, position: probe.position, pieces, depth, moves })
    }

    /// Plies to the end of every decided solo answer and forced enable.
    fn depths(&mut self, pos: &Position, stop: &Stop) -> Result<Vec<DepthLine>, ApiError> {
        if pos.outcome(&self.prober.game.star) != Outcome::Ongoing {
            return Ok(Vec::new());
        }
        let a = self.prober.answers(pos).map_err(ApiError::internal)?;
        let mut wanted = Vec::new();
        for x in 0..3 {
            let name = format!("solo({})", PLAYER_NAMES[x]);
            let others = format!("{} and {}", PLAYER_NAMES[(x + 1) % 3], PLAYER_NAMES[(x + 2) % 3]);
            match a.solo[x] {
                ProbeValue::Win => {
                    wanted.push((name, "win", PLAYER_NAMES[x].to_string(), LayerQuery::solo(x, ProbeValue::Win)))
                }
                ProbeValue::Loss => wanted.push((name, "loss", others, LayerQuery::solo(x, ProbeValue::Loss))),
                _ => {}
            }
        }
        for (i, &(x, y)) in ENABLE_PAIRS.iter().enumerate() {
            if a.enable[x][y] {
                let who = format!("{} and {}", PLAYER_NAMES[x], PLAYER_NAMES[y]);
                wanted.push((format!("enable({})", ENABLE_NAMES[i]), "forced", who, LayerQuery::enable(x, y)));
            }
        }
        let mut out = Vec::new();
        let mut left = DEPTH_BUDGET_PER_POSITION;
        let ranks = analysis::rotation_ranks(&self.prober.game, pos);
        for (question, value, forcer, q) in wanted {
            // The depth file's word where the job kept it; a search otherwise.
            if let Plies::Known(p) = self.prober.layer_plies(q.layer, ranks[q.rotation]).map_err(ApiError::internal)? {
                out.push(DepthLine { question, value: value.into(), forcer, plies: Some(p), note: None });
                continue;
            }
            let mut f = QuestionGame { prober: &mut self.prober, q };
            let mut budget = DEPTH_BUDGET.min(left);
            let given = budget;
            let plies = plies_to_end(&mut f, *pos, &mut budget, stop).map_err(ApiError::internal)?;
            left -= given - budget;
            let note = plies.is_none().then(|| match (stop.check(), given) {
                (Some(halt), _) => format!("not searched to the end: {}", stop.describe(halt)),
                (None, 0) => "not searched: the other answers used this position's search budget".to_string(),
                (None, _) => format!("deeper than a search of {given} positions reaches"),
            });
            out.push(DepthLine { question, value: value.into(), forcer, plies, note });
        }
        Ok(out)
    }

    /// A witness of `kind` (`solo-win`, `spoiler-draw`, `kingmaker`, `draw-cycle`).
    pub fn witness(&mut self, kind: &str) -> Result<Value, ApiError> {
        let k = WitnessKind::from_str(kind, false).map_err(|_| {
            let known: Vec<&str> = WitnessKind::value_variants().iter().map(|k| k.name()).collect();
            ApiError::bad_request(format!("unknown witness kind {kind:?}: use one of {}", known.join(", ")))
        })?;
        if let Some(w) = self.witnesses.get(k.name()) {
            return Ok(w.clone());
        }
        let w = witness::find(&self.prober, k, None).map_err(ApiError::internal)?;
        let v = serde_json::to_value(&w).map_err(ApiError::internal)?;
        self.witnesses.insert(k.name(), v.clone());
        Ok(v)
    }
}

/// One question at a position, as a forcing game: which layer and rotation
/// hold it, who forces, and the value that means forced.
#[derive(Clone, Copy)]
struct LayerQuery {
    /// Index into [`analysis::COMPUTED_LAYERS`].
    layer: usize,
    /// The rotation (index into the rotation ranks) where the layer holds it.
    rotation: usize,
    /// The players on the question's MAX side.
    max: [bool; 3],
    /// WIN when MAX forces, LOSS when the others do (solo only).
    target: ProbeValue,
}

/// Which rotation holds a question about player X: the one that makes X
/// player A (see [`analysis::answers_with`]).
const ROTATION_OF: [usize; 3] = [0, 2, 1];

impl LayerQuery {
    fn solo(x: usize, target: ProbeValue) -> LayerQuery {
        let mut max = [false; 3];
        max[x] = true;
        LayerQuery { layer: 0, rotation: ROTATION_OF[x], max, target }
    }

    fn enable(x: usize, y: usize) -> LayerQuery {
        let mut max = [false; 3];
        max[x] = true;
        max[y] = true;
        // enable(X>X+1) is the enable(A>B) layer, enable(X>X+2) enable(A>C).
        let layer = if y == (x + 1) % 3 { 1 } else { 2 };
        LayerQuery { layer, rotation: ROTATION_OF[x], max, target: ProbeValue::Win }
    }
}

/// A question's tablebase values as a [`Forcing`] game.
struct QuestionGame<'a> {
    prober: &'a mut Prober,
    q: LayerQuery,
}

impl Forcing for QuestionGame<'_> {
    type Pos = Position;

    fn children(&self, pos: &Position) -> Vec<Position> {
        children(&self.prober.game.star, pos)
    }

    fn forcer_moves(&self, pos: &Position) -> bool {
        self.q.max[pos.turn as usize] == (self.q.target == ProbeValue::Win)
    }

    fn forced(&mut self, pos: &Position) -> Result<bool, ProbeError> {
        let rank = analysis::rotation_ranks(&self.prober.game, pos)[self.q.rotation];
        let v = self.prober.values(&[(self.q.layer, rank)])?;
        // A draw never counts as forced; the two-valued enable layers store
        // "not forced" as LOSS, which is never a target there.
        Ok(v[0] == self.q.target && v[0] != ProbeValue::Draw)
    }

    fn finished(&self, pos: &Position) -> bool {
        pos.outcome(&self.prober.game.star) != Outcome::Ongoing
    }
}

/// The star's cells and the game's names, for `/api/info` of a three-player
/// job (first-winner or ranked).
pub fn board_info(g: &retro_games::cc3::Cc3) -> Value {
    let s = &g.star;
    let cells: Vec<Value> = (0..s.cells())
        .map(|c| {
            let (x, y, z) = s.cubes[c];
            let bit = 1u128 << c;
            let (zone, owner) = match (0..3).find(|&p| s.start_mask[p] & bit != 0) {
                Some(p) => ("start", Some(PLAYER_NAMES[p].to_string())),
                None => match (0..3).find(|&p| s.goal_mask[p] & bit != 0) {
                    Some(p) => ("goal", Some(PLAYER_NAMES[p].to_string())),
                    None => ("centre", None),
                },
            };
            // Screen position in half-cell units: u across (a step along a
            // row moves y - z by 2), v down by rows (x).
            json!({ "name": s.names[c], "u": y - z, "v": x, "zone": zone, "owner": owner })
        })
        .collect();
    json!({
        "kind": GameKind::Cc3,
        "title": format!(
            "Three-player Chinese checkers, star of order {} ({} cells, {} piece{} each)",
            s.n, s.cells(), s.k, if s.k == 1 { "" } else { "s" }
        ),
        "order": s.n,
        "positions": g.ranker.positions() as u64,
        "players": PLAYER_NAMES.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "start": g.format(&g.start()),
        "cells": cells,
    })
}

/// Each player's cells by name, as the page draws them.
pub fn pieces_of(star: &retro_games::cc3::Star, pos: &Position) -> BTreeMap<String, Vec<String>> {
    (0..3)
        .map(|p| {
            let cells = (0..star.cells()).filter(|&c| pos.pieces[p] >> c & 1 == 1);
            (PLAYER_NAMES[p].to_string(), cells.map(|c| star.names[c].clone()).collect())
        })
        .collect()
}

/// The cells a move's text `from-to` names (none for `pass`).
pub fn move_cells(mv: &str) -> (Option<String>, Option<String>) {
    match mv.split_once('-') {
        Some((f, t)) => (Some(f.to_string()), Some(t.to_string())),
        None => (None, None),
    }
}
