//! `coordinator explore`: breadth-first search from the start, new positions
//! per depth (and their categories when the plan's tablebases exist).

use super::CliError;

use super::{load_plan, not_peg};
use retro_games::cc3::Cc3;
use retro_results::cc3::{analysis, summary};
use std::path::PathBuf;

/// Runs `explore`.
pub fn run(
    plan: Option<PathBuf>,
    depth: Option<u32>,
    tablebase: Option<PathBuf>,
    threads: Option<usize>,
    scratch: Option<PathBuf>,
    json: bool,
) -> Result<(), CliError> {
    let plan = not_peg(load_plan(&plan)?)?;
    let threads = match threads {
        Some(0) => return Err("--threads must be at least 1".into()),
        Some(t) => retro_node::bounded_threads(t, "--threads"),
        None => plan.threads(),
    };
    let retro_coordinator::plan::GamePlan::Cc3 { order, objective } = plan.job.game else {
        return Err(format!("plan {}: explore is for three-player (cc3) plans", plan.job.name).into());
    };
    if !objective.is_first_winner() {
        return Err(format!(
            "plan {}: explore searches the first-winner game; a ranked job's summary.json has its own search from the start (bfs_from_start, docs/RANKED.md)",
            plan.job.name
        ).into());
    }
    let game = Cc3::new(order)?;
    if !game.ranker.fits_u64() {
        return Err(format!("order {order} is too large to explore exhaustively").into());
    }
    let dir = tablebase.unwrap_or(plan.output.dir.clone());
    let manifest_path = plan.output.checkpoints.join("coordinator.json");
    let layers = match retro_coordinator::manifest::Manifest::load(
        &manifest_path,
        &plan.job.name,
        &plan.hash(),
        retro_games::cc3::RANK_ORDER,
    ) {
        Ok(Some(m)) if dir.join("summary.json").exists() => Some(summary::load_layers(&game, &dir, &m.solved())?),
        _ => None,
    };
    let reach = analysis::explore(&game, layers.as_ref(), depth, threads, scratch.as_deref())?;
    if json {
        let v = serde_json::json!({ "positions": game.ranker.positions() as u64, "depths": reach.depths,
            "categories_from": layers.as_ref().map(|_| dir.display().to_string()) });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for d in &reach.depths {
            let cats = d
                .categories
                .as_ref()
                .map(|c| {
                    c.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
                })
                .unwrap_or_default();
            println!("depth {:>3}: {:>12} new  {cats}", d.depth, d.new);
        }
    }
    Ok(())
}
