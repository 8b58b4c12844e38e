//! `coordinator check --summary FILE`: every published line of the summary's
//! stage (the reference table built into the binary, copied from the project's
//! published-numbers file with its source line) next to the value the run
//! computed, with a verdict. A mismatch, or a published number the summary
//! cannot answer, makes the command fail, so a long run's claim "reproduces
//! every published number" is one repeatable command.

use crate::ResultsError;
use retro_games::GameKind;
use serde_json::Value;

/// The published three-player numbers (key, value, note), as in the tests.
const REFERENCE: &str = include_str!("../../reference/cc3.tsv");

/// How one published line compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The computed value equals the published one.
    Match,
    /// It differs.
    Mismatch,
    /// The summary does not hold what the line needs.
    Missing,
    /// Not a result of the run (a plan input or a remark about the article's run).
    NotComputed,
}

/// One published line and what the run says about it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Line {
    /// Reference key, e.g. `stage2.category.kingmaker`.
    pub key: String,
    /// The published value.
    pub published: String,
    /// The computed value, as text ("-" when there is none).
    pub computed: String,
    /// The comparison.
    pub verdict: Verdict,
    /// How the computed value was read from the summary.
    pub how: String,
}

/// Compares a cc3 `summary.json` with the published lines of its stage.
pub fn check_cc3(summary: &Value) -> Result<Vec<Line>, ResultsError> {
    if summary["game"] != GameKind::Cc3.as_str() {
        return Err(ResultsError::Unsupported(format!(
            "the summary is of game {}, not cc3 (three-player Chinese checkers)",
            summary["game"]
        )));
    }
    if crate::cc3::ranked::is_ranked(summary) {
        return Err(ResultsError::Unsupported(
            "the summary is of the ranked game, which has no published numbers (a new result; \
             coordinator/tests/reference/stage1-ranked.tsv holds stage 1's, from an independent solver)"
                .into(),
        ));
    }
    let stage = match summary["order"].as_u64() {
        Some(1) => "stage1",
        Some(2) => "stage2",
        other => {
            return Err(ResultsError::Unsupported(format!(
                "no published numbers for order {other:?} (stage 1 is order 1, stage 2 order 2)"
            )));
        }
    };
    // Stage 1's per-player and category counts are over the positions
    // reachable from the start, stage 2's over the whole space.
    let scope = if stage == "stage1" { "reachable" } else { "all" };
    let mut lines = Vec::new();
    for row in REFERENCE.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut fields = row.split('\t');
        let (Some(key), Some(published)) = (fields.next(), fields.next()) else { continue };
        let Some(name) = key.strip_prefix(stage).and_then(|k| k.strip_prefix('.')) else { continue };
        let (computed, how) = computed_value(summary, name, scope);
        let verdict = match &computed {
            Computed::Input => Verdict::NotComputed,
            Computed::Absent => Verdict::Missing,
            Computed::Number(n) => {
                if published.parse::<u64>().ok() == Some(*n) {
                    Verdict::Match
                } else {
                    Verdict::Mismatch
                }
            }
            Computed::Claim(holds, _) => {
                if *holds {
                    Verdict::Match
                } else {
                    Verdict::Mismatch
                }
            }
        };
        let computed = match computed {
            Computed::Number(n) => n.to_string(),
            Computed::Claim(_, text) => text,
            Computed::Input | Computed::Absent => "-".into(),
        };
        lines.push(Line { key: key.to_owned(), published: published.to_owned(), computed, verdict, how });
    }
    Ok(lines)
}

enum Computed {
    Number(u64),
    /// Whether a published statement holds, and what the run found.
    Claim(bool, String),
    Input,
    Absent,
}

fn number(v: &Value, how: &str) -> (Computed, String) {
    (v.as_u64().map_or(Computed::Absent, Computed::Number), how.to_owned())
}

/// The same count for A, B and C (rotation), or absent when they differ.
fn per_player(s: &Value, scope: &str, value: &str) -> (Computed, String) {
    let counts: Vec<Option<u64>> =
        ["A", "B", "C"].iter().map(|p| s["scopes"][scope]["solo"][p][value].as_u64()).collect();
    let how = format!("scopes.{scope}.solo.{{A,B,C}}.{value} (equal for the three players)");
    match counts[..] {
        [Some(a), Some(b), Some(c)] if a == b && b == c => (Computed::Number(a), how),
        [Some(_), Some(_), Some(_)] => (Computed::Claim(false, format!("{counts:?} differ by player")), how),
        _ => (Computed::Absent, how),
    }
}

fn computed_value(s: &Value, name: &str, scope: &str) -> (Computed, String) {
    let bfs = &s["bfs_from_start"];
    match name {
        "cells" | "pieces_each" => (Computed::Input, "the plan's board (an input)".into()),
        "article_run" => (Computed::Input, "the article's machine and time (compared in docs/BENCHMARKS.md)".into()),
        "lane_restricted_positions" => number(&s["positions"], "positions"),
        "reachable_from_start" => number(&s["scopes"]["reachable"]["positions"], "scopes.reachable.positions"),
        "canonical_placements_c3" => number(&s["canonical_placements"], "canonical_placements"),
        "illegal_two_goals_full" => number(&s["illegal"], "illegal"),
        // A solo layer started from the enable layers' LOSS positions
        // (`--seed-solo`) runs fewer rounds than the full layer: its round
        // count is not the article's.
        "solo_layer_last_round" | "solo_layer_rounds" if s["layers"][0]["seeded"] == true => (
            Computed::Absent,
            "layers[0].rounds: not the full layer's (solo(A) was seeded from the enable layers; run without \
             --seed-solo to count them)"
                .into(),
        ),
        "solo_layer_last_round" => {
            number(&s["layers"][0]["rounds"], "layers[0].rounds: the last round that decided a position")
        }
        // The article: the one-piece solo layer "settles in round 9" (its last
        // deciding round, as above), the three-piece one "takes 53 rounds":
        // the rounds run, the last of which decides nothing and so shows the
        // fixpoint. The peak at rounds 10-13 it reports fixes the numbering.
        "solo_layer_rounds" => match s["layers"][0]["rounds"].as_u64() {
            Some(r) => (
                Computed::Number(r + 1),
                format!("layers[0].rounds + 1: {r} deciding rounds, then the round that decides nothing"),
            ),
            None => (Computed::Absent, "layers[0].rounds".into()),
        },
        "start" => {
            let st = &s["start"];
            let solos: Vec<&str> = ["A", "B", "C"].iter().filter_map(|p| st["solo"][p].as_str()).collect();
            let holds = st["category"] == "kingmaker" && solos.len() == 3 && solos.iter().all(|v| *v == "loss");
            let enables =
                ["A>B", "A>C", "B>A", "B>C", "C>A", "C>B"].iter().filter(|e| st["enable"][**e] == true).count();
            (
                Computed::Claim(
                    holds,
                    format!("category {}, solo {}, {enables} of 6 enable hold", st["category"], solos.join("/")),
                ),
                "start: category kingmaker and solo loss for all three (no solo win, no solo draw)".into(),
            )
        }
        "bfs_from_start.depth_le_8" => {
            let depths: Vec<&Value> = bfs.as_array().map(|a| a.iter().take(9).collect()).unwrap_or_default();
            if depths.len() < 9 {
                return (Computed::Absent, "bfs_from_start[0..=8]".into());
            }
            let all = depths.iter().all(|d| d["new"].as_u64().is_some() && d["categories"]["kingmaker"] == d["new"]);
            let total: u64 = depths.iter().filter_map(|d| d["new"].as_u64()).sum();
            (
                Computed::Claim(
                    all,
                    format!(
                        "{total} positions at depths 0-8, {}",
                        if all { "all kingmaker" } else { "not all kingmaker" }
                    ),
                ),
                "bfs_from_start[0..=8]: categories.kingmaker == new".into(),
            )
        }
        "bfs_from_start.depth9_new_positions" => number(&bfs[9]["new"], "bfs_from_start[9].new"),
        "bfs_from_start.depth9_solo_win" => {
            number(&bfs[9]["categories"]["solo_win"], "bfs_from_start[9].categories.solo_win")
        }
        "bfs_from_start.depth9_spoiler_draw" => {
            number(&bfs[9]["categories"]["spoiler_draw"], "bfs_from_start[9].categories.spoiler_draw")
        }
        "bfs_from_start.depth9_kingmaker" => {
            number(&bfs[9]["categories"]["kingmaker"], "bfs_from_start[9].categories.kingmaker")
        }
        _ => match name.strip_prefix("category.") {
            Some(cat) => number(&s["scopes"][scope]["categories"][cat], &format!("scopes.{scope}.categories.{cat}")),
            None => match name.strip_prefix("solo_per_player.") {
                Some(value) => per_player(s, scope, value),
                None => (Computed::Absent, "no rule for this key".into()),
            },
        },
    }
}

/// The lines as a Markdown table, then one line of totals.
pub fn markdown(lines: &[Line]) -> String {
    let mut out =
        String::from("| published key | published | computed | verdict | read from |\n|---|---:|---:|---|---|\n");
    for l in lines {
        let verdict = match l.verdict {
            Verdict::Match => "match",
            Verdict::Mismatch => "**MISMATCH**",
            Verdict::Missing => "**MISSING**",
            Verdict::NotComputed => "not a computed number",
        };
        out += &format!("| `{}` | {} | {} | {verdict} | {} |\n", l.key, l.published, l.computed, l.how);
    }
    let count = |v: Verdict| lines.iter().filter(|l| l.verdict == v).count();
    out += &format!(
        "\n{} published numbers compared: {} match, {} mismatch, {} missing ({} lines are not computed numbers).\n",
        lines.len() - count(Verdict::NotComputed),
        count(Verdict::Match),
        count(Verdict::Mismatch),
        count(Verdict::Missing),
        count(Verdict::NotComputed)
    );
    out
}

/// True when every computed line matches.
pub fn all_match(lines: &[Line]) -> bool {
    lines.iter().all(|l| matches!(l.verdict, Verdict::Match | Verdict::NotComputed))
}
