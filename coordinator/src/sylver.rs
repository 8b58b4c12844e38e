//! `coordinator sylver`: one Sylver coinage position (t, the nameable numbers,
//! ender or not, the winning moves), its solver statistics, or the first-move
//! table. The plan-driven table job is [`crate::sylver_job`].

use std::time::Instant;

use retro_engine::sylver::theory::{Limits, Opening, Verdict, opening, verdict};
use retro_engine::sylver::{ClassSolver, SolveError};
use retro_games::sylver::Apery;
use retro_games::sylver::theory::{known_p, set_text};
use serde::Serialize;

use crate::bench::peak_rss_bytes;

/// Default position cap of one command (about 1.6 GB of memo at 16 bytes a slot).
pub const DEFAULT_CAP: u64 = 100_000_000;

/// Arguments of `coordinator sylver`.
#[derive(clap::Args, Debug)]
pub struct SylverArgs {
    /// The named numbers, any order, e.g. "5 14".
    #[arg(long, required_unless_present = "openings")]
    pub position: Option<String>,
    /// Also print the solver's figures: positions, seconds, memo bytes, peak RSS.
    #[arg(long)]
    pub stats: bool,
    /// Stop after this many memo positions.
    #[arg(long, default_value_t = DEFAULT_CAP)]
    pub cap: u64,
    /// Infinite positions: try replies up to this number.
    #[arg(long, default_value_t = 120)]
    pub bound: u64,
    /// Take a child that is an ender with t > 1 as N without searching it.
    #[arg(long)]
    pub ender_pruning: bool,
    /// Print the first-move table for 1..=N instead of a position.
    #[arg(long, value_name = "N", conflicts_with = "position")]
    pub openings: Option<u64>,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
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

/// Analyses one position.
pub fn position_report(text: &str, cap: u64, bound: u64, prune: bool) -> Result<PositionReport, String> {
    let a = Apery::parse(text).map_err(|e| e.to_string())?;
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
    if a.is_finite() {
        let mut solver = ClassSolver::for_position(&a).map_err(|e| e.to_string())?;
        solver.set_cap(cap);
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
            Err(e @ SolveError::Capped { .. }) => {
                report.value = "open".into();
                report.reason = e.to_string();
            }
            Err(e) => return Err(e.to_string()),
        }
    } else {
        let v = verdict(&a, Limits { bound, cap });
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

/// The first-move table for `1..=up_to`.
pub fn openings(up_to: u64, limits: Limits) -> Vec<OpeningRow> {
    (1..=up_to)
        .map(|n| {
            let (result, reason) = match opening(n, limits) {
                Opening::Wins(why) => ("wins", why),
                Opening::Loses(why) => ("loses", why),
                Opening::Open(why) => ("open", why),
            };
            OpeningRow { n, result, reason }
        })
        .collect()
}

/// Runs `coordinator sylver`.
pub fn run(args: SylverArgs) -> Result<(), String> {
    if let Some(up_to) = args.openings {
        let rows = openings(up_to, Limits { bound: args.bound, cap: args.cap });
        if args.json {
            println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
        } else {
            for r in rows {
                println!("{:>4}  {:<5}  {}", r.n, r.result, r.reason);
            }
        }
        return Ok(());
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
