//! `coordinator kingmaking`: how the motive to finish second changes
//! kingmaking and spoiling, from a first-winner job's tablebases and the
//! ranked job's of the same star (docs/RANKED.md gives the definitions).

use super::CliError;

use retro_results::cc3::kingmaking::{self, Kingmaking, Scope};
use retro_results::report::thousands;
use std::path::Path;

/// Runs the analysis and prints it (JSON with `json`).
pub fn run(
    first_winner: &Path,
    ranked: &Path,
    sample: Option<u64>,
    threads: Option<usize>,
    json: bool,
) -> Result<(), CliError> {
    let threads = retro_node::bounded_threads(threads.unwrap_or(0), "--threads");
    if sample == Some(0) {
        return Err("--sample must draw at least one position".into());
    }
    let started = std::time::Instant::now();
    let layers = kingmaking::Layers::open(first_winner, ranked)?;
    tracing::info!("read the four layers in {:.1}s", started.elapsed().as_secs_f64());
    let result = match sample {
        Some(n) => kingmaking::analyse_sample_and_spoilers(&layers, n, SAMPLE_SEED, threads),
        None => kingmaking::analyse(&layers, threads),
    };
    tracing::info!("analysed in {:.1}s", started.elapsed().as_secs_f64());
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", table(&result));
    }
    Ok(())
}

/// The seed of `--sample` (fixed: the same command draws the same ranks).
const SAMPLE_SEED: u64 = 0x6b69_6e67_6d61_6b65;

/// The human table: one column per scope (for a sample, the estimate over
/// every position with its 95 % interval beside the sample's own count).
fn table(k: &Kingmaking) -> String {
    if let Some(sample) = &k.sample {
        return sample_table(k, sample);
    }
    let reachable = k.reachable.unwrap_or_default();
    let mut out = format!("order {}{:>44}{:>16}\n", k.order, "all", "reachable");
    for (name, f) in ROWS {
        out.push_str(&format!("{name:<52}{:>16}{:>16}\n", thousands(f(&k.all)), thousands(f(&reachable))));
    }
    out
}

/// One row of the table: its label and the count it shows.
type Row = (&'static str, fn(&Scope) -> u64);

/// The table's rows.
const ROWS: [Row; 20] = [
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
    ("    top2(spoiler) WIN", |s| s.spoiler.top2_win),
    ("    top2(spoiler) DRAW", |s| s.spoiler.top2_draw),
    ("    top2(spoiler) LOSS", |s| s.spoiler.top2_loss),
    ("  playing for its rank, keeps the draw", |s| s.spoiler.keeps_draw),
    ("  ... loses it", |s| s.spoiler.loses_draw),
    ("    of which top2(spoiler) WIN", |s| s.spoiler.loses_draw_top2_win),
];

fn sample_table(k: &Kingmaking, sample: &kingmaking::Sample) -> String {
    let mut out = format!(
        "order {}: {} ranks drawn at random of {} (seed {:#x})\n{:<52}{:>12}{:>22}\n",
        k.order,
        thousands(sample.drawn),
        thousands(sample.of),
        sample.seed,
        "",
        "in sample",
        "estimate, all ranks"
    );
    for (name, f) in ROWS {
        let c = f(&k.all);
        let (est, half) = sample.estimate(c);
        out.push_str(&format!("{name:<52}{:>12}{:>22}\n", thousands(c), format!("{est:.3e} ± {half:.1e}")));
    }
    if let Some(exact) = &k.spoilers_exact {
        out.push_str("spoiler-draw positions of every rank, counted exactly:\n");
        let scope =
            Scope { spoiler_draw_positions: exact.spoiler_draw_positions, spoiler: exact.spoiler, ..Scope::default() };
        for (name, f) in &ROWS[SPOILER_ROWS..] {
            out.push_str(&format!("{name:<52}{:>34}\n", thousands(f(&scope))));
        }
    }
    out
}

/// Where [`ROWS`]'s spoiler rows start.
const SPOILER_ROWS: usize = 12;
