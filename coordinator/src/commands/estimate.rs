//! `coordinator estimate`: exact position counts and the memory and disk a
//! plan needs.

use super::CliError;

use super::{load_plan, not_peg};
use retro_games::GameKind;
use retro_results::estimate::{Job, bytes_human, estimate};
use std::path::PathBuf;

/// Runs `estimate` on the plan at `plan` (the built-in one when `None`).
pub fn run(plan: &Option<PathBuf>, json: bool) -> Result<(), CliError> {
    let p = not_peg(load_plan(plan)?)?;
    let spec = retro_coordinator::job::job_spec(&p);
    let e = estimate(&Job {
        game: spec.game,
        order: spec.order,
        size: spec.size,
        pieces: spec.pieces,
        folding: spec.folding(),
        layers: p.job.questions.len(),
        shards: p.shards.count,
        block_positions: p.shards.block_positions,
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        let size = match e.game {
            GameKind::Cc2 => format!("{} x {}", spec.size, spec.size),
            _ => format!("order {}", e.order),
        };
        println!("{} {size}: {} cells, {} pieces each", e.game, e.cells, e.pieces_each);
        println!("positions            {}", e.positions);
        println!("canonical placements {}", e.canonical_placements);
        println!("stored ranks         {} (one state byte each while solving)", e.stored);
        println!(
            "per layer: {} while solving, {} as a 2-bit tablebase (before compression); {} layers",
            bytes_human(e.bytes_per_layer_solving),
            bytes_human(e.bytes_per_layer_tablebase),
            e.layers
        );
        println!("move counts on disk, once per job: {}", bytes_human(e.bytes_move_counts));
        println!("solvable with u64 ranks: {}", if e.solvable { "yes" } else { "no (estimate only)" });
    }
    Ok(())
}
