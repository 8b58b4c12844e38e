//! `summary.json`: every count the job produced, computed from the tablebase
//! files themselves (so the embedded and the cluster run are summarised by
//! the same code from the same bytes), and the short human table.

use crate::ResultsError;
use crate::cc3::analysis::{self, Depth, DepthMap, Reach, ScopeCounts, StartReport};
use crate::cc3::compressed::{CHUNK_POSITIONS, CompressedLayers};
use crate::report::{program_of, thousands};
use crate::solved::{LayerSummary, SolvedJob, TablebaseSummary};
use retro_games::GameKind;
use retro_games::cc3::Cc3;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Counts over the whole space and over the reachable positions.
#[derive(Clone, Debug, Serialize)]
pub struct Scopes {
    /// Every lane-restricted position.
    pub all: ScopeCounts,
    /// The positions reachable from the start.
    pub reachable: ScopeCounts,
}

/// The whole summary.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Job name.
    pub job: String,
    /// Game.
    pub game: GameKind,
    /// Star order.
    pub order: u32,
    /// Plan hash.
    pub plan_hash: String,
    /// Program version.
    pub program_version: String,
    /// The git commit the program was built from (`unknown` outside git).
    pub program_commit: String,
    /// Positions in the lane-restricted space.
    pub positions: u64,
    /// Positions up to the 120-degree rotation.
    pub canonical_placements: u64,
    /// Illegal placements (two goals full).
    pub illegal: u64,
    /// Non-terminal positions whose player to move has no move (they pass).
    pub no_move_positions: u64,
    /// Counts per scope.
    pub scopes: Scopes,
    /// The start position.
    pub start: StartReport,
    /// Per computed layer.
    pub layers: Vec<LayerSummary>,
    /// Breadth-first depths from the start.
    pub bfs_from_start: Vec<Depth>,
    /// The tablebase files.
    pub tablebases: Vec<TablebaseSummary>,
    /// Each layer's depth file (the plies to the end of every position,
    /// docs/FORMAT.md), beside its tablebase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depth_files: Vec<TablebaseSummary>,
    /// Seconds spent on the analysis pass.
    pub analysis_seconds: f64,
}

/// Loads the three computed layers from `dir` (every file proven to be the
/// job's, every block verified), compressed in memory chunk by chunk (see
/// [`CompressedLayers`]): at order 2 they hold 11.1 GB of 2-bit values.
pub fn load_layers(game: &Cc3, dir: &Path, job: &SolvedJob) -> Result<CompressedLayers, ResultsError> {
    let open = |want: &str| job.open(dir, want, retro_games::cc3::RANK_ORDER);
    let [a, b, c] = analysis::COMPUTED_LAYERS;
    let readers = [open(a)?, open(b)?, open(c)?];
    let layers = CompressedLayers::from_tablebases(readers, game.ranker.placements() as u64, CHUNK_POSITIONS)?;
    tracing::info!("the three layers hold {} bytes in memory", layers.bytes());
    Ok(layers)
}

/// The directory, beside the tablebases, where the analysis parks what it
/// does not need in memory (removed when it is done).
pub const ANALYSIS_SCRATCH: &str = "analysis-scratch";

/// Computes the summary from the tablebases `job` recorded. With
/// `memory_available` (bytes) at least twice what a depth map needs (7.4 GB
/// at order 2), the depths are searched first and every count comes from one
/// pass over the rotation orbits ([`crate::cc3::depths`]); else each depth is
/// counted as the search reaches it, in less memory and more time.
pub fn compute(
    game: &Cc3,
    dir: &Path,
    job: &SolvedJob,
    threads: usize,
    memory_available: Option<u64>,
) -> Result<Summary, ResultsError> {
    let started = std::time::Instant::now();
    // The search's idle visited bitsets wait beside the tablebases.
    let scratch = dir.join(ANALYSIS_SCRATCH);
    let third = game.ranker.placements() as u64;
    let map_bytes = DepthMap::bytes_for(third);
    let (layers, all, reach) = if memory_available.is_some_and(|m| m / 2 >= map_bytes) {
        by_depth_map(game, dir, job, threads, &scratch)?
    } else {
        tracing::info!(
            "the analysis counts each depth as it searches: a depth map would need {:.2} GB, over half the \
             memory available",
            map_bytes as f64 / 1e9
        );
        let layers = load_layers(game, dir, job)?;
        let t = std::time::Instant::now();
        let all = analysis::count_all(game, &layers, threads);
        tracing::info!("counted all {} positions in {:.1}s", all.positions, t.elapsed().as_secs_f64());
        let t = std::time::Instant::now();
        let reach = analysis::explore(game, Some(&layers), None, threads, Some(&scratch))?;
        tracing::info!("explored from the start in {:.1}s", t.elapsed().as_secs_f64());
        (layers, all, reach)
    };
    let start = analysis::start_report(game, &layers);
    let positions = game.ranker.positions() as u64;
    Ok(Summary {
        job: job.job.clone(),
        game: GameKind::Cc3,
        order: game.star.n,
        plan_hash: job.plan_hash.clone(),
        program_version: env!("CARGO_PKG_VERSION").into(),
        program_commit: job.program_commit.clone(),
        positions,
        // Rotation changes the player to move, so it has no fixed position:
        // every orbit has exactly three positions (tested at order 1).
        canonical_placements: positions / 3,
        illegal: all.illegal,
        no_move_positions: job.layers.first().map_or(0, |l| l.no_move),
        scopes: Scopes { all, reachable: reach.reachable.unwrap_or_default() },
        start,
        layers: job.layer_summaries(),
        bfs_from_start: reach.depths,
        tablebases: job.tablebase_summaries(),
        depth_files: job.depth_summaries(),
        analysis_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The analysis by a depth map (see [`crate::cc3::depths`]): the search from
/// the start without the layers, then the layers loaded and one pass over
/// the rotation orbits for the whole space, the reached positions and each
/// depth. Returns the layers (for the start's report), the counts over all
/// positions and what the search reached.
fn by_depth_map(
    game: &Cc3,
    dir: &Path,
    job: &SolvedJob,
    threads: usize,
    scratch: &Path,
) -> Result<(CompressedLayers, ScopeCounts, Reach), ResultsError> {
    let t = std::time::Instant::now();
    let (depths, news) = analysis::search_depths(game, threads, Some(scratch))?;
    tracing::info!("explored from the start in {:.1}s (depths recorded)", t.elapsed().as_secs_f64());
    let layers = load_layers(game, dir, job)?;
    let t = std::time::Instant::now();
    let tallies = analysis::count_by_depth(game, &layers, &depths, threads);
    drop(depths);
    tracing::info!(
        "counted all {} positions, {} reached, by depth, in {:.1}s",
        tallies.all.positions,
        tallies.reachable.positions,
        t.elapsed().as_secs_f64()
    );
    // Two independent counts of each depth: the search's and the map's.
    let counted: Vec<u64> = tallies.by_depth.iter().map(|t| t.positions).collect();
    if counted != news {
        return Err(ResultsError::Inconsistent(format!(
            "positions per depth: the search found {news:?}, the depth map holds {counted:?}"
        )));
    }
    let depths = tallies
        .by_depth
        .iter()
        .enumerate()
        .map(|(d, t)| Depth { depth: d as u32, new: t.positions, categories: Some(t.category_map()) })
        .collect();
    Ok((layers, tallies.all.to_scope(), Reach { depths, reachable: Some(tallies.reachable.to_scope()) }))
}

/// The short human table printed at the end of a run.
pub fn human_table(s: &Summary) -> String {
    let mut out = String::new();
    let r = &s.scopes.reachable;
    let a = &s.scopes.all;
    out.push_str(&format!(
        "{} (three-player Chinese checkers, order {}): {} positions, {} reachable from the start\n",
        s.job,
        s.order,
        thousands(s.positions),
        thousands(r.positions)
    ));
    out.push_str(&format!("{:<14}{:>18}{:>18}\n", "", "all", "reachable"));
    for key in ["terminal", "solo_win", "spoiler_draw", "kingmaker", "other"] {
        out.push_str(&format!(
            "{:<14}{:>18}{:>18}\n",
            key,
            thousands(a.categories.get(key).copied().unwrap_or(0)),
            thousands(r.categories.get(key).copied().unwrap_or(0))
        ));
    }
    let solo = |c: &ScopeCounts| -> String {
        let m = c.solo.get("A").cloned().unwrap_or_default();
        let g = |k: &str| thousands(m.get(k).copied().unwrap_or(0));
        format!("{} / {} / {}", g("win"), g("loss"), g("draw"))
    };
    // Three numbers per scope are too wide for the table's columns.
    out.push_str(&format!("solo(A) win / loss / draw: all {}; reachable {}\n", solo(a), solo(r)));
    out.push_str(&format!(
        "illegal {}, positions without a move {}\n",
        thousands(s.illegal),
        thousands(s.no_move_positions)
    ));
    let forced: Vec<&str> = s.start.enable.iter().filter(|(_, v)| **v).map(|(k, _)| k.as_str()).collect();
    out.push_str(&format!(
        "start {}: {}; solo A/B/C {}/{}/{}; enable forced: {}\n",
        s.start.position,
        s.start.category,
        s.start.solo.get("A").map(String::as_str).unwrap_or("?"),
        s.start.solo.get("B").map(String::as_str).unwrap_or("?"),
        s.start.solo.get("C").map(String::as_str).unwrap_or("?"),
        if forced.is_empty() { "none".to_string() } else { forced.join(", ") }
    ));
    for l in &s.layers {
        out.push_str(&format!("layer {:<12} {:>3} rounds {:>10.2}s\n", l.question, l.rounds, l.seconds));
    }
    out
}

/// Category counts per depth, as a map, for explore's JSON.
pub fn depth_categories(d: &Depth) -> BTreeMap<String, u64> {
    d.categories.clone().unwrap_or_default()
}

/// The Markdown ledger of a three-player summary.json.
pub fn ledger_markdown(v: &serde_json::Value) -> String {
    let n = |x: &serde_json::Value| x.as_u64().map(thousands).unwrap_or_else(|| x.to_string());
    let mut out = String::new();
    out.push_str(&format!(
        "## {} — three-player Chinese checkers, order {}\n\nProduced by `coordinator ledger` from the run's \
         summary.json (plan {}, program {}).\n\n",
        v["job"].as_str().unwrap_or("?"),
        v["order"],
        v["plan_hash"].as_str().unwrap_or("?"),
        program_of(v)
    ));
    out.push_str("| quantity | all positions | reachable from the start |\n|---|---:|---:|\n");
    let (a, r) = (&v["scopes"]["all"], &v["scopes"]["reachable"]);
    out.push_str(&format!("| positions | {} | {} |\n", n(&a["positions"]), n(&r["positions"])));
    for c in ["terminal", "solo_win", "spoiler_draw", "kingmaker", "other"] {
        out.push_str(&format!("| category {c} | {} | {} |\n", n(&a["categories"][c]), n(&r["categories"][c])));
    }
    for p in ["A", "B", "C"] {
        for k in ["win", "loss", "draw"] {
            out.push_str(&format!("| solo({p}) {k} | {} | {} |\n", n(&a["solo"][p][k]), n(&r["solo"][p][k])));
        }
    }
    for e in ["A>B", "A>C", "B>A", "B>C", "C>A", "C>B"] {
        out.push_str(&format!("| enable({e}) forced | {} | {} |\n", n(&a["enable"][e]), n(&r["enable"][e])));
    }
    out.push_str(&format!(
        "\nIllegal placements {}; positions up to rotation {}; non-terminal positions without a move {}.\n\n",
        n(&v["illegal"]),
        n(&v["canonical_placements"]),
        n(&v["no_move_positions"])
    ));
    let s = &v["start"];
    out.push_str(&format!(
        "Start `{}`: category **{}**; solo A/B/C {}/{}/{}; enable forced: {}.\n\n",
        s["position"].as_str().unwrap_or("?"),
        s["category"].as_str().unwrap_or("?"),
        s["solo"]["A"].as_str().unwrap_or("?"),
        s["solo"]["B"].as_str().unwrap_or("?"),
        s["solo"]["C"].as_str().unwrap_or("?"),
        s["enable"]
            .as_object()
            .map(|m| m
                .iter()
                .filter(|(_, b)| b.as_bool() == Some(true))
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    ));
    out.push_str("| layer | rounds | decided per round (round 0 = terminal) | seconds |\n|---|---:|---|---:|\n");
    for l in v["layers"].as_array().into_iter().flatten() {
        let per: Vec<String> = l["decided_per_round"].as_array().into_iter().flatten().map(n).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} |\n",
            l["question"].as_str().unwrap_or("?"),
            l["rounds"],
            per.join(" "),
            l["seconds"].as_f64().unwrap_or(0.0)
        ));
    }
    out.push_str("\n| depth from the start | new positions | categories |\n|---:|---:|---|\n");
    for d in v["bfs_from_start"].as_array().into_iter().flatten() {
        let cats: Vec<String> = d["categories"]
            .as_object()
            .map(|m| m.iter().filter(|(_, c)| c.as_u64() != Some(0)).map(|(k, c)| format!("{k} {}", n(c))).collect())
            .unwrap_or_default();
        out.push_str(&format!("| {} | {} | {} |\n", d["depth"], n(&d["new"]), cats.join(", ")));
    }
    out.push_str(&crate::report::tablebase_table(v));
    out
}
