//! Exact sizes of a job's position space and what solving it costs in memory
//! and disk, for any star order (u128 arithmetic; stage 3 and the standard
//! board do not fit a u64 rank).

use crate::ResultsError;
use retro_games::GameKind;
use retro_games::RetroGame;
use retro_games::cc2::{Cc2, Folding};
use retro_games::cc3::Cc3;
use serde::Serialize;

/// Sizes for one plan.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Game.
    pub game: GameKind,
    /// Star order (`cc3`; 0 for `cc2`).
    pub order: u32,
    /// Cells on the board.
    pub cells: usize,
    /// Pieces per player.
    pub pieces_each: usize,
    /// Lane-restricted positions (placements times the player to move).
    pub positions: u128,
    /// `cc3`: positions up to the 120-degree rotation (which acts without fixed
    /// points); `cc2`: positions up to the symmetries the plan folds by (the
    /// stored ranks).
    pub canonical_placements: u128,
    /// Ranks the solver stores, one state byte each while solving: `cc3`
    /// every position; `cc2` the positions folded by the plan's colour and
    /// mirror symmetries.
    pub stored: u128,
    /// True when ranks fit in u64 and the plan can be solved.
    pub solvable: bool,
    /// Computed layers.
    pub layers: usize,
    /// Bytes of state per layer while solving (one byte per stored rank).
    pub bytes_per_layer_solving: u128,
    /// Bytes of move counts, on disk beside the state, once per job (one byte
    /// per stored rank).
    pub bytes_move_counts: u128,
    /// Bytes per layer in the tablebase before compression (two bits per stored rank).
    pub bytes_per_layer_tablebase: u128,
    /// Tablebase bytes of all layers before compression.
    pub bytes_tablebases: u128,
    /// Shards in the plan.
    pub shards: u32,
    /// Stored ranks per shard (state bytes a worker maps per shard).
    pub positions_per_shard: u128,
}

/// What an estimate is made of: the game and its size, and how the job
/// cuts it.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// Game (`cc3` or `cc2`).
    pub game: GameKind,
    /// Star order (`cc3`).
    pub order: u32,
    /// Board size, m of m x m (`cc2`).
    pub size: u32,
    /// Pieces per player (`cc2`).
    pub pieces: u32,
    /// The symmetries the plan folds the rank space by (`cc2`).
    pub folding: Folding,
    /// Layers the job computes.
    pub layers: usize,
    /// Shards the rank space is cut into.
    pub shards: u32,
    /// Positions per block.
    pub block_positions: u64,
}

/// Computes the estimate of a job.
pub fn estimate(job: &Job) -> Result<Estimate, ResultsError> {
    let unsupported = |e: &dyn std::fmt::Display| ResultsError::Unsupported(e.to_string());
    let (positions, stored, cells, pieces_each, canonical, solvable) = match job.game {
        GameKind::Cc2 => {
            let all = Cc2::new(job.size, job.pieces).map_err(|e| unsupported(&e))?.position_count() as u128;
            let g = Cc2::with_folding(job.size, job.pieces, job.folding).map_err(|e| unsupported(&e))?;
            let stored = g.position_count() as u128;
            (all, stored, g.board.cells, g.board.pieces as usize, stored, true)
        }
        GameKind::Cc3 => {
            let g = Cc3::new(job.order).map_err(|e| unsupported(&e))?;
            let n = g.ranker.positions();
            (n, n, g.star.cells(), g.star.k, n / 3, g.ranker.fits_u64())
        }
        other => return Err(ResultsError::Unsupported(format!("no size estimate for {other} jobs"))),
    };
    let layers = job.layers;
    let per_layer_tb = stored.div_ceil(4);
    let block = (job.block_positions as u128).max(1);
    let blocks = stored.div_ceil(block);
    let shards = (job.shards as u128).max(1);
    let positions_per_shard = blocks.div_ceil(shards) * block;
    Ok(Estimate {
        game: job.game,
        order: job.order,
        cells,
        pieces_each,
        positions,
        canonical_placements: canonical,
        stored,
        solvable,
        layers,
        bytes_per_layer_solving: stored,
        bytes_move_counts: stored,
        bytes_per_layer_tablebase: per_layer_tb,
        bytes_tablebases: per_layer_tb * layers as u128,
        shards: job.shards,
        positions_per_shard: positions_per_shard.min(stored),
    })
}

/// A readable size.
pub fn bytes_human(b: u128) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u < units.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.2} {}", units[u])
}
