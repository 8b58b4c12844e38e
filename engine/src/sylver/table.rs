//! The unit of work of a Sylver table and what comes back from it: an
//! m-class with its rows ([`ClassUnit`]), one row's answer ([`RowResult`]),
//! and [`solve_class`], which turns the first into the second. A thread of
//! the embedded job and a remote worker run the same function on the same
//! serialized unit, so the table does not depend on where a class ran.

use std::time::Instant;

use retro_games::sylver::Apery;
use serde::{Deserialize, Serialize};

use super::{ClassSolver, SolveError};

/// Stack of a thread that runs [`solve_class`]: the search recurses once per
/// named number (deep, small frames).
pub const SOLVER_STACK: usize = 256 << 20;

/// What each row answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SylverQuestion {
    /// Every winning move of `{m, n}`.
    Winning,
    /// Whether naming `t` wins from `{m, n}`.
    TWins,
}

/// One m-class with its rows: the unit of work a thread (or a remote
/// worker) takes whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassUnit {
    /// The reference number.
    pub m: u64,
    /// The rows' `n`, ascending (only those still to do).
    pub ns: Vec<u64>,
    /// The largest `n` of the class in the plan: sizes the key, so the same
    /// class packs its positions the same way whichever rows remain.
    pub n_max: u64,
    /// The question.
    pub question: SylverQuestion,
    /// Memo cap.
    pub cap: u64,
}

/// How a row ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Answered exactly.
    Solved,
    /// The class memo reached the cap first.
    Capped,
}

/// The result of one row: what a checkpoint file holds and what travels back
/// from whoever solved it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    /// The reference number.
    pub m: u64,
    /// The other number.
    pub n: u64,
    /// Frobenius number of `{m, n}`.
    pub t: u64,
    /// The question answered.
    pub question: SylverQuestion,
    /// Winning moves of `{m, n}` (question `winning`, solved rows).
    pub winning: Vec<u64>,
    /// Whether naming `t` wins (question `t_wins`, solved rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_wins: Option<bool>,
    /// Memo positions this row added (capped: reached when it stopped; 0 for a
    /// row not attempted because a smaller row of its class was capped).
    pub positions: u64,
    /// Wall-clock seconds of this row.
    pub seconds: f64,
    /// Solved or capped.
    pub status: RowStatus,
    /// The cap it ran under (a capped row is redone when the cap changes).
    pub cap: u64,
}

/// A rough cost of a class: the number of Apéry tuples below its largest row
/// (`C(genus + m - 2, m - 2)`, as a float), only used to start the dearest
/// classes first so the last thread does not start a long class late.
pub fn expected_cost(unit: &ClassUnit) -> f64 {
    let genus = (unit.m.saturating_sub(1).saturating_mul(unit.n_max.saturating_sub(1)) / 2) as f64;
    let dims = (unit.m.saturating_sub(2)) as f64;
    (1..=dims as u64).map(|i| (genus + i as f64) / i as f64).map(f64::ln).sum()
}

/// The Frobenius number of a coprime pair.
pub fn pair_t(m: u64, n: u64) -> u64 {
    m * n - m - n
}

/// Solves the rows of one class in order, calling `done` after each; `done`
/// returns false to stop before the next row (its result is no longer
/// wanted). After a capped row the rest of the class is reported capped
/// without an attempt (a larger `n` only has more positions).
pub fn solve_class(unit: &ClassUnit, mut done: impl FnMut(RowResult) -> bool) {
    let mut solver = match ClassSolver::new(unit.m, unit.n_max.saturating_sub(1)) {
        Ok(s) => s,
        Err(_) => return, // validated with the plan; nothing can be solved
    };
    solver.set_cap(unit.cap);
    let mut capped = false;
    for &n in &unit.ns {
        let t = pair_t(unit.m, n);
        let mut row = RowResult {
            m: unit.m,
            n,
            t,
            question: unit.question,
            winning: Vec::new(),
            t_wins: None,
            positions: 0,
            seconds: 0.0,
            status: RowStatus::Capped,
            cap: unit.cap,
        };
        if !capped {
            let started = Instant::now();
            let before = solver.positions();
            let result =
                Apery::from_numbers(&[unit.m, n]).map_err(|_| SolveError::BadM { m: unit.m }).and_then(|a| match unit
                    .question
                {
                    SylverQuestion::Winning => solver.winning_moves(&a).map(|w| row.winning = w),
                    SylverQuestion::TWins => solver.value(&a.named(t)).map(|v| row.t_wins = Some(!v)),
                });
            row.seconds = started.elapsed().as_secs_f64();
            row.positions = solver.positions() - before;
            match result {
                Ok(()) => row.status = RowStatus::Solved,
                Err(_) => {
                    capped = true;
                    // The memo is full: hand its memory back now.
                    solver.clear();
                }
            }
        }
        if !done(row) {
            return;
        }
    }
}
