//! What a peg solitaire job writes as `summary.json`: the breadth-first
//! ledger with its totals and OEIS checks, or the single-vacancy problem
//! tables; and the Markdown ledger of either.

use crate::peg::{ledger, oeis, problems};
use retro_games::GameKind;
use serde::Serialize;

/// The summary of a ledger run, written as `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerSummary {
    /// Always `peg`.
    pub game: GameKind,
    /// Job name.
    pub job: String,
    /// The ledger: `board`, `vacancy`, `levels[]`, `solutions_by_hole`.
    #[serde(flatten)]
    pub ledger: ledger::Ledger,
    /// Holes whose position class equals the start's: the only places a lone peg can finish.
    pub finishing_holes: Vec<String>,
    /// Column totals.
    pub totals: Totals,
    /// The OEIS checks (central English game only; empty otherwise).
    pub oeis: Vec<oeis::SequenceCheck>,
    /// Shards per level.
    pub shards: usize,
    /// Threads used.
    pub threads: usize,
    /// Levels loaded from checkpoints rather than computed in this run.
    pub levels_resumed: usize,
    /// Wall seconds of the levels and of the ledger pass, in this run.
    pub seconds_levels: f64,
    /// Wall seconds of the ledger pass.
    pub seconds_ledger: f64,
    /// The memory bound the levels were expanded within (bytes).
    pub memory_bytes: u64,
    /// Levels held on disk only (too big for the bound).
    pub levels_on_disk: usize,
    /// Most bytes the levels and their spill files took on disk at once, over
    /// the levels computed in this run (0 when every level fit in memory).
    pub peak_disk_bytes: u64,
    /// Peak resident memory of the process (bytes).
    pub peak_rss_bytes: u64,
}

/// Sums over all levels.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    /// All positions.
    pub positions: u64,
    /// All positions up to symmetry.
    pub up_to_symmetry: u64,
    /// All dead ends.
    pub dead_ends: u64,
    /// All still-winnable positions.
    pub winnable: u64,
    /// The same up to symmetry.
    pub winnable_up_to_symmetry: u64,
    /// Jump sequences that leave one peg anywhere (a decimal string in JSON).
    #[serde(with = "ledger::decimal")]
    pub solutions: u128,
    /// All states (position and last landing hole), when the ledger has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing_states: Option<u64>,
}

impl Totals {
    /// The sums over every level of `ledger`.
    pub fn of(ledger: &ledger::Ledger) -> Totals {
        Totals {
            positions: ledger.total(|r| r.positions),
            up_to_symmetry: ledger.total(|r| r.up_to_symmetry),
            dead_ends: ledger.total(|r| r.dead_ends),
            winnable: ledger.total(|r| r.winnable),
            winnable_up_to_symmetry: ledger.total(|r| r.winnable_up_to_symmetry),
            solutions: ledger.solutions_by_hole.iter().map(|h| h.solutions).sum(),
            landing_states: ledger.levels.iter().map(|r| r.landing_states).sum(),
        }
    }
}

impl LedgerSummary {
    /// True when every OEIS term checked matched.
    pub fn oeis_ok(&self) -> bool {
        self.oeis.iter().all(|c| c.mismatches.is_empty())
    }

    /// A terminal report: the table, the totals, the OEIS verdicts.
    pub fn text(&self) -> String {
        let mut out = format!("peg solitaire, {} board, vacancy {}\n", self.ledger.board, self.ledger.vacancy);
        out.push_str(&self.ledger.markdown());
        let t = &self.totals;
        out.push_str(&format!(
            "positions {} ({} up to symmetry), dead ends {}, still winnable {} ({} up to symmetry)\n",
            t.positions, t.up_to_symmetry, t.dead_ends, t.winnable, t.winnable_up_to_symmetry
        ));
        if let Some(states) = t.landing_states {
            out.push_str(&format!("states (position and last landing hole) {states}\n"));
        }
        out.push_str(&format!("solutions (one peg left) {}\n", t.solutions));
        for h in &self.ledger.solutions_by_hole {
            out.push_str(&format!("  ending on {}: {}\n", h.hole, h.solutions));
        }
        out.push_str(&format!("class-feasible finishing holes: {}\n", self.finishing_holes.join(" ")));
        for c in &self.oeis {
            let verdict = if c.mismatches.is_empty() {
                "ok".to_string()
            } else {
                let (n, want, got) = c.mismatches[0];
                format!("MISMATCH at n = {n}: published {want}, computed {got} ({} terms differ)", c.mismatches.len())
            };
            out.push_str(&format!("{} ({}, {} terms): {verdict}\n", c.id, c.what, c.terms));
        }
        out.push_str(&format!(
            "levels {:.2}s ({} resumed), ledger {:.2}s, {} shards, {} threads\n",
            self.seconds_levels, self.levels_resumed, self.seconds_ledger, self.shards, self.threads
        ));
        out
    }
}

/// The result of a problems plan, written as `summary.json` (and `problems.md`).
#[derive(Clone, Debug, Serialize)]
pub struct ProblemsSummary {
    /// Always `peg`.
    pub game: GameKind,
    /// Always `problems`.
    pub task: &'static str,
    /// Job name.
    pub job: String,
    /// Positions a single search may expand before it reports `undecided`.
    pub budget: u64,
    /// One table per board.
    pub boards: Vec<problems::BoardProblems>,
}

/// The results ledger (Markdown) of a peg summary.json: the level table or the problem tables.
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    let text = |x: &serde_json::Value| match x {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out = String::new();
    if v["task"] == "problems" {
        out.push_str(&format!(
            "## {} — peg solitaire, single-vacancy problems\n\nProduced by `coordinator ledger` from the run's summary.json \
             (search budget {} positions per problem). Each class-feasible problem is decided: a solution replayed move by \
             move, or an exhaustive search.\n\n",
            text(&v["job"]),
            text(&v["budget"])
        ));
        for b in v["boards"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "### {} board\n\n{} problems, {} class-feasible: **{} solvable, {} impossible, {} undecided** \
                 ({} searches, one per symmetry class; {:.1} s). Starts with a feasible finish, up to symmetry: {}.\n\n",
                text(&b["board"]),
                text(&b["problems"]),
                text(&b["class_feasible"]),
                text(&b["solvable"]),
                text(&b["impossible"]),
                text(&b["undecided"]),
                text(&b["searches"]),
                b["seconds"].as_f64().unwrap_or(0.0),
                b["feasible_starts_up_to_symmetry"]
                    .as_array()
                    .map(|a| a.iter().map(text).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ));
            out.push_str("| start | finish | status | positions searched | solution |\n|---|---|---|---:|---|\n");
            for r in b["rows"].as_array().into_iter().flatten().filter(|r| r["class_feasible"] == true) {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    text(&r["start"]),
                    text(&r["finish"]),
                    text(&r["status"]),
                    text(&r["positions"]),
                    r["solution"].as_str().unwrap_or("")
                ));
            }
            out.push('\n');
        }
        return out;
    }
    out.push_str(&format!(
        "## {} — peg solitaire, {} board, {} vacant\n\nProduced by `coordinator ledger` from the run's summary.json \
         ({} shards). Still winnable: can end with one peg in the vacated hole.\n\n",
        text(&v["job"]),
        text(&v["board"]),
        text(&v["vacancy"]),
        text(&v["shards"])
    ));
    let levels = v["levels"].as_array().map(Vec::as_slice).unwrap_or_default();
    // Summaries of plans with `landing_holes` have one more column.
    let states = levels.iter().any(|r| !r["landing_states"].is_null());
    let mut cols = vec![
        "jumps",
        "pegs",
        "positions",
        "up_to_symmetry",
        "sequences",
        "dead_ends",
        "winnable",
        "winnable_up_to_symmetry",
    ];
    out.push_str("| jumps | pegs | positions | up to symmetry | jump sequences | dead ends | still winnable | winnable up to symmetry |");
    if states {
        cols.push("landing_states");
        out.push_str(" states (last landing hole) |");
    }
    out.push_str(&format!("\n|{}\n", "---:|".repeat(cols.len())));
    for r in levels {
        out.push_str(&format!("| {} |\n", cols.iter().map(|c| text(&r[*c])).collect::<Vec<_>>().join(" | ")));
    }
    let t = &v["totals"];
    out.push_str(&format!(
        "\nTotals: {} positions ({} up to symmetry), {} dead ends, {} still winnable ({} up to symmetry), {} solutions.\n",
        text(&t["positions"]),
        text(&t["up_to_symmetry"]),
        text(&t["dead_ends"]),
        text(&t["winnable"]),
        text(&t["winnable_up_to_symmetry"]),
        text(&t["solutions"])
    ));
    if states {
        out.push_str(&format!(
            "States (a position with the hole its last jump landed in, as the published enumeration counts): {}.\n",
            text(&t["landing_states"])
        ));
    }
    for h in v["solutions_by_hole"].as_array().into_iter().flatten() {
        out.push_str(&format!("- solutions ending on {}: {}\n", text(&h["hole"]), text(&h["solutions"])));
    }
    let checks: Vec<String> = v["oeis"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let ok = c["mismatches"].as_array().is_some_and(|m| m.is_empty());
            format!("{} {}", text(&c["id"]), if ok { "matches" } else { "MISMATCH" })
        })
        .collect();
    if !checks.is_empty() {
        out.push_str(&format!("\nOEIS, term by term: {}.\n", checks.join(", ")));
    }
    out.push('\n');
    out
}
