//! `coordinator probe`: the 12 answers for one position and for the child of
//! each legal move, read from the tablebase files (one block per lookup).

use crate::analysis::{self, Answers, COMPUTED_LAYERS, ENABLE_NAMES, ENABLE_PAIRS, category, value_word};
use crate::scheduler::tablebase_file_name;
use retro_engine::tablebase::{TablebaseError, TablebaseReader, VALUE_LOSS};
use retro_games::cc3::{Cc3, Outcome, PLAYER_NAMES, Position, for_each_move};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The three computed layers of one job, opened for probing.
pub struct Prober {
    /// The game, from the files' headers.
    pub game: Cc3,
    readers: Vec<TablebaseReader>,
}

/// Answers at one position, in words.
#[derive(Clone, Debug, Serialize)]
pub struct PositionReport {
    /// The position in the text notation.
    pub position: String,
    /// Its rank.
    pub rank: u64,
    /// Player to move.
    pub to_move: String,
    /// "ongoing", "won by X" or "illegal".
    pub outcome: String,
    /// Category.
    pub category: String,
    /// solo(X): win / loss / draw.
    pub solo: BTreeMap<String, String>,
    /// pairout(X): the other two can keep X from winning.
    pub pairout: BTreeMap<String, bool>,
    /// enable(X>Y) forced.
    pub enable: BTreeMap<String, bool>,
}

/// A move and what it leads to.
#[derive(Clone, Debug, Serialize)]
pub struct MoveReport {
    /// `from-to` by cell names, or `pass`.
    #[serde(rename = "move")]
    pub mv: String,
    /// The child position.
    pub child: PositionReport,
}

/// The probe result.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// The position.
    pub position: PositionReport,
    /// Every legal move with its child's answers.
    pub moves: Vec<MoveReport>,
}

/// Why a three-player layer file is missing: the directory does not exist,
/// holds another game's tablebases, or the plan was not solved yet.
fn missing_layer(dir: &Path, path: &Path) -> String {
    if !dir.is_dir() {
        return format!(
            "{}: no such directory (solve a plan first; its [output] dir holds the tablebases)",
            dir.display()
        );
    }
    let other = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tb"))
        .find_map(|p| TablebaseReader::open(&p).ok());
    match other {
        Some(r) if r.header().game != "cc3" => format!(
            "{} holds {} tablebases ({}), not three-player Chinese checkers: `coordinator probe` answers the \
             three-player questions; explore this directory with `coordinator serve --tablebase {}`",
            dir.display(),
            r.header().game,
            r.path().display(),
            dir.display()
        ),
        _ => format!("{}: no such tablebase (solve the plan first)", path.display()),
    }
}

impl Prober {
    /// Opens `solo_A.tb`, `enable_A_B.tb` and `enable_A_C.tb` in `dir` and checks
    /// that they belong together.
    pub fn open(dir: &Path) -> Result<Prober, String> {
        let mut readers = Vec::new();
        for q in COMPUTED_LAYERS {
            let path = dir.join(tablebase_file_name(q));
            if !path.exists() {
                return Err(missing_layer(dir, &path));
            }
            readers.push(TablebaseReader::open(&path).map_err(|e| e.to_string())?);
        }
        let h0 = readers[0].header().clone();
        if h0.params["rank_order"] != retro_games::cc3::RANK_ORDER {
            return Err(format!(
                "{}: written with rank order {}, this program uses {}: its values would be read at the wrong \
                 positions; solve the plan again with this version",
                readers[0].path().display(),
                h0.params["rank_order"],
                retro_games::cc3::RANK_ORDER
            ));
        }
        for (r, q) in readers.iter().zip(COMPUTED_LAYERS) {
            let h = r.header();
            if h.layer != q || h.game != "cc3" || h.params != h0.params || h.plan_hash != h0.plan_hash {
                return Err(format!(
                    "{}: header says game {} {} layer {} plan {}, expected cc3 {} layer {q} plan {}",
                    r.path().display(),
                    h.game,
                    h.params,
                    h.layer,
                    h.plan_hash,
                    h0.params,
                    h0.plan_hash
                ));
            }
        }
        let order = h0.params.get("order").and_then(|v| v.as_u64()).ok_or("tablebase header has no order")? as u32;
        let game = Cc3::new(order).map_err(|e| e.to_string())?;
        if game.ranker.positions() != h0.positions as u128 {
            return Err(format!(
                "tablebase holds {} positions, order {order} has {}",
                h0.positions,
                game.ranker.positions()
            ));
        }
        Ok(Prober { game, readers })
    }

    /// The 12 answers at `pos`.
    pub fn answers(&mut self, pos: &Position) -> Result<Answers, TablebaseError> {
        let readers = &mut self.readers;
        analysis::answers_with(&self.game, pos, |layer, rank| readers[layer].probe(rank))
    }

    /// The values of many `(layer, rank)` lookups (layer as in
    /// [`COMPUTED_LAYERS`]), read in sorted order: each reader caches one block,
    /// so every block is read and decompressed once per call instead of once
    /// per lookup. A layer index above 2 is a programming error (it panics).
    pub fn values(&mut self, requests: &[(usize, u64)]) -> Result<Vec<u8>, TablebaseError> {
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_unstable_by_key(|&i| requests[i]);
        let mut out = vec![0u8; requests.len()];
        for i in order {
            let (layer, rank) = requests[i];
            out[i] = self.readers[layer].probe(rank)?;
        }
        Ok(out)
    }

    /// Describes one position.
    pub fn report(&mut self, pos: &Position) -> Result<PositionReport, TablebaseError> {
        let a = self.answers(pos)?;
        let g = &self.game;
        Ok(PositionReport {
            position: g.format(pos),
            rank: g.rank(pos),
            to_move: PLAYER_NAMES[pos.turn as usize].to_string(),
            outcome: match pos.outcome(&g.star) {
                Outcome::Ongoing => "ongoing".into(),
                Outcome::Won(p) => format!("won by {}", PLAYER_NAMES[p as usize]),
                Outcome::Illegal => "illegal".into(),
            },
            category: category(g, pos, &a).key().into(),
            solo: (0..3).map(|p| (PLAYER_NAMES[p].to_string(), value_word(a.solo[p]).to_string())).collect(),
            pairout: (0..3).map(|p| (PLAYER_NAMES[p].to_string(), a.solo[p] == VALUE_LOSS)).collect(),
            enable: ENABLE_PAIRS
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| (ENABLE_NAMES[i].to_string(), a.enable[x][y]))
                .collect(),
        })
    }

    /// The position and every move with its child.
    pub fn probe(&mut self, pos: &Position) -> Result<Probe, TablebaseError> {
        let position = self.report(pos)?;
        let mut moves = Vec::new();
        if pos.outcome(&self.game.star) == Outcome::Ongoing {
            let p = pos.turn as usize;
            let next = (pos.turn + 1) % 3;
            let mut list = Vec::new();
            for_each_move(&self.game.star, &pos.pieces, p, &mut |from, to| list.push((from, to)));
            for (from, to) in &list {
                let mut pieces = pos.pieces;
                pieces[p] ^= (1u128 << from) | (1u128 << to);
                let child = Position { pieces, turn: next };
                let mv = format!("{}-{}", self.game.star.names[*from], self.game.star.names[*to]);
                moves.push(MoveReport { mv, child: self.report(&child)? });
            }
            if list.is_empty() {
                let child = Position { pieces: pos.pieces, turn: next };
                moves.push(MoveReport { mv: "pass".into(), child: self.report(&child)? });
            }
        }
        Ok(Probe { position, moves })
    }
}

/// solo and enable answers of a position on one line.
pub fn answers_line(r: &PositionReport) -> String {
    let solo: Vec<String> = r.solo.iter().map(|(p, v)| format!("solo({p}) {v}")).collect();
    let enable: Vec<String> = r.enable.iter().map(|(k, v)| format!("{k} {}", if *v { "yes" } else { "no" })).collect();
    format!("{}; enable: {}", solo.join(", "), enable.join(", "))
}

/// The probe as text.
pub fn text(p: &Probe) -> String {
    let r = &p.position;
    let mut out = format!(
        "position {} (rank {}), {} to move, {}\ncategory: {}\n{}\npairout: {}\n",
        r.position,
        r.rank,
        r.to_move,
        r.outcome,
        r.category,
        answers_line(r),
        r.pairout.iter().map(|(k, v)| format!("{k} {}", if *v { "yes" } else { "no" })).collect::<Vec<_>>().join(", ")
    );
    if p.moves.is_empty() {
        out.push_str("no moves (the game is over)\n");
    } else {
        out.push_str(&format!("{} moves:\n", p.moves.len()));
        for m in &p.moves {
            out.push_str(&move_line(m, "  "));
        }
    }
    out
}

/// One move and its child's answers on a line, after `indent`.
pub fn move_line(m: &MoveReport, indent: &str) -> String {
    format!("{indent}{:<8} -> {} [{}] {}\n", m.mv, m.child.position, m.child.category, answers_line(&m.child))
}
