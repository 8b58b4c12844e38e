//! `coordinator sylver`: one Sylver coinage position (t, the nameable numbers,
//! ender or not, the winning moves), its solver statistics, or the first-move
//! table. The plan-driven table job is [`crate::sylver_job`].
//!
//! Every number it is given is checked before anything is sized by it: the
//! named numbers against [`MAX_NUMBER`] (the parser), a finite position against
//! the solver's range ([`check_numbers`], [`ClassSolver::for_position`]: the
//! smallest number at most [`retro_engine::sylver::MAX_M`], at most
//! [`retro_engine::sylver::MAX_K`] nameable numbers a class) before its `t`,
//! nameable numbers or enders are computed, `--cap` against [`MAX_CAP`],
//! `--bound` against [`MAX_BOUND`] and `--openings` against [`MAX_OPENINGS`];
//! the first-move table is printed as it is made, so its memory does not grow
//! with `N`.

use std::io::Write;
use std::time::Instant;

use retro_engine::sylver::theory::{Limits, MAX_BOUND, Opening, Verdict, opening, verdict};
use retro_engine::sylver::{ClassSolver, MAX_CAP, SolveError, check_cap, check_numbers};
use retro_games::sylver::theory::{known_p, set_text};
use retro_games::sylver::{Apery, MAX_NUMBER, gcd, parse_numbers};
use serde::Serialize;

use crate::bench::peak_rss_bytes;

/// Default position cap of one command (about 1.6 GB of memo at 16 bytes a slot).
pub const DEFAULT_CAP: u64 = 100_000_000;

/// The largest `N` of `--openings N`: a first move above [`MAX_NUMBER`]
/// cannot be named here, so its row could only say so.
pub const MAX_OPENINGS: u64 = MAX_NUMBER;

/// Arguments of `coordinator sylver`.
#[derive(clap::Args, Debug)]
pub struct SylverArgs {
    /// The named numbers, any order, e.g. "5 14"; each at most 1048576 (2^20). A finite position (gcd 1) is
    /// solved exactly, which takes a smallest number of at most 64 and at most 255 nameable numbers in each
    /// class mod that number.
    #[arg(long, required_unless_present = "openings")]
    pub position: Option<String>,
    /// Also print the solver's figures: positions, seconds, memo bytes, peak RSS.
    #[arg(long)]
    pub stats: bool,
    /// Stop after this many memo positions (1 to 4294967296 = 2^32; the memo grows as the search needs).
    #[arg(long, default_value_t = DEFAULT_CAP, value_parser = cap_arg)]
    pub cap: u64,
    /// Infinite positions: try replies up to this number (at most 1048576 = 2^20, the largest nameable here).
    #[arg(long, default_value_t = 120, value_parser = bound_arg)]
    pub bound: u64,
    /// Take a child that is an ender with t > 1 as N without searching it.
    #[arg(long)]
    pub ender_pruning: bool,
    /// Print the first-move table for 1..=N instead of a position (N from 1 to 1048576 = 2^20).
    #[arg(long, value_name = "N", conflicts_with = "position", value_parser = openings_arg)]
    pub openings: Option<u64>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

/// `--cap`: a number of positions in `1..=`[`MAX_CAP`].
fn cap_arg(text: &str) -> Result<u64, String> {
    let cap = text.parse().map_err(|_| format!("say a number of positions from 1 to {MAX_CAP}"))?;
    check_cap(cap).map_err(|e| e.to_string())
}

/// `--bound`: a number up to [`MAX_BOUND`].
fn bound_arg(text: &str) -> Result<u64, String> {
    let bound = text.parse().map_err(|_| format!("say a number from 0 to {MAX_BOUND}"))?;
    Limits { bound, cap: 1 }.check().map(|l| l.bound).map_err(|e| e.to_string())
}

/// `--openings`: `N` in `1..=`[`MAX_OPENINGS`].
fn openings_arg(text: &str) -> Result<u64, String> {
    match text.parse() {
        Ok(n) if (1..=MAX_OPENINGS).contains(&n) => Ok(n),
        _ => Err(openings_range()),
    }
}

fn openings_range() -> String {
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
pub fn check_limits(cap: u64, bound: u64) -> Result<Limits, String> {
    let limits = Limits { bound, cap };
    limits.check().map_err(|e| match e {
        SolveError::BadBound { .. } => format!("--bound {bound}: {e}"),
        e => format!("--cap {cap}: {e}"),
    })
}

/// Analyses one position. Everything is checked before memory is sized by
/// it: the limits, then the numbers (each at most [`MAX_NUMBER`]; for a
/// finite position, the smallest at most 64 before its Apéry set is built,
/// and at most 255 nameable numbers a class before `t`, the
/// nameable numbers, the generators or the ender test are computed).
pub fn position_report(text: &str, cap: u64, bound: u64, prune: bool) -> Result<PositionReport, String> {
    let limits = check_limits(cap, bound)?;
    let numbers = parse_numbers(text).map_err(|e| e.to_string())?;
    let refuse = |e: SolveError| {
        let mut shown = numbers.clone();
        shown.sort_unstable();
        shown.dedup();
        format!("position {}: {e}", set_text(&shown))
    };
    if numbers.iter().fold(0, |g, &x| gcd(g, x)) == 1 {
        check_numbers(&numbers).map_err(refuse)?;
    }
    let a = Apery::from_numbers(&numbers).map_err(|e| e.to_string())?;
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
            Err(e) => return Err(e.to_string()),
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
pub fn openings(up_to: u64, limits: Limits) -> Result<impl Iterator<Item = OpeningRow>, String> {
    if !(1..=MAX_OPENINGS).contains(&up_to) {
        return Err(format!("--openings {up_to}: {}", openings_range()));
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

/// Prints the first-move table as it is made: text lines, or one JSON array
/// (the same text `serde_json::to_string_pretty` gives for the whole table).
/// A reader that stops reading (`| head`) ends it without an error.
fn print_openings(rows: impl Iterator<Item = OpeningRow>, json: bool) -> Result<(), String> {
    match write_openings(&mut std::io::stdout().lock(), rows, json) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| format!("stdout: {e}")),
    }
}

fn write_openings(out: &mut impl Write, rows: impl Iterator<Item = OpeningRow>, json: bool) -> std::io::Result<()> {
    if json {
        let mut first = true;
        for r in rows {
            let row = serde_json::to_string_pretty(&r).map_err(std::io::Error::other)?;
            write!(out, "{}\n  {}", if first { "[" } else { "," }, row.replace('\n', "\n  "))?;
            first = false;
        }
        writeln!(out, "{}", if first { "[]" } else { "\n]" })?;
    } else {
        for r in rows {
            writeln!(out, "{:>4}  {:<5}  {}", r.n, r.result, r.reason)?;
        }
    }
    out.flush()
}

/// Runs `coordinator sylver`.
pub fn run(args: SylverArgs) -> Result<(), String> {
    if let Some(up_to) = args.openings {
        let rows = openings(up_to, Limits { bound: args.bound, cap: args.cap })?;
        return print_openings(rows, args.json);
    }
    let text = args.position.as_deref().unwrap_or_default();
    let r = position_report(text, args.cap, args.bound, args.ender_pruning)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
    } else {
        print!("{}", report_text(&r, args.stats));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits { bound: 60, cap: 100_000 }
    }

    /// The table written row by row is the JSON the whole table gives.
    #[test]
    fn streamed_json_is_the_pretty_json_of_the_table() {
        let rows: Vec<OpeningRow> = openings(13, limits()).unwrap().collect();
        assert_eq!(rows.len(), 13);
        let mut out = Vec::new();
        write_openings(&mut out, rows.clone().into_iter(), true).unwrap();
        let whole = serde_json::to_string_pretty(&rows).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{whole}\n"));
        let mut empty = Vec::new();
        write_openings(&mut empty, std::iter::empty(), true).unwrap();
        assert_eq!(String::from_utf8(empty).unwrap(), "[]\n");
        let mut text = Vec::new();
        write_openings(&mut text, rows.into_iter(), false).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), 13);
        assert!(text.starts_with("   1  loses  whoever names 1 loses\n"), "{text}");
    }

    #[test]
    fn arguments_name_their_limits() {
        assert_eq!(cap_arg("1"), Ok(1));
        assert_eq!(cap_arg(&MAX_CAP.to_string()), Ok(MAX_CAP));
        for bad in ["0", "4294967297", "99999999999999999999999", "-1", "x"] {
            let e = cap_arg(bad).unwrap_err();
            assert!(e.contains("4294967296"), "{bad}: {e}");
        }
        assert_eq!(bound_arg("0"), Ok(0));
        assert_eq!(bound_arg("1048576"), Ok(MAX_BOUND));
        for bad in ["1048577", "18446744073709551616", "-5"] {
            let e = bound_arg(bad).unwrap_err();
            assert!(e.contains("1048576"), "{bad}: {e}");
        }
        assert_eq!(openings_arg("1048576"), Ok(MAX_OPENINGS));
        for bad in ["0", "1048577", "100000000", "1e9"] {
            let e = openings_arg(bad).unwrap_err();
            assert!(e.contains("1048576"), "{bad}: {e}");
        }
        assert!(openings(0, limits()).is_err());
        let e = openings(100_000_000, limits()).err().unwrap();
        assert!(e.starts_with("--openings 100000000:") && e.contains("1048576"), "{e}");
        let e = openings(30, Limits { bound: 1 << 30, cap: 1 }).err().unwrap();
        assert!(e.starts_with("--bound 1073741824:") && e.contains("1048576"), "{e}");
        let e = openings(30, Limits { bound: 60, cap: 0 }).err().unwrap();
        assert!(e.starts_with("--cap 0:") && e.contains("4294967296"), "{e}");
    }
}
