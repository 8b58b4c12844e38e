//! Single-vacancy problems: every start with one hole empty and every finish
//! with one peg left, screened by the position class and then decided.
//!
//! Problems related by a symmetry of the board have the same answer, so only
//! one problem per symmetry class is searched and its solution is mapped onto
//! the others (and replayed move by move on each, so a mapping error cannot
//! pass unnoticed).

use crate::ResultsError;
use retro_games::peg::class::feasible;
use retro_games::peg::search::{Outcome, replay, solve};
use retro_games::peg::symmetry::{apply, images};
use retro_games::peg::{Board, BoardKind, Jump, hole_name};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

/// One problem's row in the table.
#[derive(Clone, Debug, Serialize)]
pub struct ProblemRow {
    /// The vacant hole at the start.
    pub start: String,
    /// The hole of the lone survivor.
    pub finish: String,
    /// True when the position class allows the finish.
    pub class_feasible: bool,
    /// `solvable`, `impossible`, `undecided` (search budget reached) or
    /// `infeasible` (ruled out by the class, zero positions searched).
    pub status: &'static str,
    /// A solution as hole-name jumps (`d2-d4 ...`), replayed before it is reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// Distinct positions the search expanded (for the problem of its symmetry class).
    pub positions: u64,
    /// The problem actually searched (this one or a symmetric image).
    pub searched_as: String,
}

/// The table of one board.
#[derive(Clone, Debug, Serialize)]
pub struct BoardProblems {
    /// Board name.
    pub board: String,
    /// Starts x finishes.
    pub problems: usize,
    /// Problems the class test allows.
    pub class_feasible: usize,
    /// Problems with a replayed solution.
    pub solvable: usize,
    /// Problems proved impossible by exhaustive search.
    pub impossible: usize,
    /// Problems whose search ran out of budget.
    pub undecided: usize,
    /// Start holes, one per symmetry class, with at least one class-feasible finish.
    pub feasible_starts_up_to_symmetry: Vec<String>,
    /// Searches run (one per symmetry class of feasible problems).
    pub searches: usize,
    /// Wall seconds.
    pub seconds: f64,
    /// Every problem, by start then finish.
    pub rows: Vec<ProblemRow>,
}

/// Writes jumps as `from-to` hole names.
pub fn jumps_text(jumps: &[Jump]) -> String {
    jumps.iter().map(|j| format!("{}-{}", hole_name(j.from), hole_name(j.to))).collect::<Vec<_>>().join(" ")
}

/// The symmetry that undoes `s`.
fn inverse(s: usize) -> usize {
    let probe = 0b1_0000_0010_0000_0111u64; // holes with no symmetry of their own
    (0..8).find(|&t| apply(t, apply(s, probe)) == probe).expect("the group has inverses")
}

fn map_jump(s: usize, j: Jump) -> Jump {
    let hole = |h: u8| apply(s, 1 << h).trailing_zeros() as u8;
    Jump { from: hole(j.from), over: hole(j.over), to: hole(j.to) }
}

/// The least image of the pair (start, finish) and the symmetry that makes it.
fn canonical_pair(start: u8, finish: u8) -> ((u8, u8), usize) {
    let (s_img, f_img) = (images(1 << start), images(1 << finish));
    (0..8).map(|g| ((s_img[g].trailing_zeros() as u8, f_img[g].trailing_zeros() as u8), g)).min().expect("8 symmetries")
}

/// Every (start, finish) pair the class test allows, by start then finish.
pub fn class_feasible(board: &Board) -> Vec<(u8, u8)> {
    let holes: Vec<u8> = (0..64u8).filter(|&h| board.has_hole(h)).collect();
    holes
        .iter()
        .flat_map(|&s| holes.iter().map(move |&f| (s, f)))
        .filter(|&(s, f)| feasible(board.single_vacancy(s), f))
        .collect()
}

/// One problem per symmetry class of the class-feasible ones: what has to be searched.
pub fn searches_needed(board: &Board) -> Vec<(u8, u8)> {
    let classes: std::collections::BTreeSet<(u8, u8)> =
        class_feasible(board).into_iter().map(|(s, f)| canonical_pair(s, f).0).collect();
    classes.into_iter().collect()
}

/// Decides every single-vacancy problem of `board`, `budget` positions per search.
pub fn decide_all(board: &Board, budget: u64, threads: usize) -> Result<BoardProblems, ResultsError> {
    let began = Instant::now();
    let holes: Vec<u8> = (0..64u8).filter(|&h| board.has_hole(h)).collect();
    let work = searches_needed(board);
    let results: Mutex<BTreeMap<(u8, u8), (Outcome, u64)>> = Mutex::new(BTreeMap::new());
    let cursor = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(s, f)) = work.get(i) else { break };
                    let t = Instant::now();
                    let found = solve(board, board.single_vacancy(s), f, budget);
                    tracing::info!(
                        "{} {}->{}: {} ({} positions, {:.2}s)",
                        board.kind().name(),
                        hole_name(s),
                        hole_name(f),
                        match &found.outcome {
                            Outcome::Solved(_) => "solvable",
                            Outcome::Impossible => "impossible",
                            Outcome::Undecided => "undecided",
                        },
                        found.positions,
                        t.elapsed().as_secs_f64()
                    );
                    results.lock().unwrap_or_else(|e| e.into_inner()).insert((s, f), (found.outcome, found.positions));
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut rows = Vec::with_capacity(holes.len() * holes.len());
    let mut starts = BTreeMap::new();
    for &s in &holes {
        for &f in &holes {
            let start = board.single_vacancy(s);
            let mut row = ProblemRow {
                start: hole_name(s),
                finish: hole_name(f),
                class_feasible: feasible(start, f),
                status: "infeasible",
                solution: None,
                positions: 0,
                searched_as: String::new(),
            };
            if row.class_feasible {
                let (pair, g) = canonical_pair(s, f);
                starts.insert(canonical_pair(s, s).0.0, ());
                let (outcome, positions) = results
                    .get(&pair)
                    .ok_or_else(|| ResultsError::Inconsistent("a feasible problem was not searched".into()))?;
                row.positions = *positions;
                row.searched_as = format!("{}->{}", hole_name(pair.0), hole_name(pair.1));
                row.status = match outcome {
                    Outcome::Solved(jumps) => {
                        let back = inverse(g);
                        let mapped: Vec<Jump> = jumps.iter().map(|&j| map_jump(back, j)).collect();
                        let end = replay(board, start, &mapped).map_err(|e| {
                            ResultsError::Inconsistent(format!("solution of {}->{}: {e}", row.start, row.finish))
                        })?;
                        if end != 1 << f {
                            return Err(ResultsError::Inconsistent(format!(
                                "solution of {}->{} does not end on {}",
                                row.start, row.finish, row.finish
                            )));
                        }
                        row.solution = Some(jumps_text(&mapped));
                        "solvable"
                    }
                    Outcome::Impossible => "impossible",
                    Outcome::Undecided => "undecided",
                };
            }
            rows.push(row);
        }
    }
    let count = |status: &str| rows.iter().filter(|r| r.status == status).count();
    Ok(BoardProblems {
        board: board.kind().name().into(),
        problems: rows.len(),
        class_feasible: rows.iter().filter(|r| r.class_feasible).count(),
        solvable: count("solvable"),
        impossible: count("impossible"),
        undecided: count("undecided"),
        feasible_starts_up_to_symmetry: starts.into_keys().map(hole_name).collect(),
        searches: work.len(),
        seconds: began.elapsed().as_secs_f64(),
        rows,
    })
}

impl BoardProblems {
    /// The class-feasible rows as a Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "{} board: {} problems, {} class-feasible: {} solvable, {} impossible, {} undecided ({} searches, {:.1}s)\n\n",
            self.board,
            self.problems,
            self.class_feasible,
            self.solvable,
            self.impossible,
            self.undecided,
            self.searches,
            self.seconds
        );
        out.push_str("| start | finish | status | positions searched | solution |\n|---|---|---|---:|---|\n");
        for r in self.rows.iter().filter(|r| r.class_feasible) {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                r.start,
                r.finish,
                r.status,
                r.positions,
                r.solution.as_deref().unwrap_or("")
            ));
        }
        out
    }
}

/// The boards a problems plan covers.
pub fn plan_boards(board: Option<BoardKind>) -> Vec<BoardKind> {
    match board {
        Some(kind) => vec![kind],
        None => vec![BoardKind::English, BoardKind::European],
    }
}
