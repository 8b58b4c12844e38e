//! The peg solitaire view's data: the ledger and the problem table from the
//! `summary.json` files of peg plans in the served directory, and any position
//! on the English or European board with its jumps, its position class and,
//! for every finishing hole the class allows, whether a lone peg can still end
//! there (a bounded [`search::solve`] per hole).
//!
//! A peg plan writes its `summary.json` straight into its output directory, so
//! a ledger (`plans/peg-english.toml`) and a problem table
//! (`plans/peg-problems.toml`) live in two directories: the explorer reads
//! `DIR/summary.json` and every `DIR/*/summary.json`, so serving either
//! directory, or `tablebases/` above both, works.

use super::limits::Stop;
use super::{ApiError, ExplorerError};
use retro_games::GameKind;
use retro_games::peg::class::{PositionClass, class_of, feasible};
use retro_games::peg::search::{self, Outcome};
use retro_games::peg::symmetry::apply;
use retro_games::peg::{Board, BoardKind, Jump, Pegs, hole_name, parse_hole};
use retro_results::peg::ledger::{HoleCount, LevelRow};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Positions one finishing hole's search may expand before it answers
/// `unknown` (a few seconds at most, about 50 MB of memo).
pub const SEARCH_BUDGET: u64 = 2_000_000;

/// Searched positions remembered before the cache starts over.
const CACHE_ENTRIES: usize = 4096;

/// The head of a `summary.json`: which game and task wrote it.
#[derive(Deserialize)]
struct Head {
    game: Option<String>,
    task: Option<String>,
}

/// The parts of a ledger summary the page shows (`retro_results::peg::summary::LedgerSummary`).
#[derive(Clone, Debug, Deserialize)]
struct LedgerFile {
    job: String,
    board: String,
    vacancy: String,
    levels: Vec<LevelRow>,
    solutions_by_hole: Vec<HoleCount>,
    #[serde(default)]
    finishing_holes: Vec<String>,
    #[serde(default)]
    oeis: Vec<OeisFile>,
}

/// One OEIS check of a ledger summary.
#[derive(Clone, Debug, Deserialize)]
struct OeisFile {
    id: String,
    what: String,
    terms: usize,
    mismatches: Vec<(usize, u128, u128)>,
}

/// The parts of a problems summary the page shows (`retro_results::peg::summary::ProblemsSummary`).
#[derive(Clone, Debug, Deserialize)]
struct ProblemsFile {
    job: String,
    budget: u64,
    boards: Vec<BoardFile>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
struct BoardFile {
    board: String,
    problems: usize,
    class_feasible: usize,
    solvable: usize,
    impossible: usize,
    undecided: usize,
    searches: usize,
    seconds: f64,
    rows: Vec<RowFile>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
struct RowFile {
    start: String,
    finish: String,
    class_feasible: bool,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    solution: Option<String>,
    positions: u64,
}

/// A summary read from disk, with where it came from.
struct Loaded<T> {
    path: PathBuf,
    data: T,
}

/// The peg explorer: the summaries found in the directory (at least one) and
/// both boards. Shared between requests; only the cache is locked.
pub struct PegExplorer {
    ledger: Option<Loaded<LedgerFile>>,
    problems: Option<Loaded<ProblemsFile>>,
    english: Board,
    european: Board,
    cache: Mutex<HashMap<(BoardKind, Pegs, u64), Vec<Finish>>>,
}

/// A hole of the board, for drawing it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PegHole {
    /// `a1`..`g7`.
    pub name: String,
    /// Row, 1 (bottom) to 7.
    pub row: u8,
    /// Column, 1 (a) to 7.
    pub col: u8,
    /// True when a peg stands here.
    pub peg: bool,
}

/// One legal jump and the position after it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PegJump {
    /// `from-to` by hole names, as in the problem table's solutions.
    pub jump: String,
    /// The hole the peg leaves.
    pub from: String,
    /// The hole whose peg is removed.
    pub over: String,
    /// Where the peg lands.
    pub to: String,
    /// The position after the jump, as a one-line picture.
    pub child: String,
}

/// Whether a lone peg can still finish on one hole.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Finish {
    /// The hole.
    pub hole: String,
    /// `solvable` (with `solution`), `impossible` (every reachable position
    /// searched) or `unknown` (the search budget ran out first).
    pub status: &'static str,
    /// Distinct positions the search expanded.
    pub positions: u64,
    /// Jumps from this position to the lone peg (`from-to`, space separated;
    /// empty when the position already is that lone peg).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// The hole whose search answered this one, carried over by a symmetry
    /// of the position (absent when this hole was searched itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

/// A peg position with its jumps, class and finishing holes.
#[derive(Clone, Debug, Serialize)]
pub struct PegView {
    /// Always `peg`.
    pub kind: GameKind,
    /// `english` or `european`.
    pub board: &'static str,
    /// The position as a one-line picture (rows 7 to 1, `o` peg, `.` hole).
    pub position: String,
    /// Pegs on the board.
    pub pegs: u32,
    /// Every hole, row 7 first (the picture's order).
    pub holes: Vec<PegHole>,
    /// Every legal jump, by name.
    pub jumps: Vec<PegJump>,
    /// De Bruijn's position class: sums `a` and `b` in GF(4) (`0`, `1`, `p`, `p^2`).
    pub class: PegClass,
    /// Holes whose lone peg has this position's class: the only places the
    /// game can end with one peg.
    pub feasible_holes: Vec<String>,
    /// For each feasible hole, the search's answer; absent when the request
    /// said `search=0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finishes: Option<Vec<Finish>>,
    /// Positions each hole's search may expand.
    pub budget: u64,
    /// Why some holes were not searched (their status `unknown`, positions
    /// 0): the explorer's time limit per request ran out first. Else null.
    pub stopped: Option<String>,
    /// `playing`, `dead end` (pegs left, no jump) or `one peg left`.
    pub status: &'static str,
}

/// A position class in words.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PegClass {
    /// Sum of p^(row + col).
    pub a: &'static str,
    /// Sum of p^(row - col).
    pub b: &'static str,
}

fn gf4(x: u8) -> &'static str {
    ["0", "1", "p", "p^2"][usize::from(x & 3)]
}

fn class_words(c: PositionClass) -> PegClass {
    PegClass { a: gf4(c.a), b: gf4(c.b) }
}

/// Writes jumps as `from-to` hole names.
fn jumps_text(jumps: &[Jump]) -> String {
    retro_results::peg::problems::jumps_text(jumps)
}

/// Largest summary the explorer reads (a peg or Sylver summary with every
/// row is a few megabytes).
const MAX_SUMMARY_BYTES: u64 = 64 << 20;

/// The bytes of a summary file, `None` when it cannot be read or is larger
/// than any summary (a device or a huge file under the name is skipped, not
/// read into memory).
pub(crate) fn read_summary(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(MAX_SUMMARY_BYTES + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_SUMMARY_BYTES).then_some(bytes)
}

/// `DIR/summary.json`, then `DIR/*/summary.json` in name order.
pub(super) fn candidates(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.join("summary.json")];
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path().join("summary.json")).collect())
        .unwrap_or_default();
    subs.sort();
    out.extend(subs);
    out.into_iter().filter(|p| p.is_file()).collect()
}

impl PegExplorer {
    /// The peg summaries in `dir` (see the module docs); `Ok(None)` when there
    /// is none, an error when a peg summary cannot be read.
    pub fn open(dir: &Path) -> Result<Option<PegExplorer>, ExplorerError> {
        let mut ledger = None;
        let mut problems = None;
        for path in candidates(dir) {
            let Some(bytes) = read_summary(&path) else { continue };
            // Other jobs write summary.json too (or a file may be half written
            // by hand): only a file that says it is a peg summary counts.
            let Ok(head) = serde_json::from_slice::<Head>(&bytes) else { continue };
            if head.game.as_deref().and_then(|g| g.parse::<GameKind>().ok()) != Some(GameKind::Peg) {
                continue;
            }
            let bad = |e: serde_json::Error| ExplorerError::BadSummary { path: path.clone(), why: e.to_string() };
            if head.task.as_deref() == Some("problems") {
                if problems.is_none() {
                    problems = Some(Loaded { data: serde_json::from_slice(&bytes).map_err(bad)?, path });
                }
            } else if ledger.is_none() {
                let data: LedgerFile = serde_json::from_slice(&bytes).map_err(bad)?;
                if BoardKind::parse(&data.board).is_none() {
                    return Err(ExplorerError::BadSummary { path, why: format!("unknown peg board {:?}", data.board) });
                }
                ledger = Some(Loaded { data, path });
            }
        }
        if ledger.is_none() && problems.is_none() {
            return Ok(None);
        }
        Ok(Some(PegExplorer {
            ledger,
            problems,
            english: Board::new(BoardKind::English),
            european: Board::new(BoardKind::European),
            cache: Mutex::new(HashMap::new()),
        }))
    }

    fn board(&self, kind: BoardKind) -> &Board {
        match kind {
            BoardKind::English => &self.english,
            BoardKind::European => &self.european,
        }
    }

    /// The board shown first: the ledger's, else the first problem table's, else English.
    fn default_board(&self) -> BoardKind {
        let from_ledger = self.ledger.as_ref().and_then(|l| BoardKind::parse(&l.data.board));
        let from_problems =
            self.problems.as_ref().and_then(|p| p.data.boards.first()).and_then(|b| BoardKind::parse(&b.board));
        from_ledger.or(from_problems).unwrap_or(BoardKind::English)
    }

    /// The vacancy a board starts from: the ledger's on its board, else the centre.
    fn default_vacancy(&self, kind: BoardKind) -> u8 {
        self.ledger
            .as_ref()
            .filter(|l| BoardKind::parse(&l.data.board) == Some(kind))
            .and_then(|l| parse_hole(&l.data.vacancy))
            .filter(|&h| self.board(kind).has_hole(h))
            .unwrap_or(3 * 8 + 3)
    }

    /// The boards, the default start and what the directory holds, for `/api/info`.
    pub fn info(&self) -> Value {
        let kind = self.default_board();
        let boards: Vec<Value> = [BoardKind::English, BoardKind::European]
            .into_iter()
            .map(|k| {
                let b = self.board(k);
                let vacancy = self.default_vacancy(k);
                json!({
                    "name": k.name(),
                    "holes": b.hole_count(),
                    "vacancy": hole_name(vacancy),
                    "start": b.picture_line(b.single_vacancy(vacancy)),
                    "cells": self.holes(b, 0).into_iter().map(|h| json!({"name": h.name, "row": h.row, "col": h.col})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut parts = Vec::new();
        if let Some(l) = &self.ledger {
            parts.push(format!("{} board ledger from {} vacant", l.data.board, l.data.vacancy));
        }
        if self.problems.is_some() {
            parts.push("single-vacancy problems".to_string());
        }
        let b = self.board(kind);
        json!({
            "kind": GameKind::Peg,
            "title": format!("Peg solitaire: {}", parts.join("; ")),
            "board": kind.name(),
            "start": b.picture_line(b.single_vacancy(self.default_vacancy(kind))),
            "boards": boards,
            "ledger": self.ledger.as_ref().map(|l| json!({
                "job": l.data.job, "board": l.data.board, "vacancy": l.data.vacancy, "file": l.path.display().to_string(),
            })),
            "problems": self.problems.as_ref().map(|p| json!({
                "job": p.data.job,
                "boards": p.data.boards.iter().map(|b| b.board.clone()).collect::<Vec<_>>(),
                "file": p.path.display().to_string(),
            })),
            "budget": SEARCH_BUDGET,
            "players": Vec::<String>::new(),
            "witnesses": Vec::<String>::new(),
        })
    }

    /// The ledger, for `/api/peg/ledger`: the summary's columns, with the
    /// counts that outgrow a double (jump sequences, solutions) as decimal strings.
    pub fn ledger(&self) -> Result<Value, ApiError> {
        let Some(l) = &self.ledger else {
            return Err(ApiError::not_found(
                "no peg ledger here: run `coordinator --plan plans/peg-english.toml` and serve its output directory",
            ));
        };
        let d = &l.data;
        let levels: Vec<Value> = d
            .levels
            .iter()
            .map(|r| {
                json!({
                    "jumps": r.jumps, "pegs": r.pegs, "positions": r.positions, "up_to_symmetry": r.up_to_symmetry,
                    "sequences": r.sequences.to_string(), "dead_ends": r.dead_ends, "winnable": r.winnable,
                    "winnable_up_to_symmetry": r.winnable_up_to_symmetry,
                })
            })
            .collect();
        let sum = |f: fn(&LevelRow) -> u64| d.levels.iter().map(f).sum::<u64>();
        let solutions: u128 = d.solutions_by_hole.iter().map(|h| h.solutions).sum();
        let board = BoardKind::parse(&d.board).map(|k| self.board(k));
        let start = match (board, parse_hole(&d.vacancy)) {
            (Some(b), Some(v)) if b.has_hole(v) => Some(b.picture_line(b.single_vacancy(v))),
            _ => None,
        };
        Ok(json!({
            "job": d.job,
            "board": d.board,
            "vacancy": d.vacancy,
            "start": start,
            "levels": levels,
            "totals": {
                "positions": sum(|r| r.positions), "up_to_symmetry": sum(|r| r.up_to_symmetry),
                "dead_ends": sum(|r| r.dead_ends), "winnable": sum(|r| r.winnable),
                "winnable_up_to_symmetry": sum(|r| r.winnable_up_to_symmetry), "solutions": solutions.to_string(),
            },
            "solutions_by_hole": d.solutions_by_hole.iter()
                .map(|h| json!({"hole": h.hole, "solutions": h.solutions.to_string()})).collect::<Vec<_>>(),
            "finishing_holes": d.finishing_holes,
            "oeis": d.oeis.iter().map(|c| json!({
                "id": c.id, "what": c.what, "terms": c.terms, "mismatches": c.mismatches.len(),
            })).collect::<Vec<_>>(),
        }))
    }

    /// The problem tables, for `/api/peg/problems`: per board, the counts and
    /// the class-feasible rows (the others are ruled out by the class alone).
    pub fn problems(&self) -> Result<Value, ApiError> {
        let Some(p) = &self.problems else {
            return Err(ApiError::not_found(
                "no peg problem table here: run `coordinator --plan plans/peg-problems.toml` and serve its output directory",
            ));
        };
        let boards: Vec<BoardFile> = p
            .data
            .boards
            .iter()
            .map(|b| BoardFile { rows: b.rows.iter().filter(|r| r.class_feasible).cloned().collect(), ..b.clone() })
            .collect();
        Ok(json!({ "job": p.data.job, "budget": p.data.budget, "boards": boards }))
    }

    fn holes(&self, board: &Board, pegs: Pegs) -> Vec<PegHole> {
        let mut out = Vec::with_capacity(37);
        for row in (0..7u8).rev() {
            for col in 0..7u8 {
                let h = row * 8 + col;
                if board.has_hole(h) {
                    out.push(PegHole { name: hole_name(h), row: row + 1, col: col + 1, peg: pegs >> h & 1 == 1 });
                }
            }
        }
        out
    }

    /// A position: `board` (`english`, `european`; default the first shown),
    /// `pos` a picture (default the board's start), `budget` positions per
    /// hole's search (at most [`SEARCH_BUDGET`]), `search` false to skip the
    /// searches (the page's walk along a line of jumps). Holes not yet
    /// searched when `stop` says stop are answered `unknown`.
    pub fn position(
        &self,
        board: Option<&str>,
        pos: Option<&str>,
        budget: u64,
        search: bool,
        stop: &Stop,
    ) -> Result<PegView, ApiError> {
        let kind = match board.map(str::trim).filter(|b| !b.is_empty()) {
            None => self.default_board(),
            Some(name) => BoardKind::parse(name)
                .ok_or_else(|| ApiError::bad_request(format!("unknown peg board {name:?}: english or european")))?,
        };
        if budget > SEARCH_BUDGET {
            return Err(ApiError::bad_request(format!(
                "budget {budget} is over the limit of {SEARCH_BUDGET} positions"
            )));
        }
        let b = self.board(kind);
        let pegs = match pos.map(str::trim).filter(|p| !p.is_empty()) {
            None => b.single_vacancy(self.default_vacancy(kind)),
            Some(text) => b.parse_picture(text).map_err(|e| ApiError::bad_request(e.to_string()))?,
        };
        let mut jumps: Vec<PegJump> = b
            .jumps(pegs)
            .into_iter()
            .map(|j| PegJump {
                jump: format!("{}-{}", hole_name(j.from), hole_name(j.to)),
                from: hole_name(j.from),
                over: hole_name(j.over),
                to: hole_name(j.to),
                child: b.picture_line(pegs ^ j.mask()),
            })
            .collect();
        jumps.sort_by(|x, y| x.jump.cmp(&y.jump));
        let feasible_holes: Vec<u8> = (0..64u8).filter(|&h| b.has_hole(h) && feasible(pegs, h)).collect();
        let (finishes, stopped) = match search {
            true => {
                let (f, stopped) = self.finishes(b, pegs, &feasible_holes, budget, stop);
                (Some(f), stopped)
            }
            false => (None, None),
        };
        let n = pegs.count_ones();
        Ok(PegView {
            kind: GameKind::Peg,
            board: kind.name(),
            position: b.picture_line(pegs),
            pegs: n,
            holes: self.holes(b, pegs),
            jumps,
            class: class_words(class_of(pegs)),
            feasible_holes: feasible_holes.iter().map(|&h| hole_name(h)).collect(),
            finishes,
            budget,
            stopped,
            status: match n {
                1 => "one peg left",
                _ if b.is_dead_end(pegs) => "dead end",
                _ => "playing",
            },
        })
    }

    /// The answer for `hole` carried over from a decided hole of `done` by a
    /// symmetry that fixes `pegs` (a solution mapped and replayed first).
    fn by_symmetry(&self, b: &Board, pegs: Pegs, hole: u8, done: &[Finish]) -> Option<Finish> {
        let map = |s: usize, h: u8| apply(s, 1 << h).trailing_zeros() as u8;
        for s in (1..8).filter(|&s| apply(s, pegs) == pegs) {
            for f in done.iter().filter(|f| f.status != "unknown" && f.same_as.is_none()) {
                let Some(other) = parse_hole(&f.hole) else { continue };
                if map(s, other) != hole {
                    continue;
                }
                let solution = match &f.solution {
                    None => None,
                    Some(text) => {
                        let jumps = self.parse_jumps(b, text, |h| map(s, h))?;
                        if search::replay(b, pegs, &jumps).ok()? != 1 << hole {
                            return None;
                        }
                        Some(jumps_text(&jumps))
                    }
                };
                return Some(Finish {
                    hole: hole_name(hole),
                    status: f.status,
                    positions: 0,
                    solution,
                    same_as: Some(f.hole.clone()),
                });
            }
        }
        None
    }

    /// Reads `from-to` jumps (as [`jumps_text`] writes them), each hole mapped by `map`.
    fn parse_jumps(&self, b: &Board, text: &str, map: impl Fn(u8) -> u8) -> Option<Vec<Jump>> {
        text.split_whitespace()
            .map(|j| {
                let (from, to) = j.split_once('-')?;
                let (from, to) = (map(parse_hole(from)?), map(parse_hole(to)?));
                let over = (from + to) / 2;
                (b.has_hole(from) && b.has_hole(over) && b.has_hole(to)).then_some(Jump { from, over, to })
            })
            .collect()
    }

    /// Searches every feasible hole (cached by board, position and budget);
    /// once `stop` says stop, the holes left are `unknown`, with why (and the
    /// answer is not cached). The engine's search has no stop hook: a hole's
    /// search, once started, runs to its budget.
    fn finishes(&self, b: &Board, pegs: Pegs, holes: &[u8], budget: u64, stop: &Stop) -> (Vec<Finish>, Option<String>) {
        let key = (b.kind(), pegs, budget);
        if let Some(hit) = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return (hit.clone(), None);
        }
        let mut out: Vec<Finish> = Vec::with_capacity(holes.len());
        let mut stopped = None;
        let mut unsearched = 0;
        for &h in holes {
            // A symmetry of the position carries any answer for one hole to
            // its image: copy a decided answer instead of searching again.
            if let Some(f) = self.by_symmetry(b, pegs, h, &out) {
                out.push(f);
                continue;
            }
            if stopped.is_none() {
                stopped = stop.check().map(|halt| stop.describe(halt));
            }
            if stopped.is_some() {
                unsearched += 1;
                out.push(Finish { hole: hole_name(h), status: "unknown", positions: 0, solution: None, same_as: None });
                continue;
            }
            let found = search::solve(b, pegs, h, budget);
            let (status, solution) = match found.outcome {
                Outcome::Solved(jumps) => ("solvable", Some(jumps_text(&jumps))),
                Outcome::Impossible => ("impossible", None),
                Outcome::Undecided => ("unknown", None),
            };
            out.push(Finish { hole: hole_name(h), status, positions: found.positions, solution, same_as: None });
        }
        // A hole searched before its decided image: take the image's answer now.
        for i in 0..out.len() {
            if out[i].status == "unknown"
                && let Some(f) = self.by_symmetry(b, pegs, holes[i], &out)
            {
                out[i] = f;
            }
        }
        if let Some(why) = stopped {
            return (out, Some(format!("{why}: {unsearched} of {} holes not searched", holes.len())));
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, out.clone());
        (out, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retro_results::peg::ledger::Ledger;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("retro-serve-peg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn ledger_json() -> String {
        let row = |n: u32, seq: u128| LevelRow {
            jumps: n,
            pegs: 32 - n,
            positions: 4 + u64::from(n),
            up_to_symmetry: 1,
            sequences: seq,
            dead_ends: 0,
            winnable: 4,
            winnable_up_to_symmetry: 1,
            landing_states: None,
        };
        let ledger = Ledger {
            board: "english".into(),
            vacancy: "d4".into(),
            symmetries: 8,
            // A count past 2^64, as the real sequences column has.
            levels: vec![row(0, 1), row(1, 4), row(2, 40_861_647_040_079_968u128 * 1000)],
            solutions_by_hole: vec![HoleCount { hole: "d4".into(), solutions: 40_861_647_040_079_968 }],
        };
        // serde_json's Value holds no u128: splice the summary's other fields into the text.
        let text = serde_json::to_string(&ledger).unwrap();
        let extra = r#"{"game": "peg", "job": "peg-english", "finishing_holes": ["d1", "a4", "d4", "g4", "d7"],
            "oeis": [{"id": "A335656", "what": "positions", "terms": 32, "mismatches": []}], "#;
        format!("{extra}{}", &text[1..])
    }

    #[test]
    fn summaries_are_found_in_the_directory_and_below() {
        let d = dir("find");
        assert!(PegExplorer::open(&d).unwrap().is_none());
        std::fs::write(d.join("summary.json"), br#"{"game": "cc2", "task": "solve"}"#).unwrap();
        assert!(PegExplorer::open(&d).unwrap().is_none(), "another game's summary is not ours");
        std::fs::create_dir_all(d.join("peg-english")).unwrap();
        std::fs::write(d.join("peg-english/summary.json"), ledger_json()).unwrap();
        let ex = PegExplorer::open(&d).unwrap().unwrap();
        let l = ex.ledger().unwrap();
        assert_eq!(l["levels"][2]["sequences"], "40861647040079968000", "exact, as a string");
        assert_eq!(l["totals"]["positions"], 4 + 5 + 6);
        assert_eq!(l["oeis"][0]["mismatches"], 0);
        assert_eq!(ex.problems().unwrap_err().status, axum::http::StatusCode::NOT_FOUND);
        std::fs::write(d.join("peg-english/summary.json"), br#"{"game": "peg", "levels": 3}"#).unwrap();
        let Err(e) = PegExplorer::open(&d) else { panic!("a broken peg summary opened") };
        assert!(matches!(e, ExplorerError::BadSummary { .. }), "{e}");
        assert!(e.to_string().contains("not a peg summary"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn positions_answer_jumps_classes_and_finishes() {
        let d = dir("pos");
        std::fs::write(d.join("summary.json"), ledger_json()).unwrap();
        let ex = PegExplorer::open(&d).unwrap().unwrap();
        let start = ex.position(None, None, SEARCH_BUDGET, false, &Stop::never()).unwrap();
        assert_eq!(start.position, "ooo/ooo/ooooooo/ooo.ooo/ooooooo/ooo/ooo");
        assert_eq!((start.pegs, start.jumps.len(), start.holes.len()), (32, 4, 33));
        assert_eq!(start.feasible_holes, ["d1", "a4", "d4", "g4", "d7"]);
        assert!(start.finishes.is_none());
        // Two pegs side by side on row 4: one jump each way, both ending the
        // game; every other hole of their class is searched out (impossible).
        let two = ex
            .position(Some("english"), Some(".../.../......./..oo.../......./.../..."), 10, true, &Stop::never())
            .unwrap();
        assert_eq!(two.pegs, 2);
        let jumps: Vec<(&str, &str)> = two.jumps.iter().map(|j| (j.jump.as_str(), j.child.as_str())).collect();
        assert_eq!(
            jumps,
            [
                ("c4-e4", ".../.../......./....o../......./.../..."),
                ("d4-b4", ".../.../......./.o...../......./.../...")
            ]
        );
        let finishes = two.finishes.unwrap();
        assert!(finishes.len() > 2, "{finishes:?}");
        for f in &finishes {
            match f.hole.as_str() {
                "b4" => assert_eq!((f.status, f.solution.as_deref()), ("solvable", Some("d4-b4"))),
                "e4" => assert_eq!((f.status, f.solution.as_deref()), ("solvable", Some("c4-e4"))),
                _ => assert_eq!(f.status, "impossible", "{f:?}"),
            }
        }
        assert_eq!(two.status, "playing");
        let one = ex.position(Some("english"), Some(jumps[0].1), 10, true, &Stop::never()).unwrap();
        assert_eq!(one.status, "one peg left");
        let e4 = one.finishes.unwrap().into_iter().find(|f| f.hole == "e4");
        assert_eq!(
            e4,
            Some(Finish {
                hole: "e4".into(),
                status: "solvable",
                positions: 0,
                solution: Some(String::new()),
                same_as: None
            })
        );
        // The full board with a budget of one position: nothing decided.
        let start = ex.position(None, None, 1, true, &Stop::never()).unwrap();
        assert!(start.finishes.unwrap().iter().all(|f| f.status == "unknown"));
        // The central game: every feasible hole solvable, the ones the search
        // cannot reach in its budget carried over by the board's symmetry,
        // and every solution replays to its lone peg.
        let start = ex.position(None, None, SEARCH_BUDGET, true, &Stop::never()).unwrap();
        let finishes = start.finishes.unwrap();
        assert_eq!(finishes.len(), 5);
        let b = Board::new(BoardKind::English);
        let pegs = b.parse_picture(&start.position).unwrap();
        for f in &finishes {
            assert_eq!(f.status, "solvable", "{f:?}");
            let hole = parse_hole(&f.hole).unwrap();
            let jumps = ex.parse_jumps(&b, f.solution.as_deref().unwrap(), |h| h).unwrap();
            assert_eq!(jumps.len(), 31);
            assert_eq!(search::replay(&b, pegs, &jumps), Ok(1 << hole), "{f:?}");
        }
        // Out of time: the holes are not searched, say so, and are not cached.
        let (late, _guard) = Stop::new(std::time::Duration::ZERO);
        let two_pegs = ".../.../......./..oo.../......./.../...";
        // (Budget 11: the answer for 10 is cached above.)
        let v = ex.position(Some("english"), Some(two_pegs), 11, true, &late).unwrap();
        assert!(v.finishes.unwrap().iter().all(|f| f.status == "unknown" && f.positions == 0));
        assert!(v.stopped.as_deref().is_some_and(|s| s.contains("time limit")), "{:?}", v.stopped);
        let again = ex.position(Some("english"), Some(two_pegs), 11, true, &Stop::never()).unwrap();
        assert!(again.stopped.is_none() && again.finishes.unwrap().iter().all(|f| f.status != "unknown"));
        // Bad input.
        let e = ex
            .position(Some("english"), Some("ooo/ooo/oo....o/ooooooo/ooooooo/ooo/ooo/o"), 0, false, &Stop::never())
            .unwrap_err();
        assert!(e.message.contains("needs 33 marks"), "{e:?}");
        let e = ex.position(Some("english"), Some("oox"), 10, true, &Stop::never()).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        let e = ex.position(Some("chinese"), None, 10, true, &Stop::never()).unwrap_err();
        assert!(e.message.contains("unknown peg board"), "{e:?}");
        let e = ex.position(None, None, SEARCH_BUDGET + 1, true, &Stop::never()).unwrap_err();
        assert!(e.message.contains("over the limit"), "{e:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
