//! One Sylver coinage position (t, the nameable numbers, ender or not, the
//! winning moves), its solver statistics, or the first-move table (what
//! `coordinator sylver` prints). The plan-driven table is [`super::table`].
//!
//! Every number it is given is checked before anything is sized by it: the
//! named numbers against [`MAX_NUMBER`] (the parser), a finite position against
//! the solver's range ([`check_numbers`], [`ClassSolver::for_position`]: the
//! smallest number at most [`retro_engine::sylver::MAX_M`], at most
//! [`retro_engine::sylver::MAX_K`] nameable numbers a class) before its `t`,
//! nameable numbers or enders are computed, `--cap` against [`retro_engine::sylver::MAX_CAP`],
//! `--bound` against [`retro_engine::sylver::theory::MAX_BOUND`] and `--openings` against [`MAX_OPENINGS`];
//! the first-move table is printed as it is made, so its memory does not grow
//! with `N`.

use std::time::Instant;

use retro_engine::sylver::theory::{Limits, Opening, Verdict, opening, verdict};
use retro_engine::sylver::{ClassSolver, SolveError, check_numbers};
use retro_games::sylver::theory::{known_p, set_text};
use retro_games::sylver::{Apery, MAX_NUMBER, gcd, parse_numbers};
use serde::Serialize;

use crate::ResultsError;
use retro_engine::process::peak_rss_bytes;

/// Default position cap of one command (about 1.6 GB of memo at 16 bytes a slot).
pub const DEFAULT_CAP: u64 = 100_000_000;

/// The largest `N` of `--openings N`: a first move above [`MAX_NUMBER`]
/// cannot be named here, so its row could only say so.
pub const MAX_OPENINGS: u64 = MAX_NUMBER;

/// What `N` of the first-move table may be.
pub fn openings_range() -> String {
    format!(
        "the first-move table runs from 1 to N with N from 1 to {MAX_OPENINGS}, the largest number a position may name"
    )
}

/// What `coordinator sylver --position` reports.
#[derive(Clone, Debug, Serialize)]
pub struct PositionReport {
    /// The minimal generators of the position.
    pub generators: Vec<u64>,
    /// gcd of the named numbers.
    pub gcd: u64,
    /// Frobenius number (finite positions).
    pub t: Option<i64>,
    /// Nameable numbers (finite positions).
    pub nameable: Option<Vec<u64>>,
    /// Ender (Sicherman).
    pub ender: bool,
    /// Quiet ender.
    pub quiet_ender: bool,
    /// "P", "N" or "open".
    pub value: String,
    /// Winning moves (all of them for a finite position).
    pub winning: Vec<u64>,
    /// Why.
    pub reason: String,
    /// Solver figures (finite positions).
    pub stats: Option<Stats>,
}

/// Solver figures of one exact solve.
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Memo entries.
    pub positions: u64,
    /// Wall-clock seconds of the solve.
    pub seconds: f64,
    /// Bytes of the memo table.
    pub memo_bytes: u64,
    /// Peak resident memory of the process.
    pub peak_rss_bytes: u64,
    /// Peak RSS per million memo entries, in MB.
    pub peak_mb_per_million: f64,
}

/// Checks `--cap` and `--bound`, naming the flag and the limit.
pub fn check_limits(cap: u64, bound: u64) -> Result<Limits, ResultsError> {
    let limits = Limits { bound, cap };
    limits.check().map_err(|e| {
        ResultsError::Unsupported(match e {
            SolveError::BadBound { .. } => format!("--bound {bound}: {e}"),
            e => format!("--cap {cap}: {e}"),
        })
    })
}

/// Analyses one position. Everything is checked before memory is sized by
/// it: the limits, then the numbers (each at most [`MAX_NUMBER`]; for a
/// finite position, the smallest at most 64 before its Apéry set is built,
/// and at most 255 nameable numbers a class before `t`, the
/// nameable numbers, the generators or the ender test are computed).
pub fn position_report(text: &str, cap: u64, bound: u64, prune: bool) -> Result<PositionReport, ResultsError> {
    let limits = check_limits(cap, bound)?;
    let unsupported = |e: &dyn std::fmt::Display| ResultsError::Unsupported(e.to_string());
    let numbers = parse_numbers(text).map_err(|e| unsupported(&e))?;
    let refuse = |e: SolveError| {
        let mut shown = numbers.clone();
        shown.sort_unstable();
        shown.dedup();
        ResultsError::Unsupported(format!("position {}: {e}", set_text(&shown)))
    };
    if numbers.iter().fold(0, |g, &x| gcd(g, x)) == 1 {
        check_numbers(&numbers).map_err(refuse)?;
    }
    let a = Apery::from_numbers(&numbers).map_err(|e| unsupported(&e))?;
    let solver = if a.is_finite() { Some(ClassSolver::for_position(&a).map_err(refuse)?) } else { None };
    let generators = a.minimal_generators();
    let mut report = PositionReport {
        generators,
        gcd: a.gcd(),
        t: a.frobenius(),
        nameable: a.nameable(),
        ender: a.is_ender(),
        quiet_ender: a.is_quiet_ender(),
        value: String::new(),
        winning: Vec::new(),
        reason: String::new(),
        stats: None,
    };
    if let Some(mut solver) = solver {
        solver.set_cap(limits.cap);
        solver.set_ender_pruning(prune);
        let started = Instant::now();
        let result = solver.winning_moves(&a);
        let seconds = started.elapsed().as_secs_f64();
        let positions = solver.positions();
        let peak = peak_rss_bytes();
        report.stats = Some(Stats {
            positions,
            seconds,
            memo_bytes: solver.memo_bytes(),
            peak_rss_bytes: peak,
            peak_mb_per_million: peak as f64 / 1e6 / (positions.max(1) as f64 / 1e6),
        });
        match result {
            Ok(w) => {
                report.value = if w.is_empty() { "P" } else { "N" }.into();
                report.reason = "solved exactly".into();
                report.winning = w;
            }
            Err(e @ (SolveError::Capped { .. } | SolveError::OutOfMemory { .. })) => {
                report.value = "open".into();
                report.reason = e.to_string();
            }
            Err(e) => return Err(unsupported(&e)),
        }
    } else {
        let v = verdict(&a, limits);
        let (value, winning, reason) = match v {
            Verdict::P(why) => ("P", Vec::new(), why),
            Verdict::N(w, why) => ("N", w, why),
            Verdict::Open(why) => ("open", Vec::new(), why),
        };
        report.value = value.into();
        report.winning = winning;
        report.reason = reason;
        if let Some(why) = known_p(&a) {
            report.reason = why.to_string();
        }
    }
    Ok(report)
}

/// The report as text.
pub fn report_text(r: &PositionReport, stats: bool) -> String {
    let mut s = format!("position {}  (gcd {})\n", set_text(&r.generators), r.gcd);
    match (&r.t, &r.nameable) {
        (Some(t), Some(names)) => {
            s += &format!("t = {t}, {} nameable: {}\n", names.len(), join(names));
            let kind = if !r.ender {
                "no"
            } else if r.quiet_ender {
                "yes (quiet)"
            } else {
                "yes (unquiet)"
            };
            s += &format!("ender: {kind}\n");
        }
        _ => s += "infinitely many nameable numbers\n",
    }
    match r.value.as_str() {
        "P" => s += &format!("P: the player to move loses ({})\n", r.reason),
        "N" => s += &format!("N: winning moves {} ({})\n", join(&r.winning), r.reason),
        _ => s += &format!("open: {}\n", r.reason),
    }
    if stats && let Some(st) = &r.stats {
        s += &format!(
            "positions {}  seconds {:.3}  memo {:.1} MB  peak RSS {:.1} MB  ({:.1} MB per million positions)\n",
            st.positions,
            st.seconds,
            st.memo_bytes as f64 / 1e6,
            st.peak_rss_bytes as f64 / 1e6,
            st.peak_mb_per_million
        );
    }
    s
}

fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

/// One line of the first-move table.
#[derive(Clone, Debug, Serialize)]
pub struct OpeningRow {
    /// The first move.
    pub n: u64,
    /// "wins", "loses" or "open".
    pub result: &'static str,
    /// Why.
    pub reason: String,
}

/// The first-move table for `1..=up_to`, row by row as it is made (after
/// the limits are checked: `up_to` from 1 to [`MAX_OPENINGS`]).
pub fn openings(up_to: u64, limits: Limits) -> Result<impl Iterator<Item = OpeningRow>, ResultsError> {
    if !(1..=MAX_OPENINGS).contains(&up_to) {
        return Err(ResultsError::Unsupported(format!("--openings {up_to}: {}", openings_range())));
    }
    let limits = check_limits(limits.cap, limits.bound)?;
    Ok((1..=up_to).map(move |n| {
        let (result, reason) = match opening(n, limits) {
            Opening::Wins(why) => ("wins", why),
            Opening::Loses(why) => ("loses", why),
            Opening::Open(why) => ("open", why),
        };
        OpeningRow { n, result, reason }
    }))
}
