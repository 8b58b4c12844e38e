//! `coordinator kingmaking`: how the motive to finish second changes
//! kingmaking and spoiling, from a first-winner job's tablebases and the
//! ranked job's of the same star (docs/RANKED.md gives the definitions).

use retro_results::cc3::kingmaking::{self, Kingmaking, Scope};
use retro_results::report::thousands;
use std::path::Path;

/// Runs the analysis and prints it (JSON with `json`).
pub fn run(first_winner: &Path, ranked: &Path, threads: Option<usize>, json: bool) -> Result<(), String> {
    let threads = retro_common::bounded_threads(threads.unwrap_or(0), "--threads");
    let started = std::time::Instant::now();
    let layers = kingmaking::Layers::open(first_winner, ranked).map_err(|e| e.to_string())?;
    let result = kingmaking::analyse(&layers, threads);
    tracing::info!("analysed in {:.1}s", started.elapsed().as_secs_f64());
    if json {
        println!("{}", serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?);
    } else {
        print!("{}", table(&result));
    }
    Ok(())
}

/// The human table: one column per scope.
fn table(k: &Kingmaking) -> String {
    let rows: [(&str, fn(&Scope) -> u64); 19] = [
        ("kingmaker positions", |s| s.kingmaker_positions),
        ("  the mover can hand the win to either other", |s| s.kingmaker.positions),
        ("  the mover can hand it to one only", |s| s.kingmaker.mover_enables_one),
        ("  of the first: top2(mover) WIN", |s| s.kingmaker.top2_win),
        ("    a move keeps top2 WIN and lets both win", |s| s.kingmaker.keeps_top2_and_both),
        ("    ... lets one only", |s| s.kingmaker.keeps_top2_and_one),
        ("    ... lets neither", |s| s.kingmaker.keeps_top2_and_neither),
        ("  top2(mover) DRAW", |s| s.kingmaker.top2_draw),
        ("  top2(mover) LOSS", |s| s.kingmaker.top2_loss),
        ("  playing for its rank: still two possible winners", |s| s.kingmaker.ranked_two_winners),
        ("    one (decided)", |s| s.kingmaker.ranked_decided),
        ("    none", |s| s.kingmaker.ranked_no_winner),
        ("spoiler-draw positions", |s| s.spoiler_draw_positions),
        ("  the spoiler (solo DRAW) to move", |s| s.spoiler.positions),
        ("    top2(spoiler) WIN / DRAW / LOSS: WIN", |s| s.spoiler.top2_win),
        ("    DRAW", |s| s.spoiler.top2_draw),
        ("    LOSS", |s| s.spoiler.top2_loss),
        ("  playing for its rank, keeps the draw", |s| s.spoiler.keeps_draw),
        ("    loses it (of which top2 WIN)", |s| s.spoiler.loses_draw),
    ];
    let mut out = format!("order {}{:>44}{:>16}\n", k.order, "all", "reachable");
    for (name, f) in rows {
        out.push_str(&format!("{name:<52}{:>16}{:>16}\n", thousands(f(&k.all)), thousands(f(&k.reachable))));
    }
    out.push_str(&format!(
        "{:<52}{:>16}{:>16}\n",
        "      (of which top2 WIN)",
        thousands(k.all.spoiler.loses_draw_top2_win),
        thousands(k.reachable.spoiler.loses_draw_top2_win)
    ));
    out
}
